"""The data behind the report's drill-down: every question, check, verdict and answer of a run.

Built from the run folder (verdicts.jsonl with the judges' explanations, responses.jsonl,
the dataset): from the run the report was built from, or from the report's run folder.
It is embedded once in the HTML page as plain JSON (``<script type="application/json"
id="gamut-data">``), so other tools can read it too; its shape is documented in
docs/report.md ("The embedded data").

Verdicts are one character per (setting, judge, model, check) of a question, so even a
paper-scale run (4.6 million verdicts) costs about 5 MB. The texts (answers and
explanations) are the heavy part: they are embedded question by question, in question
order, until ``text_budget`` characters are used; the questions past it keep their
verdicts and scores but say that their texts are not in the page.

Question images become small embedded thumbnails (``data:`` URIs). With Pillow installed
an image is downscaled to at most ``SIZE`` pixels on its longer side and saved as JPEG (a
few KB each, so even 1,813 questions add only megabytes). Without Pillow the original file
is embedded when it is small enough, and left out otherwise.
"""

from __future__ import annotations

import base64
import io
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type stubs

from gamut_eval._files import IMAGE_TYPES
from gamut_eval._verdict_table import read_verdict_table
from gamut_eval.analysis._report import Report
from gamut_eval.analysis._rundata import (
    RunData,
    ScoreCube,
    category_codes,
    cube_from_scores,
    load_run_data,
    read_table,
)
from gamut_eval.dataset import Dataset, DatasetRecord
from gamut_eval.errors import InputError
from gamut_eval.rubric import Checklist
from gamut_eval.scoring import Verdict

SIZE = 160
"""Longest side of a thumbnail, in pixels."""
_RAW_LIMIT = 150_000
"""Bytes of an image embedded as it is when it cannot be downscaled."""


def _uri(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def thumbnail(path: Path) -> str | None:
    """A ``data:`` URI of the downscaled image, or None when it cannot be embedded."""
    try:
        from PIL import Image
    except ImportError:
        mime = IMAGE_TYPES.get(path.suffix.lower())
        size = path.stat().st_size
        if mime is None or not mime.startswith("image/") or size > _RAW_LIMIT:
            return None
        return _uri(mime, path.read_bytes())
    try:
        with Image.open(path) as image:
            image.thumbnail((SIZE, SIZE))
            out = io.BytesIO()
            image.convert("RGB").save(out, format="JPEG", quality=80)
    except (OSError, ValueError):
        return None
    return _uri("image/jpeg", out.getvalue())


DATA_VERSION = 1
VERDICT_CODES: dict[str | None, str] = {
    Verdict.MEETS.value: "M",
    Verdict.PARTIALLY_MEETS.value: "P",
    Verdict.MISSING.value: "O",
    Verdict.CONTRADICTS.value: "C",
    None: "U",
}
"""One character per verdict in ``questions[].verdicts``; ``U`` unscored, ``.`` not judged."""
TEXT_BUDGET = 24_000_000
"""Characters of answers and explanations embedded at most (about 24 MB)."""
THUMB_BUDGET = 16_000_000
"""Characters of embedded thumbnails at most."""

_RESPONSES = pa.schema([(k, pa.string()) for k in ("question_id", "model", "setting", "response")])


class _Explanations:
    """The judges' explanations, kept in Arrow, row for row with the verdicts: only those
    of the questions whose texts fit the budget become Python strings (real judges write
    millions of distinct ones, so nothing is hashed or copied for the whole column)."""

    def __init__(self, column: pa.ChunkedArray) -> None:
        self.values = column
        codes = np.arange(len(column), dtype=np.int64)
        if column.null_count:
            codes[np.asarray(column.is_null().to_numpy(zero_copy_only=False))] = -1
        self.codes = codes

    def take(self, rows: npt.NDArray[np.int64]) -> list[str]:
        texts: list[str] = self.values.take(pa.array(rows, type=pa.int64())).to_pylist()
        return texts


def _answers(path: Path) -> pd.DataFrame | None:
    """The answers file's ids and texts, ids as categoricals; None without the file."""
    if not path.is_file():
        return None
    table = read_table(path, _RESPONSES)
    encoded = pa.table({n: table.column(n).dictionary_encode() for n in table.column_names})
    del table
    frame: pd.DataFrame = encoded.to_pandas()
    return frame


def _check_order(checklist: Checklist | None, seen: list[str]) -> list[str]:
    """The question's checks in checklist order, then any others the verdicts name."""
    order = [c.id for c in checklist.checks] if checklist else []
    known = set(order)
    wanted = set(seen)
    return [*(c for c in order if c in wanted), *sorted(c for c in seen if c not in known)]


def _checklists(dataset: Dataset | None) -> dict[str, Checklist]:
    if dataset is None:
        return {}
    try:
        return dataset.checklists()
    except Exception:  # a record that does not compile: checks are then named by id only
        return {}


def _scores(cube: ScoreCube, q: int) -> list[int | None]:
    """Gamut x1000 per (setting, judge, model) of question ``q``, flattened."""
    values = cube.gamut[:, :, :, q].ravel()
    return [round(1000 * float(v)) if math.isfinite(v) else None for v in values]


def _element(value: Any) -> str:
    return str(value.get("text", "")) if isinstance(value, dict) else str(value)


def _item(data: dict[str, Any]) -> dict[str, Any]:
    """A meta-rubric item as id, tier, type, its statement and its elements (list items,
    options, steps or aspects)."""
    head = data.get("statement") or data.get("name")
    if head is None:
        head = f"{data.get('entity', '')}: {data.get('relation', '')}"
    parts: list[Any] = next(
        (data[k] for k in ("items", "options", "steps", "aspects") if data.get(k)), []
    )
    need = data.get("min_required")
    return {
        "id": data.get("id"),
        "tier": data.get("tier"),
        "type": data.get("type"),
        "statement": str(head) + (f" (at least {need})" if need else ""),
        "elements": [_element(p) for p in parts],
    }


class _Builder:
    def __init__(self, run: RunData, cube: ScoreCube, text_budget: int) -> None:
        self.run, self.axes = run, cube
        self.records = run.dataset.by_id() if run.dataset else {}
        self.checklists = _checklists(run.dataset)
        self.thumb_budget = THUMB_BUDGET
        self.texts_left = text_budget

    def answers(self, frame: pd.DataFrame | None) -> dict[str, dict[int, str]]:
        out: dict[str, dict[int, str]] = {}
        if frame is None:
            return out
        axes = self.axes
        s = category_codes(frame["setting"], axes.settings)
        m = category_codes(frame["model"], axes.models)
        keep = (s >= 0) & (m >= 0)
        slot = s * len(axes.models) + m
        for qid, k, text in zip(
            frame["question_id"].astype(str)[keep], slot[keep], frame["response"][keep],
            strict=True,
        ):  # fmt: skip
            out.setdefault(qid, {})[int(k)] = "" if text is None else str(text)
        return out

    def image(self, record: DatasetRecord | None) -> str | None:
        if record is None or self.run.dataset is None:
            return None
        path = self.run.dataset.image_path(record)
        if path is None or not path.is_file():
            return None
        uri = thumbnail(path)
        if uri is None or len(uri) > self.thumb_budget:
            return None
        self.thumb_budget -= len(uri)
        return uri


@dataclass(frozen=True)
class _Rows:
    """One question's verdict rows as axis codes (``k`` indexes ``check_names``)."""

    s: npt.NDArray[np.int64]
    j: npt.NDArray[np.int64]
    m: npt.NDArray[np.int64]
    k: npt.NDArray[np.int64]
    v: npt.NDArray[np.uint8]
    e: npt.NDArray[np.int64]
    check_names: Sequence[str]


def _question(
    b: _Builder,
    q: int,
    rows: _Rows,
    explanations: _Explanations,
    answers: dict[int, str],
) -> dict[str, Any]:
    axes = b.axes
    qid = axes.questions[q]
    record = b.records.get(qid)
    seen = np.unique(rows.k)
    checklist = b.checklists.get(qid)
    checks = _check_order(checklist, [rows.check_names[int(k)] for k in seen])
    info = {c.id: (c.tier.value, c.text) for c in checklist.checks} if checklist else {}
    shape = (len(axes.settings), len(axes.judges), len(axes.models), len(checks))
    codes = np.full(shape, ord("."), dtype=np.uint8)
    expl = np.full(shape, -1, dtype=np.int64)
    if len(rows.k):
        position = {name: i for i, name in enumerate(checks)}
        local_check = np.full(int(seen.max()) + 1, -1, dtype=np.int64)
        for k in seen:
            local_check[k] = position[rows.check_names[int(k)]]
        idx = (rows.s, rows.j, rows.m, local_check[rows.k])
        codes[idx] = rows.v
        expl[idx] = rows.e
    texts, expl_local, answer_slots = _texts(b, expl.ravel(), explanations, answers)
    fits = texts is not None
    return {
        "id": qid,
        "domain": record.domain if record else None,
        "popularity": record.popularity if record else None,
        "entity": record.entity if record else None,
        "question": record.question if record else None,
        "question_text_only": record.text_only_question() if record else None,
        "image": b.image(record),
        "rubric": [
            _item(i.model_dump(mode="json")) for i in (record.meta_rubric.items if record else ())
        ],
        "checks": [
            {"id": c, "tier": info.get(c, ("", ""))[0] or None, "text": info.get(c, ("", c))[1]}
            for c in checks
        ],
        "scores": _scores(axes, q),
        "verdicts": codes.tobytes().decode("ascii"),
        "texts": texts,
        "explanations": expl_local if fits else None,
        "answers": answer_slots if fits else None,
    }


def _texts(
    b: _Builder, expl: npt.NDArray[np.int64], explanations: _Explanations, answers: dict[int, str]
) -> tuple[list[str] | None, list[int], list[int]]:
    """A question's distinct explanations and answers, if they fit what is left of the
    text budget: (texts, each cell's text index or -1, each answer slot's text index or
    -1). The first question that does not fit ends the texts."""
    if b.texts_left < 0:
        return None, [], []
    rows, inverse = np.unique(expl, return_inverse=True)
    absent = int(len(rows) > 0 and rows[0] < 0)
    said = explanations.take(rows[absent:])
    index: dict[str, int] = {}
    local = np.array([index.setdefault(t, len(index)) for t in said], dtype=np.int64)
    distinct = list(index)
    expl_local = np.where(expl < 0, -1, local[np.maximum(inverse - absent, 0)]).tolist()
    answer_slots: list[int] = []
    answer_texts: list[str] = []
    for slot in range(len(b.axes.settings) * len(b.axes.models)):
        text = answers.get(slot)
        answer_slots.append(-1 if text is None else len(distinct) + len(answer_texts))
        if text is not None:
            answer_texts.append(text)
    cost = sum(len(t) for t in distinct) + sum(len(t) for t in answer_texts)
    cost += 3 * len(expl_local)
    if cost > b.texts_left:
        b.texts_left = -1
        return None, [], []
    b.texts_left -= cost
    return distinct + answer_texts, expl_local, answer_slots


def _verdict_rows(frame: pd.DataFrame, axes: ScoreCube, e: npt.NDArray[np.int64]) -> list[_Rows]:
    """Each question's verdict rows (``axes.questions`` order); ``e``: explanation codes."""
    q = category_codes(frame["question_id"], axes.questions)
    s = category_codes(frame["setting"], axes.settings)
    j = category_codes(frame["judge"], axes.judges)
    m = category_codes(frame["model"], axes.models)
    verdict = frame["verdict"]
    letters = np.array(
        [ord(VERDICT_CODES.get(str(v), "U")) for v in verdict.cat.categories] + [ord("U")],
        dtype=np.uint8,
    )[np.asarray(verdict.cat.codes, dtype=np.int64)]
    checks = frame["check_id"]
    k = np.asarray(checks.cat.codes, dtype=np.int64)
    keep = np.flatnonzero((q >= 0) & (s >= 0) & (j >= 0) & (m >= 0) & (k >= 0))
    keep = keep[np.argsort(q[keep], kind="stable")]
    bounds = np.searchsorted(q[keep], np.arange(len(axes.questions) + 1))
    names = [str(c) for c in checks.cat.categories]
    out = []
    for i in range(len(axes.questions)):
        part = keep[bounds[i] : bounds[i + 1]]
        out.append(_Rows(s[part], j[part], m[part], k[part], letters[part], e[part], names))
    return out


def explore_data(
    run: RunData, *, text_budget: int = TEXT_BUDGET, leaderboard: Sequence[dict[str, Any]] = ()
) -> dict[str, Any] | None:
    """The drill-down data of a run, or None when its folder has no verdicts.jsonl."""
    if run.run_dir is None:
        return None
    verdicts, texts = run.verdicts, run.explanations
    if verdicts is None or texts is None:
        path = run.run_dir / "verdicts.jsonl"
        if not path.is_file():
            return None
        table = read_verdict_table(path, explanations=True)
        verdicts, texts = table.frame, table.explanations
        if texts is None:
            return None
    explanations = _Explanations(texts)
    axes = cube_from_scores(run.scores, run.judges)
    groups = _verdict_rows(verdicts, axes, explanations.codes)
    builder = _Builder(run, axes, text_budget)
    answers = builder.answers(_answers(run.run_dir / "responses.jsonl"))
    questions = [
        _question(builder, q, groups[q], explanations, answers.get(axes.questions[q], {}))
        for q in range(len(axes.questions))
    ]
    with_text = sum(1 for q in questions if q["texts"] is not None)
    return {
        "version": DATA_VERSION,
        "settings": list(axes.settings),
        "judges": list(axes.judges),
        "models": list(axes.models),
        "verdict_codes": {v or "unscored": c for v, c in VERDICT_CODES.items()},
        "leaderboard": list(leaderboard),
        "text_budget": text_budget,
        "questions_with_texts": with_text,
        "has_answers": bool(answers),
        "questions": questions,
    }


def explore_json(report: Report, run: RunData | None = None) -> tuple[str | None, str]:
    """The ``gamut-data`` JSON text, or None and why not: the run folder is not at hand (a
    report re-rendered from its JSON elsewhere), has no verdicts.jsonl, or a file of it
    does not parse."""
    run = run or report.run
    if run is None:
        folder = report.meta.run_dir
        if folder is None:
            return None, "the drill-down needs the run folder, and this report names none"
        if not (Path(folder) / "verdicts.jsonl").is_file():
            return None, f"the drill-down needs {Path(folder) / 'verdicts.jsonl'}"
        try:
            run = load_run_data(folder, report.meta.dataset, verdicts=False)
        except InputError as exc:
            return None, f"the drill-down is left out: {exc}"
    board = [
        {"model": r.model, "setting": r.setting, "judge": r.judge, "gamut": r.gamut}
        for r in report.leaderboard
    ]
    try:
        data = explore_data(run, leaderboard=board)
    except InputError as exc:
        return None, f"the drill-down is left out: {exc}"
    if data is None:
        return None, "the drill-down needs the run folder's verdicts.jsonl"
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text, ""
