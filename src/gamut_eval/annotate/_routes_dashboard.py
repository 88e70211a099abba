"""The dashboard: status per image, work per annotator, inter-annotator agreement."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from gamut_eval.annotate._dashboard import agreement, annotator_work, image_page, totals
from gamut_eval.annotate._questions import ADJUDICATORS, adjudication_queue
from gamut_eval.annotate._rounds import ImageStatus
from gamut_eval.annotate._web import DbSession, Who, render

__all__ = ["router"]

router = APIRouter()


@router.get("/")
def dashboard(
    request: Request,
    *,
    image_status: str = "all",
    page: str = "1",
    session: DbSession,
    who: Who,
) -> Response:
    """Where the work stands; images can be filtered by status, a page at a time."""
    statuses = [s.value for s in ImageStatus]
    if image_status not in statuses:
        image_status = "all"
    number = int(page) if page.isdigit() and len(page) < 9 else 1
    images = image_page(session, None if image_status == "all" else image_status, number)
    context = {
        "images": images,
        "image_status": image_status,
        "statuses": statuses,
        "work": annotator_work(session),
        "agreement": agreement(session),
        "totals": totals(session),
        "waiting": len(adjudication_queue(session)) if who.user.role in ADJUDICATORS else None,
    }
    return render(request, "dashboard.html", context, who=who)
