"""The dashboard: status per image, work per annotator, inter-annotator agreement."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from gamut_eval.annotate._dashboard import agreement, annotator_work, image_rows, totals
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
    session: DbSession,
    who: Who,
) -> Response:
    """Where the work stands; images can be filtered by status."""
    images = image_rows(session)
    statuses = [s.value for s in ImageStatus]
    if image_status in statuses:
        images = [i for i in images if i.status.value == image_status]
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
