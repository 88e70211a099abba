"""People's verdicts for calibrated scores: the answers of a calibration sample imported
from a run folder, each person's verdicts on their checks, and the verdict file
``gamut calibrate --with`` reads (docs/judge-quality.md, calibrated scores).

An answer is a labelling task per person: each labeller has their own queue, and their
verdicts on one answer are one row (check id -> verdict), completed once every check has
one. The export takes, for each answer, one complete labelling (one person's, or the first
completed when several people labelled it), so the file has one judge, as calibration
requires.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from gamut_eval._files import atomic_writer
from gamut_eval.annotate._db import (
    AnswerLabel,
    Database,
    Image,
    LabelAnswer,
    LabelQuestion,
    User,
    dumps,
    utc_now,
)
from gamut_eval.annotate._errors import FormError, NotFound
from gamut_eval.annotate._io import FileSummary, _find_image
from gamut_eval.dataset import load_dataset
from gamut_eval.errors import InputError
from gamut_eval.responses import check_responses, iter_responses
from gamut_eval.rubric import Check, Checklist
from gamut_eval.scoring import Verdict

VERDICTS: tuple[str, ...] = tuple(v.value for v in Verdict)
"""The four verdicts, in the order of the page's radio buttons (keys 1 to 4)."""
NOTE_MAX = 4000


@dataclass
class AnswerImport:
    """What ``import_answers`` did; ``describe()`` is what the command prints."""

    run: Path
    questions: int = 0
    answers_new: int = 0
    answers_present: int = 0

    def describe(self) -> str:
        return (
            f"{self.run}: {self.answers_new + self.answers_present} answers to "
            f"{self.questions} sampled questions ({self.answers_new} new, "
            f"{self.answers_present} already imported)"
        )


def _read_sample(path: Path, known: set[str], dataset: Path) -> dict[str, int]:
    """The question ids of a sample list (one a line), each checked against the dataset,
    with the line each is first on."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read the sample list ({exc})") from None
    ids: dict[str, int] = {}
    for number, line in enumerate(lines, 1):
        question = line.strip()
        if not question:
            continue
        if question not in known:
            raise InputError(
                f"{path}:{number}: question id {question!r} is not in the dataset {dataset}"
            )
        ids.setdefault(question, number)
    if not ids:
        raise InputError(f"{path}: the sample list has no question ids")
    return ids


def _run_dataset(run: Path, dataset: Path | None) -> Path:
    """The dataset the run used (``run.json``), unless one is given."""
    if dataset is not None:
        return dataset
    manifest = run / "run.json"
    try:
        recorded = json.loads(manifest.read_text(encoding="utf-8")).get("dataset")
    except (OSError, ValueError, AttributeError):
        recorded = None
    if not isinstance(recorded, str) or not recorded:
        raise InputError(
            f"{manifest}: records no dataset (or cannot be read); give the run's dataset",
            setting="dataset",
        )
    return Path(recorded)


def import_answers(
    db: Database, run: str | Path, sample: str | Path, dataset: str | Path | None = None
) -> AnswerImport:
    """Import every answer (all models and settings) of ``run`` to the questions listed in
    ``sample`` (as ``gamut calibration-sample`` writes it), with each question's checklist
    from ``dataset`` (default: the one ``run.json`` records), for people to label.

    Everything is checked before anything is written; an answer imported before must be
    the same (a database labels one run's answers)."""
    run, sample = Path(run), Path(sample)
    responses = run / "responses.jsonl"
    if not responses.is_file() or responses.stat().st_size == 0:
        raise InputError(f"{run}: the run folder has no answers ({responses.name} is missing)")
    data_path = _run_dataset(run, Path(dataset) if dataset is not None else None)
    data = load_dataset(data_path)
    records = data.by_id()
    wanted = _read_sample(sample, set(records), data_path)
    counts = check_responses(responses, set(records))
    if not sum(counts.values()):
        raise InputError(f"{responses}: the run folder has no answers")
    for question, line in wanted.items():
        if not counts.get(question):
            raise InputError(
                f"{sample}:{line}: question {question!r} has no answers in {responses}"
            )
    rows: dict[str, list[tuple[str, str, str, str]]] = {q: [] for q in wanted}
    for _, row in iter_responses(responses):
        if row.question_id in wanted:
            asked = records[row.question_id].question_for(row.setting)
            rows[row.question_id].append((row.model, row.setting, asked, row.response))
    summary = AnswerImport(run, questions=len(wanted))
    with db.write() as session, session.begin():
        for question_id in wanted:
            record = records[question_id]
            checklist = dumps(record.effective_checklist().model_dump(mode="json"))
            stored = _label_question(session, data.image_path(record), question_id, checklist)
            stored.dataset = stored.dataset or str(data.path)
            for answer in sorted(rows[question_id]):
                _store_answer(session, stored, answer, run, summary)
    return summary


def _label_question(
    session: Session, image: Path | None, question_id: str, checklist: str
) -> LabelQuestion:
    found = session.scalar(select(LabelQuestion).where(LabelQuestion.question_id == question_id))
    if found is not None:
        if found.checklist != checklist:
            raise InputError(
                f"question {question_id!r} was imported with another checklist; label a "
                "different dataset in another database",
                setting="db",
            )
        return found
    image_id = None
    if image is not None:
        image_id = _find_image(session, None, image, FileSummary(image), str(image)).id
    found = LabelQuestion(
        question_id=question_id,
        image_id=image_id,
        checklist=checklist,
        dataset="",
        created_at=utc_now(),
    )
    session.add(found)
    session.flush()
    return found


def _store_answer(
    session: Session,
    question: LabelQuestion,
    answer: tuple[str, str, str, str],
    run: Path,
    summary: AnswerImport,
) -> None:
    model, setting, asked, response = answer
    found = session.scalar(
        select(LabelAnswer).where(
            LabelAnswer.question_id == question.id,
            LabelAnswer.model == model,
            LabelAnswer.setting == setting,
        )
    )
    if found is None:
        session.add(
            LabelAnswer(
                question_id=question.id,
                model=model,
                setting=setting,
                asked=asked,
                response=response,
                run=str(run),
                created_at=utc_now(),
            )
        )
        summary.answers_new += 1
    elif found.response != response:
        raise InputError(
            f"{run}: the answer of {model} ({setting}) to {question.question_id!r} differs from "
            f"the one imported from {found.run}; label another run in another database",
            setting="db",
        )
    else:
        summary.answers_present += 1


def _checks(question: LabelQuestion) -> list[Check]:
    return list(Checklist.model_validate_json(question.checklist).checks)


def _verdicts_of(label: AnswerLabel | None) -> dict[str, str]:
    return dict(json.loads(label.verdicts)) if label is not None else {}


def _queue(session: Session, user: User) -> tuple[set[int], list[int], list[int]]:
    """The answers ``user`` has given every check a verdict, every answer, and the answers
    still open to them (both in order)."""
    done = set(
        session.scalars(
            select(AnswerLabel.answer_id).where(
                AnswerLabel.user_id == user.id, AnswerLabel.completed_at.is_not(None)
            )
        )
    )
    ids = list(session.scalars(select(LabelAnswer.id).order_by(LabelAnswer.id)))
    return done, ids, [i for i in ids if i not in done]


def _answer(
    session: Session, answer_id: int, user: User
) -> tuple[LabelAnswer, LabelQuestion, AnswerLabel | None]:
    """One answer, its question and ``user``'s labelling of it (None: not begun)."""
    answer = session.get(LabelAnswer, answer_id)
    if answer is None:
        raise NotFound("There is no answer with this number.")
    question = session.get(LabelQuestion, answer.question_id)
    assert question is not None  # a foreign key
    label = session.scalar(
        select(AnswerLabel).where(
            AnswerLabel.answer_id == answer.id, AnswerLabel.user_id == user.id
        )
    )
    return answer, question, label


def answer_count(session: Session) -> int:
    """How many answers were imported for labelling."""
    return session.scalar(select(func.count(LabelAnswer.id))) or 0


def next_unlabelled(session: Session, user: User, after: int = 0) -> int | None:
    """The first answer after ``after`` that ``user`` has not labelled whole, else the first
    one before it (the queue wraps around); None when every answer is labelled."""
    open_ids = _queue(session, user)[2]
    later = [i for i in open_ids if i > after]
    return later[0] if later else (open_ids[0] if open_ids else None)


def _labellers(session: Session) -> list[tuple[str, int, int]]:
    """Each labeller's name, answers labelled whole, and answers begun."""
    rows = session.execute(
        select(User.name, func.count(AnswerLabel.completed_at), func.count(AnswerLabel.id))
        .join(User, User.id == AnswerLabel.user_id)
        .group_by(User.name)
        .order_by(User.name)
    ).all()
    return [(name, done, begun) for name, done, begun in rows]


def label_context(session: Session, answer_id: int, user: User) -> dict[str, Any]:
    """Everything the labelling page of one answer renders for ``user``."""
    answer, question, label = _answer(session, answer_id, user)
    verdicts = _verdicts_of(label)
    done, ids, open_ids = _queue(session, user)
    siblings = list(
        session.scalars(
            select(LabelAnswer.id)
            .where(LabelAnswer.question_id == question.id)
            .order_by(LabelAnswer.id)
        )
    )
    return {
        "answer": answer,
        "question": question,
        "image": session.get(Image, question.image_id) if question.image_id else None,
        "checks": [(c, verdicts.get(c.id, "")) for c in _checks(question)],
        "verdicts": VERDICTS,
        "note": label.note if label is not None else "",
        "labelled": len(done),
        "total": len(ids),
        "complete": answer.id in done,
        "previous": max((i for i in open_ids if i < answer.id), default=None),
        "next": min((i for i in open_ids if i > answer.id), default=None),
        "of_question": (siblings.index(answer.id) + 1, len(siblings)),
        "labellers": _labellers(session),
    }


def save_label(session: Session, answer_id: int, user: User, form: Mapping[str, str]) -> bool:
    """Save ``user``'s verdicts on one answer from the form (``verdict-<i>`` for the i-th
    check, ``note``); returns whether every check now has a verdict. A check left without
    one keeps none; an unknown verdict is refused."""
    answer, question, label = _answer(session, answer_id, user)
    checks = _checks(question)
    verdicts: dict[str, str] = {}
    problems = []
    for index, check in enumerate(checks):
        value = form.get(f"verdict-{index}", "")
        if value and value not in VERDICTS:
            problems.append(f"check {index + 1}: {value[:40]!r} is not a verdict")
        elif value:
            verdicts[check.id] = value
    note = form.get("note", "").strip()
    if len(note) > NOTE_MAX:
        problems.append(f"the note is longer than {NOTE_MAX} characters")
    if problems:
        raise FormError(problems)
    complete = len(verdicts) == len(checks)
    now = utc_now()
    if label is None:
        label = AnswerLabel(answer_id=answer.id, user_id=user.id, created_at=now)
        session.add(label)
    label.verdicts = dumps(verdicts)
    label.note = note
    label.updated_at = now
    if not complete:
        label.completed_at = None
    elif label.completed_at is None:
        label.completed_at = now
    return complete


@dataclass
class LabelExport:
    """What ``export_labels`` wrote; ``describe()`` is what the command prints."""

    path: Path
    judge: str
    answers: int = 0
    rows: int = 0
    left_out: int = 0
    several: int = 0
    labellers: set[str] = field(default_factory=set)

    def describe(self) -> str:
        text = (
            f"wrote {self.path}: {self.rows} verdicts on {self.answers} answers (judge "
            f"{self.judge!r}; labelled by {', '.join(sorted(self.labellers))}); "
            f"{self.left_out} answers left out (not every check labelled)"
        )
        if self.several:
            text += (
                f"; {self.several} answers labelled whole by several people: the first "
                "completed labelling of each was exported (name a labeller to export one person's)"
            )
        return text


def export_labels(
    db: Database, out: str | Path, *, judge: str = "people", labeller: str | None = None
) -> LabelExport:
    """Write the verdict rows (``question_id``, ``model``, ``setting``, ``judge``,
    ``check_id``, ``verdict``, and ``labeller``) of every answer whose checks are all
    labelled: ``labeller``'s labels only (``judge`` is then their name unless given), else
    for each answer the first labelling completed. Refuses to write an empty file."""
    out = Path(out)
    summary = LabelExport(out, labeller if labeller and judge == "people" else judge)
    with db.read() as session, session.begin():
        query = (
            select(AnswerLabel, User.name)
            .join(User, User.id == AnswerLabel.user_id)
            .where(AnswerLabel.completed_at.is_not(None))
            .order_by(AnswerLabel.completed_at, AnswerLabel.id)
        )
        if labeller is not None:
            if session.scalar(select(User.id).where(User.name == labeller)) is None:
                raise InputError(f"labeller {labeller!r}: no such user", setting="labeller")
            query = query.where(User.name == labeller)
        chosen: dict[int, tuple[AnswerLabel, str]] = {}
        for label, name in session.execute(query).all():
            if label.answer_id in chosen:
                summary.several += 1
                continue
            chosen[label.answer_id] = (label, name)
        answers = session.execute(
            select(LabelAnswer, LabelQuestion)
            .join(LabelQuestion, LabelQuestion.id == LabelAnswer.question_id)
            .order_by(LabelAnswer.id)
        ).all()
        lines = []
        for answer, question in answers:
            if answer.id not in chosen:
                summary.left_out += 1
                continue
            label, name = chosen[answer.id]
            verdicts = _verdicts_of(label)
            summary.answers += 1
            summary.labellers.add(name)
            for check in _checks(question):
                row = {
                    "question_id": question.question_id,
                    "model": answer.model,
                    "setting": answer.setting,
                    "judge": summary.judge,
                    "check_id": check.id,
                    "verdict": verdicts[check.id],
                    "labeller": name,
                }
                lines.append(json.dumps(row, ensure_ascii=False) + "\n")
    if not lines:
        raise InputError(
            f"no answer has all its checks labelled yet ({summary.left_out} answers "
            f"imported); nothing was written to {out}"
        )
    summary.rows = len(lines)
    try:
        with atomic_writer(out) as handle:
            handle.write("".join(lines))
    except OSError as exc:
        raise InputError(f"{out}: cannot write the labels: {exc.strerror}") from None
    return summary
