"""The pages of the app's work, on one router: the dashboard and the question rounds (the
review queue, a question's page, reviews and adjudication), rubric revision (the list, the
editor with its item forms, upstream corrections) and labelling (``_labels``).

The dashboard shows status per image, work per annotator and agreement (Cohen's kappa).
Agreement is measured on the first two reviews of every question that has them, before
any adjudication: rater A is whoever reviewed first, rater B second (overall), and per pair
of annotators the pair's own labels. Only aggregates are shown, so the dashboard never
reveals a pending question's first decision to its second reviewer.

A meta-rubric item is edited through a form of its type, instead of as JSON. The form has
one field per field of the item (statement, name, entity, relation, thresholds...), the
item's citations as a picker of the rubric's evidence ids, and its list elements, steps,
aspects and nested insights as numbered rows (``el-0-text``, ``el-0-cites``,
``mi-0-statement``...): the page adds, removes and reorders rows and renumbers them;
without script a blank row is there to add one. ``item_from_form`` turns the fields back
into the item's JSON object, which is validated with the whole meta-rubric as any item
edit is (``_rubrics.set_item``); blank rows are left out.

Each group of pages says what was just done with a fixed message (its ``_..._DONE``) picked
by a query parameter: request text is never echoed into a page.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import RedirectResponse, Response
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from gamut_eval.analysis import accuracy, cohen_kappa, confusion_matrix
from gamut_eval.annotate._checklists import (
    CheckConflict,
    MergeConflict,
    NewCheckRow,
    diff_checklists,
    numbered,
    parse_checklist_form,
)
from gamut_eval.annotate._db import (
    Decision,
    Image,
    Question,
    QuestionStatus,
    Review,
    Rubric,
    RubricEvent,
    User,
)
from gamut_eval.annotate._errors import FormError, PermissionDenied
from gamut_eval.annotate._labels import answer_count, label_context, next_unlabelled, save_label
from gamut_eval.annotate._questions import (
    ADJUDICATORS,
    REVIEWS_PER_QUESTION,
    ImageStatus,
    adjudicate,
    adjudication_queue,
    after_reviews,
    get_question,
    image_status,
    next_for_review,
    reviews_of,
    submit_review,
    votes_of,
)
from gamut_eval.annotate._rubrics import (
    checklist_of,
    compiled_of,
    events_of,
    get_rubric,
    meta_of,
    preview_item,
    save_checklist,
    set_ambiguous,
    set_complete,
    set_dropped,
    set_entity,
    set_item,
    set_question,
    stale_of,
)
from gamut_eval.annotate._web import DbSession, Fields, Viewer, Who, render, submitted
from gamut_eval.rubric import CheckKind, Checklist, Tier

router = APIRouter()


def _suffix(done: str, messages: Mapping[str, str]) -> str:
    """The ``done`` query parameter passed on, when it names one of ``messages``."""
    return f"?done={done}" if done in messages else ""


LIST_FIELD = {
    "strict_list": "items",
    "flexible_list": "options",
    "process": "steps",
    "relationship": "aspects",
}
"""The item field each type keeps its rows in (fact and meta-insight items have none)."""
_WITH_INSIGHTS = ("strict_list", "flexible_list", "process")
_ROW = re.compile(r"^(el|mi)-(\d{1,4})-([a-z]+)$")


def _ids(text: str) -> list[str]:
    """Evidence ids from a comma- or space-separated field."""
    return [part for part in re.split(r"[,\s]+", text.strip()) if part]


def _ints(name: str, text: str) -> list[int]:
    try:
        return [int(part) for part in _ids(text)]
    except ValueError:
        raise FormError([f"{name}: whole numbers separated by commas (found {text!r})"]) from None


def _rows(form: Mapping[str, str], prefix: str) -> list[dict[str, str]]:
    """The numbered rows of ``prefix`` (``el`` or ``mi``), in their numbers' order."""
    rows = numbered(form, _ROW)
    return [rows[key] for key in sorted(rows) if key[0] == prefix]


def _entry(row: Mapping[str, str], key: str, kind: str) -> dict[str, Any] | None:
    """A list element (``key`` ``text``) or a nested insight (``statement``) from its row;
    None for a blank row."""
    value = row.get(key, "").strip()
    if not value:
        return None
    entry: dict[str, Any] = {key: value}
    if key == "statement" and row.get("tier"):
        entry["tier"] = row["tier"]
    if cites := _ids(row.get("cites", "")):
        entry["cites"] = cites
    if key == "text" and kind == "process" and row.get("optional"):
        entry["required"] = False
    return entry


def item_from_form(item_id: str, form: Mapping[str, str]) -> dict[str, Any]:
    """The item's JSON object from the fields of its form."""
    kind = form.get("type", "")
    item: dict[str, Any] = {"id": item_id, "type": kind, "tier": form.get("tier", "")}
    if cites := [key.removeprefix("cite-") for key in form if key.startswith("cite-")]:
        item["cites"] = cites
    if kind in ("fact", "meta_insight"):
        item["statement"] = form.get("statement", "").strip()
        if kind == "meta_insight" and (about := form.get("about", "").strip()):
            item["about"] = about
        return item
    if kind not in LIST_FIELD:
        raise FormError([f"item {item_id}: unknown item type {kind!r}"])
    if kind == "relationship":
        item["entity"] = form.get("entity", "").strip()
        item["relation"] = form.get("relation", "").strip()
    else:
        item["name"] = form.get("name", "").strip()
    rows = [e for row in _rows(form, "el") if (e := _entry(row, "text", kind)) is not None]
    if rows or kind != "relationship":
        item[LIST_FIELD[kind]] = rows
    if kind == "flexible_list":
        item["min_required"] = _ints("at least", form.get("min_required", ""))
        if thresholds := _ints("coverage thresholds", form.get("coverage_thresholds", "")):
            item["coverage_thresholds"] = thresholds
    if kind in _WITH_INSIGHTS:
        insights = [e for row in _rows(form, "mi") if (e := _entry(row, "statement", kind))]
        if insights:
            item["meta_insights"] = insights
    return item


def item_rows(item: Any) -> dict[str, list[dict[str, Any]]]:
    """The rows an item's form shows: its elements (``el``) and nested insights (``mi``),
    each list with one blank row after them, to add one without script."""
    kind = item.type
    elements = [
        {
            "text": element.text,
            "cites": ", ".join(element.cites),
            "optional": kind == "process" and not element.required,
        }
        for element in (getattr(item, LIST_FIELD[kind]) if kind in LIST_FIELD else ())
    ]
    insights = [
        {
            "statement": insight.statement,
            "tier": insight.tier.value if insight.tier else "",
            "cites": ", ".join(insight.cites),
        }
        for insight in getattr(item, "meta_insights", ())
    ]
    blank_element = {"text": "", "cites": "", "optional": False}
    blank_insight = {"statement": "", "tier": "", "cites": ""}
    return {
        "el": [*elements, blank_element] if kind in LIST_FIELD else [],
        "mi": [*insights, blank_insight] if kind in _WITH_INSIGHTS else [],
    }


LABELS = tuple(d.value for d in Decision)


@dataclass(frozen=True)
class ImageRow:
    """One image's questions by status, and the image's own status."""

    id: int
    key: str
    entity: str | None
    status: ImageStatus
    counts: dict[str, int]
    rounds: int


@dataclass(frozen=True)
class WorkRow:
    """What one person has done."""

    name: str
    role: str
    reviews: int
    adjudications: int
    rubric_edits: int


@dataclass(frozen=True)
class PairAgreement:
    """Agreement of two annotators on the questions both reviewed."""

    a: str
    b: str
    n: int
    kappa: float | None


@dataclass(frozen=True)
class Agreement:
    """Agreement between first and second reviews over all doubly-reviewed questions."""

    n: int
    kappa: float | None
    observed: float | None
    matrix: list[list[int]]
    pairs: list[PairAgreement]


PAGE_SIZE = 50
"""Images per page of the dashboard."""


@dataclass(frozen=True)
class ImagePage:
    """One page of the image table: its rows, which page of how many, of how many images."""

    rows: list[ImageRow]
    page: int
    pages: int
    total: int
    first: int
    """1-based position of the page's first image (0 when there is none)."""


def image_page(
    session: Session, status: str | None = None, page: int = 1, size: int = PAGE_SIZE
) -> ImagePage:
    """Images in import order with their question counts by status, filtered by image
    status (None: all), ``size`` to a page. Counts come from one grouped query and only
    the page's image rows are loaded, so a large dataset renders as fast as a small one."""
    counts: dict[int, Counter[str]] = {}
    rounds: dict[int, int] = {}
    grouped = select(
        Question.image_id, Question.status, func.count(Question.id), func.max(Question.round)
    ).group_by(Question.image_id, Question.status)
    for image_id, question_status, n, last in session.execute(grouped):
        counts.setdefault(image_id, Counter())[question_status] = n
        rounds[image_id] = max(rounds.get(image_id, 0), last)
    statuses = {
        image_id: image_status(counts.get(image_id, Counter()).elements())
        for image_id in session.scalars(select(Image.id).order_by(Image.id))
    }
    ids = [i for i, st in statuses.items() if status is None or st.value == status]
    pages = max(1, -(-len(ids) // size))
    page = min(max(page, 1), pages)
    chosen = ids[(page - 1) * size : page * size]
    images = session.scalars(select(Image).where(Image.id.in_(chosen)).order_by(Image.id))
    rows = [
        ImageRow(
            id=image.id,
            key=image.key,
            entity=image.entity,
            status=statuses[image.id],
            counts=dict(counts.get(image.id, Counter())),
            rounds=rounds.get(image.id, 0),
        )
        for image in images
    ]
    first = (page - 1) * size + 1 if rows else 0
    return ImagePage(rows, page, pages, len(ids), first)


def _edits_by(session: Session, column: Any) -> dict[int, int]:
    """People's rubric edits (imports have no user) counted per value of ``column``."""
    query = select(column, func.count(RubricEvent.id)).where(RubricEvent.user_id.is_not(None))
    return dict(session.execute(query.group_by(column)).all())


def annotator_work(session: Session) -> list[WorkRow]:
    """Reviews, adjudications and rubric edits per user, by name."""
    decisions = Counter(
        (user_id, kind) for user_id, kind in session.execute(select(Review.user_id, Review.kind))
    )
    edits = _edits_by(session, RubricEvent.user_id)
    return [
        WorkRow(
            u.name,
            u.role,
            decisions[(u.id, "review")],
            decisions[(u.id, "adjudication")],
            edits.get(u.id, 0),
        )
        for u in session.scalars(select(User).order_by(User.name))
    ]


def _first_two(session: Session) -> list[tuple[tuple[str, str], tuple[str, str]]]:
    """``((name, decision), (name, decision))`` of the first two reviews of each question."""
    rows = session.execute(
        select(Review.question_id, User.name, Review.decision)
        .join(User, User.id == Review.user_id)
        .where(Review.kind == "review")
        .order_by(Review.question_id, Review.created_at, Review.id)
    ).all()
    grouped: dict[int, list[tuple[str, str]]] = {}
    for question_id, name, decision in rows:
        grouped.setdefault(question_id, []).append((name, decision))
    return [(g[0], g[1]) for g in grouped.values() if len(g) >= 2]


def _kappa(a: list[str], b: list[str]) -> float | None:
    return cohen_kappa(a, b) if a else None


def agreement(session: Session) -> Agreement:
    """Cohen's kappa of first vs second reviews, overall and per pair of annotators."""
    pairs = _first_two(session)
    first = [p[0][1] for p in pairs]
    second = [p[1][1] for p in pairs]
    by_pair: dict[tuple[str, str], tuple[list[str], list[str]]] = {}
    for (name_a, dec_a), (name_b, dec_b) in pairs:
        (x, dx), (y, dy) = sorted([(name_a, dec_a), (name_b, dec_b)])
        labels = by_pair.setdefault((x, y), ([], []))
        labels[0].append(dx)
        labels[1].append(dy)
    return Agreement(
        n=len(pairs),
        kappa=_kappa(first, second),
        observed=accuracy(first, second) if pairs else None,
        matrix=confusion_matrix(first, second, LABELS) if pairs else [[0] * 3 for _ in LABELS],
        pairs=[
            PairAgreement(a, b, len(la), _kappa(la, lb))
            for (a, b), (la, lb) in sorted(by_pair.items())
        ],
    )


def totals(session: Session) -> dict[str, Counter[str]]:
    """Questions by status and rubrics by status."""
    questions = select(Question.status, func.count()).group_by(Question.status)
    rubrics = select(Rubric.status, func.count()).group_by(Rubric.status)
    return {
        "questions": Counter(dict(session.execute(questions).all())),
        "rubrics": Counter(dict(session.execute(rubrics).all())),
    }


@router.get("/")
def dashboard(
    request: Request, *, image_status: str = "all", page: str = "1", session: DbSession, who: Who
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


_QUESTION_DONE = {"review": "Your review was saved.", "ruling": "Your ruling was saved."}


@router.get("/review/next")
def review_next(request: Request, *, done: str = "", session: DbSession, who: Who) -> Response:
    """Go to the next question this user should review, or say there is none."""
    question = next_for_review(session, who.user)
    if question is None:
        return render(request, "nothing.html", {"message": _QUESTION_DONE.get(done, "")}, who=who)
    return RedirectResponse(
        f"/questions/{question.id}{_suffix(done, _QUESTION_DONE)}", status_code=303
    )


@dataclass(frozen=True)
class _Access:
    """What the viewer may see and do on one question's page."""

    can_review: bool
    can_rule: bool
    show_reviews: bool


def _access(who: Viewer, question: Question, rows: list[tuple[Review, User]]) -> _Access:
    """Reviewers never see each other's decisions; adjudicators see them once the question
    left review, and rule only on questions they did not review themselves."""
    mine = any(u.id == who.user.id for _, u in rows)
    reviews = sum(r.kind == "review" for r, _ in rows)
    pending = question.status == QuestionStatus.PENDING.value
    judge = who.user.role in ADJUDICATORS and not mine
    return _Access(
        can_review=not mine and pending and reviews < REVIEWS_PER_QUESTION,
        can_rule=judge and question.status == QuestionStatus.ADJUDICATION.value,
        show_reviews=judge and not pending,
    )


def _question_view(
    request: Request, session: Session, who: Viewer, question_id: int, errors: list[str]
) -> Response:
    question = get_question(session, question_id)
    rows = reviews_of(session, question)
    access = _access(who, question, rows)
    reviewed = [r for r, _ in rows if r.kind == "review"]
    revisions = [r.revised_text for r in reviewed if r.revised_text]
    context = {
        "question": question,
        "image": session.get(Image, question.image_id),
        "mine": next((r for r, u in rows if u.id == who.user.id), None),
        "can_review": access.can_review,
        "can_rule": access.can_rule,
        "rows": rows if access.show_reviews else [],
        "sides": sorted({r.decision for r in reviewed}) if access.can_rule else [],
        "reason": after_reviews(votes_of(rows)).reason,
        "draft": revisions[0] if revisions else question.text,
        "child": session.scalar(select(Question).where(Question.parent_id == question.id)),
        "parent": session.get(Question, question.parent_id) if question.parent_id else None,
        "errors": errors,
        "message": _QUESTION_DONE.get(request.query_params.get("done", ""), ""),
        "decisions": list(LABELS),
    }
    return render(request, "question.html", context, who=who, status=422 if errors else 200)


@router.get("/questions/{question_id:row_id}")
def question_page(request: Request, question_id: int, *, session: DbSession, who: Who) -> Response:
    """A candidate question with its image and, when allowed, the review or ruling form."""
    return _question_view(request, session, who, question_id, [])


@router.post("/questions/{question_id:row_id}/review")
def review(
    request: Request,
    question_id: int,
    *,
    decision: Annotated[str, Form()] = "",
    revised_text: Annotated[str, Form()] = "",
    comment: Annotated[str, Form()] = "",
    session: DbSession,
    who: Who,
) -> Response:
    """Submit an independent review, then go on to the next question."""
    return submitted(
        lambda: submit_review(session, question_id, who.user, decision, revised_text, comment),
        lambda _: "/review/next?done=review",
        lambda errors: _question_view(request, session, who, question_id, errors),
    )


@router.get("/adjudication")
def adjudication(request: Request, *, session: DbSession, who: Who) -> Response:
    """Questions whose reviewers disagree."""
    if who.user.role not in ADJUDICATORS:
        raise PermissionDenied("Only adjudicators and admins see the adjudication queue.")
    items = [(q, session.get(Image, q.image_id)) for q in adjudication_queue(session)]
    return render(request, "adjudication.html", {"items": items}, who=who)


@router.post("/questions/{question_id:row_id}/adjudicate")
def rule(
    request: Request,
    question_id: int,
    *,
    version: Annotated[int, Form()],
    decision: Annotated[str, Form()] = "",
    revised_text: Annotated[str, Form()] = "",
    comment: Annotated[str, Form()] = "",
    session: DbSession,
    who: Who,
) -> Response:
    """An adjudicator's ruling, checked against the version the page showed."""
    return submitted(
        lambda: adjudicate(
            session, question_id, who.user, decision, revised_text, comment, version
        ),
        lambda _: f"/questions/{question_id}?done=ruling",
        lambda errors: _question_view(request, session, who, question_id, errors),
    )


NEW_ROWS = 2
"""Blank "add a check" rows in the editor (the page needs no script to add rows)."""


def _rows_from(checklist: Checklist) -> list[dict[str, Any]]:
    return [
        {**c.model_dump(mode="json"), "remove": False, "base_text": c.text, "base_tier": c.tier}
        for c in checklist.checks
    ]


def _base(form: Mapping[str, str], stored: dict[str, Any], check_id: str) -> dict[str, str]:
    """The version of a check the submitted page showed (kept, so saving again still merges)."""
    for key, value in form.items():
        if value == check_id and key.startswith("check-") and key.endswith("-id"):
            prefix = key[: -len("id")]
            if f"{prefix}base-text" in form:
                return {
                    "base_text": form[f"{prefix}base-text"],
                    "base_tier": form.get(f"{prefix}base-tier", ""),
                }
    check = stored.get(check_id)
    return {
        "base_text": check.text if check else "",
        "base_tier": check.tier.value if check else "",
    }


def _rows_from_form(
    checklist: Checklist, form: Mapping[str, str]
) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """The submitted values, so a rejected save shows what the person typed, not the old text."""
    stored = checklist.by_id()
    parsed = parse_checklist_form(form)
    rows = []
    for row in parsed.rows:
        base = (
            stored[row.id].model_dump(mode="json")
            if row.id in stored
            else {"id": row.id, "kind": "", "item": "", "secondary": False, "cites": []}
        )
        rows.append(
            {
                **base,
                "text": row.text,
                "tier": row.tier,
                "remove": row.remove,
                **_base(form, stored, row.id),
            }
        )
    return rows, [asdict(n) for n in parsed.new]


def _event_view(event: RubricEvent) -> dict[str, Any]:
    before = json.loads(event.before) if event.before else None
    after = json.loads(event.after) if event.after else None
    changes = None
    if event.action == "checklist" and before and after:
        changes = diff_checklists(Checklist.model_validate(before), Checklist.model_validate(after))
    return {
        "event": event,
        "changes": changes,
        "before": json.dumps(before, indent=2, ensure_ascii=False) if before is not None else "",
        "after": json.dumps(after, indent=2, ensure_ascii=False) if after is not None else "",
    }


def rubric_queue(session: Session, rubric: Rubric) -> dict[str, Any]:
    """Where the rubric stands in the work: the open rubrics before and after it, how many
    of each round are done, and how many rubrics each reviewer has edited in its round."""
    rows = session.execute(select(Rubric.id, Rubric.status, Rubric.round).order_by(Rubric.id))
    rounds: dict[int, list[int]] = {}
    open_ids = []
    for rubric_id, status, number in rows:
        done_total = rounds.setdefault(number, [0, 0])
        done_total[0] += status != "open"
        done_total[1] += 1
        if status == "open":
            open_ids.append(rubric_id)
    reviewers = session.execute(
        select(User.name, func.count(func.distinct(RubricEvent.rubric_id)))
        .join(User, User.id == RubricEvent.user_id)
        .where(RubricEvent.round == rubric.round)
        .group_by(User.name)
        .order_by(User.name)
    ).all()
    return {
        "previous": max((i for i in open_ids if i < rubric.id), default=None),
        "next": min((i for i in open_ids if i > rubric.id), default=None),
        "open": len(open_ids),
        "position": open_ids.index(rubric.id) + 1 if rubric.id in open_ids else None,
        "rounds": sorted((number, done, total) for number, (done, total) in rounds.items()),
        "reviewers": [(name, edited) for name, edited in reviewers],
    }


def rubric_context(
    session: Session, rubric: Rubric, form: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Everything the rubric page renders; ``form`` re-fills the editor after a rejected save."""
    checklist = checklist_of(rubric)
    compiled = compiled_of(rubric)
    if form is None:
        blank = NewCheckRow("", "", CheckKind.FACT.value, Tier.VALUABLE.value, "")
        rows, new = _rows_from(checklist), [asdict(blank) for _ in range(NEW_ROWS)]
    else:
        rows, new = _rows_from_form(checklist, form)
    meta = meta_of(rubric)
    return {
        "rubric": rubric,
        "meta": meta,
        "image": session.get(Image, rubric.image_id) if rubric.image_id else None,
        "question": session.get(Question, rubric.question_id) if rubric.question_id else None,
        "rows": rows,
        "new_rows": new,
        "diff": diff_checklists(compiled, checklist),
        "counts": checklist.count_by_tier(),
        "events": [_event_view(e) for e in events_of(session, rubric)],
        "tiers": [t.value for t in Tier],
        "kinds": [k.value for k in CheckKind],
        "item_ids": [i.id for i in meta.items],
        "item_forms": [{"item": i, "rows": item_rows(i)} for i in meta.items],
        "evidence_ids": [e.id for e in meta.evidence],
        "compiled_by_item": {
            i.id: [c for c in compiled.checks if c.item == i.id] for i in meta.items
        },
        "queue": rubric_queue(session, rubric),
        "stale": stale_of(session, rubric),
        "comment": (form or {}).get("comment", ""),
        "editor_version": _editor_version(rubric, form),
    }


def _editor_version(rubric: Rubric, form: Mapping[str, str] | None) -> int:
    """The version the editor's rows belong to: a refilled form keeps the one it was
    made at, so saving it again is merged instead of overwriting what changed since."""
    given = (form or {}).get("version", "")
    return int(given) if given.isdigit() and len(given) < 12 else rubric.version


def rubric_list(session: Session, status: str) -> list[dict[str, Any]]:
    """Rubrics with their check counts, edits and last change, for the list page."""
    query = select(Rubric).order_by(Rubric.id)
    if status != "all":
        query = query.where(Rubric.status == status)
    edits = _edits_by(session, RubricEvent.rubric_id)
    out = []
    for rubric in session.scalars(query):
        checklist = checklist_of(rubric)
        diff = diff_checklists(compiled_of(rubric), checklist)
        out.append(
            {
                "rubric": rubric,
                "checks": len(checklist.checks),
                "changed": len(diff.added) + len(diff.removed) + len(diff.changed),
                "edits": edits.get(rubric.id, 0),
            }
        )
    return out


_RUBRIC_DONE = {
    "saved": "The checklist was saved.",
    "unchanged": "Nothing had changed; nothing was saved.",
    "entity": "The entity was corrected; what is made from it was re-derived or marked stale.",
    "question": "The question was reworded; what is made from it was re-derived or marked stale.",
    "item": "The item was saved and the checklist re-compiled from the meta-rubric.",
    "ambiguous": "The ambiguity mark was updated.",
    "drop": "The question was dropped.",
    "restore": "The question was restored.",
    "complete": "This round is marked done for the rubric.",
    "reopen": "The rubric is open for revision again.",
}
_STATUSES = ("open", "done", "dropped", "all")


@router.get("/rubrics")
def rubrics(request: Request, *, status: str = "open", session: DbSession, who: Who) -> Response:
    """Rubrics to revise, filtered by status."""
    status = status if status in _STATUSES else "open"
    context = {"items": rubric_list(session, status), "status": status, "statuses": _STATUSES}
    return render(request, "rubrics.html", context, who=who)


@dataclass(frozen=True)
class _Rubric:
    """What every route of one rubric works with: the request, its session and viewer."""

    request: Request
    session: Session
    who: Viewer
    rubric_id: int

    def page(
        self,
        errors: list[str],
        form: dict[str, str] | None = None,
        conflicts: list[CheckConflict] | None = None,
    ) -> Response:
        """The rubric's page, with ``errors`` (422), the ``conflicts`` of a stale save
        (409), or the message of what was just done."""
        context = rubric_context(self.session, get_rubric(self.session, self.rubric_id), form)
        context["errors"] = errors
        context["conflicts"] = conflicts or []
        context["message"] = _RUBRIC_DONE.get(self.request.query_params.get("done", ""), "")
        status = 409 if conflicts else 422 if errors else 200
        return render(self.request, "rubric.html", context, who=self.who, status=status)

    def done(self, what: str) -> str:
        """The page's address, saying ``what`` was done."""
        return f"/rubrics/{self.rubric_id}?done={what}"

    def act(self, what: str, change: Callable[[], object]) -> Response:
        """``change``, then back to the page saying ``what`` was done (or the page with the
        errors, if the form was refused)."""
        return submitted(change, lambda _: self.done(what), self.page)


def _rubric(request: Request, rubric_id: int, session: DbSession, who: Who) -> _Rubric:
    return _Rubric(request, session, who, rubric_id)


RubricPage = Annotated[_Rubric, Depends(_rubric, scope="function")]
"""A route parameter: the rubric of the path, with the request, session and viewer."""


@router.get("/rubrics/{rubric_id:row_id}")
def rubric_page(at: RubricPage) -> Response:
    """The meta-rubric scaffold beside the editable checklist, its diff and audit trail."""
    return at.page([])


def _version(form: dict[str, str]) -> int:
    try:
        return int(form.get("version", ""))
    except ValueError:
        raise FormError(["the form has no version number; reload the page"]) from None


@router.post("/rubrics/{rubric_id:row_id}/checklist")
def save(*, form: Fields, at: RubricPage) -> Response:
    """Save the edited checklist; from a stale page it is merged check by check, and a
    check changed on both sides shows both versions (409, nothing saved)."""
    try:
        return submitted(
            lambda: save_checklist(at.session, at.rubric_id, at.who.user, form, _version(form)),
            lambda changed: at.done("saved" if changed else "unchanged"),
            lambda errors: at.page(errors, form),
        )
    except MergeConflict as conflict:  # raised before anything was written
        return at.page([str(conflict)], conflict.form, conflict.conflicts)


@router.post("/rubrics/{rubric_id:row_id}/entity")
def entity(
    at: RubricPage,
    *,
    version: Annotated[int, Form()],
    entity: Annotated[str, Form()] = "",
    comment: Annotated[str, Form()] = "",
) -> Response:
    """Upstream correction: the ground-truth entity."""
    return at.act(
        "entity",
        lambda: set_entity(at.session, at.rubric_id, at.who.user, entity, comment, version),
    )


@router.post("/rubrics/{rubric_id:row_id}/question")
def question(
    at: RubricPage,
    *,
    version: Annotated[int, Form()],
    question: Annotated[str, Form()] = "",
    comment: Annotated[str, Form()] = "",
) -> Response:
    """Upstream correction: reword the question."""
    return submitted(
        lambda: set_question(at.session, at.rubric_id, at.who.user, question, comment, version),
        lambda changed: at.done("question" if changed else "unchanged"),
        at.page,
    )


def _item_json(form: Mapping[str, str]) -> str:
    """The edited item as JSON: given as such (``item``), or built from its form's fields."""
    if "item" in form:
        return form["item"]
    return json.dumps(item_from_form(form.get("item_id", ""), form), ensure_ascii=False)


@router.post("/rubrics/{rubric_id:row_id}/item")
def item(*, form: Fields, at: RubricPage) -> Response:
    """Edit one meta-rubric item (through its form, or as JSON in ``item``); the
    checklist is re-compiled from the items."""
    item_id, comment = form.get("item_id", ""), form.get("comment", "")
    return submitted(
        lambda: set_item(
            at.session, at.rubric_id, at.who.user, item_id, _item_json(form), comment,
            _version(form),
        ),
        lambda changed: at.done("item" if changed else "unchanged"),
        at.page,
    )  # fmt: skip


@router.post("/rubrics/{rubric_id:row_id}/item/preview")
def item_preview(*, form: Fields, at: RubricPage) -> Response:
    """The checks an item's form compiles to, as an HTML fragment beside the form (422
    with the problems when it would be refused); nothing is saved."""
    rubric = get_rubric(at.session, at.rubric_id)
    try:
        checks = preview_item(rubric, form.get("item_id", ""), _item_json(form))
    except FormError as exc:
        context: dict[str, Any] = {"checks": [], "problems": exc.messages}
        return render(at.request, "_item_preview.html", context, who=at.who, status=422)
    context = {"checks": checks, "problems": []}
    return render(at.request, "_item_preview.html", context, who=at.who)


@router.post("/rubrics/{rubric_id:row_id}/ambiguous")
def ambiguous(
    at: RubricPage,
    *,
    version: Annotated[int, Form()],
    note: Annotated[str, Form()] = "",
    clear: Annotated[str, Form()] = "",
) -> Response:
    """Mark the question ambiguous with a note, or clear the mark."""
    value = None if clear else note
    return at.act(
        "ambiguous", lambda: set_ambiguous(at.session, at.rubric_id, at.who.user, value, version)
    )


@router.post("/rubrics/{rubric_id:row_id}/drop")
def drop(
    at: RubricPage, *, version: Annotated[int, Form()], reason: Annotated[str, Form()] = ""
) -> Response:
    """Drop the question with a reason (no sound rubric can be made)."""
    return at.act(
        "drop", lambda: set_dropped(at.session, at.rubric_id, at.who.user, reason, version)
    )


@router.post("/rubrics/{rubric_id:row_id}/restore")
def restore(at: RubricPage, *, version: Annotated[int, Form()]) -> Response:
    """Undo a drop."""
    return at.act(
        "restore", lambda: set_dropped(at.session, at.rubric_id, at.who.user, None, version)
    )


@router.post("/rubrics/{rubric_id:row_id}/complete")
def complete(at: RubricPage, *, version: Annotated[int, Form()]) -> Response:
    """Mark this round's revision of the rubric done."""
    return at.act(
        "complete", lambda: set_complete(at.session, at.rubric_id, at.who.user, True, version)
    )


@router.post("/rubrics/{rubric_id:row_id}/reopen")
def reopen(at: RubricPage, *, version: Annotated[int, Form()]) -> Response:
    """Reopen a rubric marked done."""
    return at.act(
        "reopen", lambda: set_complete(at.session, at.rubric_id, at.who.user, False, version)
    )


_LABEL_DONE = {
    "saved": "Your verdicts were saved.",
    "partial": "Saved; some checks have no verdict yet, so this answer is not labelled.",
}


@router.get("/labels")
def labels_next(
    request: Request, *, after: str = "0", done: str = "", session: DbSession, who: Who
) -> Response:
    """Go to this person's next answer without every verdict, or say there is none."""
    start = int(after) if after.isdigit() and len(after) < 12 else 0
    answer = next_unlabelled(session, who.user, start)
    if answer is None:
        context = {"message": _LABEL_DONE.get(done, ""), "answers": answer_count(session)}
        return render(request, "labels_done.html", context, who=who)
    return RedirectResponse(f"/labels/{answer}{_suffix(done, _LABEL_DONE)}", status_code=303)


def _label_view(
    request: Request, session: DbSession, who: Who, answer_id: int, errors: list[str]
) -> Response:
    context = label_context(session, answer_id, who.user)
    context["errors"] = errors
    context["message"] = _LABEL_DONE.get(request.query_params.get("done", ""), "")
    return render(request, "label.html", context, who=who, status=422 if errors else 200)


@router.get("/labels/{answer_id:int}")
def label_page(request: Request, answer_id: int, *, session: DbSession, who: Who) -> Response:
    """One answer: the question (and image), the answer, a verdict for each check."""
    return _label_view(request, session, who, answer_id, [])


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
        lambda errors: _label_view(request, session, who, answer_id, errors),
    )
