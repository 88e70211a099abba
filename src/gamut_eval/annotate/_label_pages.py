"""The labelling pages: people's verdicts on the checks of the answers of a calibration
sample (``_labels``), one answer at a time, with a queue per labeller."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from gamut_eval.annotate._labels import answer_count, label_context, next_unlabelled, save_label
from gamut_eval.annotate._web import DbSession, Fields, Who, render, submitted

router = APIRouter()

_DONE = {
    "saved": "Your verdicts were saved.",
    "partial": "Saved; some checks have no verdict yet, so this answer is not labelled.",
}
"""Fixed messages picked by a query parameter: request text is never echoed into a page."""


def _suffix(done: str) -> str:
    return f"?done={done}" if done in _DONE else ""


@router.get("/labels")
def labels_next(
    request: Request, *, after: str = "0", done: str = "", session: DbSession, who: Who
) -> Response:
    """Go to this person's next answer without every verdict, or say there is none."""
    start = int(after) if after.isdigit() and len(after) < 12 else 0
    answer = next_unlabelled(session, who.user, start)
    if answer is None:
        context = {"message": _DONE.get(done, ""), "answers": answer_count(session)}
        return render(request, "labels_done.html", context, who=who)
    return RedirectResponse(f"/labels/{answer}{_suffix(done)}", status_code=303)


def _page(
    request: Request, session: DbSession, who: Who, answer_id: int, errors: list[str]
) -> Response:
    context = label_context(session, answer_id, who.user)
    context["errors"] = errors
    context["message"] = _DONE.get(request.query_params.get("done", ""), "")
    return render(request, "label.html", context, who=who, status=422 if errors else 200)


@router.get("/labels/{answer_id:int}")
def label_page(request: Request, answer_id: int, *, session: DbSession, who: Who) -> Response:
    """One answer: the question (and image), the answer, a verdict for each check."""
    return _page(request, session, who, answer_id, [])


@router.post("/labels/{answer_id:int}")
def label(
    request: Request, answer_id: int, *, form: Fields, session: DbSession, who: Who
) -> Response:
    """Save this person's verdicts; a whole labelling moves on to their next answer."""
    return submitted(
        lambda: save_label(session, answer_id, who.user, form),
        lambda whole: (
            f"/labels?after={answer_id}&done=saved"
            if whole
            else f"/labels/{answer_id}?done=partial"
        ),
        lambda errors: _page(request, session, who, answer_id, errors),
    )
