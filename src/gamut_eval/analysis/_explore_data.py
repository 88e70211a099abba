"""The data behind the report's drill-down: every question, check, verdict and answer of a run.

Built from the run folder (verdicts.jsonl with the judges' explanations, responses.jsonl,
the dataset) and embedded once in the HTML page as plain JSON (``<script
type="application/json" id="gamut-data">``), so other tools can read it too; its shape is
documented in docs/report.md ("The embedded data").

Verdicts are one character per (setting, judge, model, check) of a question, so even a
paper-scale run (4.6 million verdicts) costs about 5 MB. The texts (answers and
explanations) are the heavy part: they are embedded question by question, in question
order, until ``text_budget`` characters are used; the questions past it keep their
verdicts and scores but say that their texts are not in the page.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type stubs
import pyarrow.json as pj  # type: ignore[import-untyped]  # pyarrow ships no type stubs

from gamut_eval.analysis._cube import ScoreCube, cube_from_scores
from gamut_eval.analysis._rundata import RunData
from gamut_eval.analysis._thumbs import thumbnail
from gamut_eval.dataset import DatasetRecord

__all__ = ["DATA_VERSION", "VERDICT_CODES", "explore_data"]

DATA_VERSION = 1
VERDICT_CODES: dict[str | None, str] = {
    "meets": "M",
    "partially_meets": "P",
    "missing": "O",
    "contradicts": "C",
    None: "U",
}
"""One character per verdict in ``questions[].verdicts``; ``U`` unscored, ``.`` not judged."""
TEXT_BUDGET = 24_000_000
"""Characters of answers and explanations embedded at most (about 24 MB)."""
THUMB_BUDGET = 16_000_000
"""Characters of embedded thumbnails at most."""

_SCHEMA = pa.schema(
    [
        *((k, pa.string()) for k in ("question_id", "model", "setting", "judge", "check_id")),
        ("verdict", pa.string()),
        ("explanation", pa.string()),
    ]
)
_RESPONSES = pa.schema([(k, pa.string()) for k in ("question_id", "model", "setting", "response")])


@dataclass(frozen=True)
class _Axes:
    settings: tuple[str, ...]
    judges: tuple[str, ...]
    models: tuple[str, ...]
    questions: tuple[str, ...]


def _read(path: Path, schema: pa.Schema) -> pd.DataFrame | None:
    if not path.is_file() or path.stat().st_size == 0:
        return None
    options = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    try:
        table = pj.read_json(path, parse_options=options)
    except pa.ArrowException:
        return None  # the report's own reading of the run already named any bad line
    encoded = pa.table({n: table.column(n).dictionary_encode() for n in table.column_names})
    frame: pd.DataFrame = encoded.to_pandas()
    return frame


def _codes(column: pd.Series, axis: Sequence[str]) -> npt.NDArray[np.int64]:
    return np.asarray(pd.Categorical(column, categories=list(axis)).codes, dtype=np.int64)


def _check_order(record: DatasetRecord | None, seen: list[str]) -> list[str]:
    """The question's checks in checklist order, then any others the verdicts name."""
    order: list[str] = []
    if record is not None:
        try:
            order = [c.id for c in record.effective_checklist().checks]
        except Exception:  # a record that does not compile still has verdicts
            order = []
    known = set(order)
    return [*(c for c in order if c in seen), *sorted(c for c in seen if c not in known)]


def _check_info(record: DatasetRecord | None) -> dict[str, tuple[str, str]]:
    if record is None:
        return {}
    try:
        checks = record.effective_checklist().checks
    except Exception:
        return {}
    return {c.id: (c.tier.value, c.text) for c in checks}


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
    def __init__(self, run: RunData, axes: _Axes, text_budget: int) -> None:
        self.run, self.axes, self.budget = run, axes, text_budget
        self.records = run.dataset.by_id() if run.dataset else {}
        self.thumb_budget = THUMB_BUDGET
        self.texts_left = text_budget

    def answers(self, frame: pd.DataFrame | None) -> dict[str, dict[int, str]]:
        out: dict[str, dict[int, str]] = {}
        if frame is None:
            return out
        axes = self.axes
        s = _codes(frame["setting"].astype(str), axes.settings)
        m = _codes(frame["model"].astype(str), axes.models)
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


def _question(
    b: _Builder,
    q: int,
    rows: pd.DataFrame,
    expl_dict: Sequence[str],
    answers: dict[int, str],
    cube: ScoreCube,
) -> dict[str, Any]:
    axes = b.axes
    qid = axes.questions[q]
    record = b.records.get(qid)
    checks = _check_order(record, sorted(set(rows["check_id"].astype(str))))
    info = _check_info(record)
    shape = (len(axes.settings), len(axes.judges), len(axes.models), len(checks))
    codes = np.full(shape, ord("."), dtype=np.uint8)
    expl = np.full(shape, -1, dtype=np.int64)
    if len(rows):
        idx = (
            rows["s"].to_numpy(),
            rows["j"].to_numpy(),
            rows["m"].to_numpy(),
            _codes(rows["check_id"].astype(str), checks),
        )
        codes[idx] = rows["v"].to_numpy()
        expl[idx] = rows["e"].to_numpy()
    texts: list[str] = []
    local = {-1: -1}
    for code in np.unique(expl):
        if code >= 0:
            local[int(code)] = len(texts)
            texts.append(expl_dict[int(code)])
    expl_local = [local[int(c)] for c in expl.ravel()]
    answer_slots: list[int] = []
    for slot in range(len(axes.settings) * len(axes.models)):
        text = answers.get(slot)
        answer_slots.append(-1 if text is None else len(texts))
        if text is not None:
            texts.append(text)
    cost = sum(len(t) for t in texts) + 3 * len(expl_local)
    fits = cost <= b.texts_left
    if fits:
        b.texts_left -= cost
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
        "scores": _scores(cube, q),
        "verdicts": codes.tobytes().decode("ascii"),
        "texts": texts if fits else None,
        "explanations": expl_local if fits else None,
        "answers": answer_slots if fits else None,
    }


def _verdict_frame(frame: pd.DataFrame, axes: _Axes) -> tuple[pd.DataFrame, list[str]]:
    """Verdict rows with axis codes: ``q``, ``s``, ``j``, ``m``, ``v`` (a byte), ``e``."""
    verdict = frame["verdict"].astype(object).where(frame["verdict"].notna(), None)
    letters = np.array([ord(VERDICT_CODES.get(v, "U")) for v in verdict], dtype=np.uint8)
    explanations = frame["explanation"]
    out = pd.DataFrame(
        {
            "q": _codes(frame["question_id"].astype(str), axes.questions),
            "s": _codes(frame["setting"].astype(str), axes.settings),
            "j": _codes(frame["judge"].astype(str), axes.judges),
            "m": _codes(frame["model"].astype(str), axes.models),
            "check_id": frame["check_id"],
            "v": letters,
            "e": np.asarray(explanations.cat.codes, dtype=np.int64),
        }
    )
    keep = (out[["q", "s", "j", "m"]] >= 0).all(axis=1)
    return out[keep], [str(t) for t in explanations.cat.categories]


def explore_data(
    run: RunData, *, text_budget: int = TEXT_BUDGET, leaderboard: Sequence[dict[str, Any]] = ()
) -> dict[str, Any] | None:
    """The drill-down data of a run, or None when its folder has no verdicts.jsonl."""
    if run.run_dir is None:
        return None
    frame = _read(run.run_dir / "verdicts.jsonl", _SCHEMA)
    if frame is None:
        return None
    cube = cube_from_scores(run.scores, run.judges)
    axes = _Axes(cube.settings, cube.judges, cube.models, cube.questions)
    rows, expl_dict = _verdict_frame(frame, axes)
    del frame
    builder = _Builder(run, axes, text_budget)
    answers = builder.answers(_read(run.run_dir / "responses.jsonl", _RESPONSES))
    groups = dict(iter(rows.groupby("q", sort=True)))
    empty = rows.iloc[:0]
    questions = [
        _question(
            builder, q, groups.get(q, empty), expl_dict, answers.get(axes.questions[q], {}), cube
        )
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
