"""Verdict rows keyed by the check they grade: read from files, or judged in a store of their
own.

Agreement, stability and the audit all compare verdicts check by check, so they share one
key, ``CheckRef`` (question, model, setting, check), and one mapping ``CheckRef -> verdict
or None`` (None: unscored). Files from users are validated line by line; every problem is
reported at once with the file and line.

Verdicts a quality measurement judges itself come from a run in a store of its own. The
verdict store is a cache keyed by content (judge, prompt version, question, response, check
text), which is what makes ordinary runs resumable, and exactly what a stability or order
measurement must not hit: a repeat served from the cache would agree with the first run by
construction. So each repeat (and each probe run that sends the same content again) gets
its own store file in a store directory. A temporary directory by default; a kept directory
(``--store-dir``) makes an interrupted measurement resume repeat by repeat, since each store
still only caches its own repeat.
"""

from __future__ import annotations

import contextlib
import math
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict

from gamut_eval._files import read_jsonl
from gamut_eval.errors import ErrorDetail, ValidationError
from gamut_eval.judge import (
    BackendOptions,
    Executor,
    JudgePlan,
    JudgeSettings,
    JudgeStats,
    OnEvent,
    VerdictStore,
    judge_pass,
    make_backend,
    require_judge_extras,
    resolve_judge,
    verdict_rows,
)
from gamut_eval.rubric import TIERS, Check, CheckKind, Checklist
from gamut_eval.scoring import ScoringParams, Verdict, score_table, summarise_scores

_KEYS = ("question_id", "model", "setting", "check_id")
_VERDICTS = frozenset(v.value for v in Verdict)


class Frozen(BaseModel):
    """The reports' models: immutable, no unknown fields, attribute docstrings kept."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


@dataclass(frozen=True, slots=True, order=True)
class CheckRef:
    """One check of one response: what verdict rows are matched on."""

    question_id: str
    model: str
    setting: str
    check_id: str


Verdicts = dict[CheckRef, str | None]
"""Verdict per check, ``None`` for unscored; insertion order is file order."""


def _row_problems(data: Any, checks: Mapping[str, Mapping[str, Check]]) -> list[ErrorDetail]:
    if not isinstance(data, dict):
        return [ErrorDetail("$", "row-object", "each line must be a JSON object", data)]
    problems = [
        ErrorDetail(key, "required", "a non-empty string is required", data.get(key))
        for key in _KEYS
        if not isinstance(data.get(key), str) or not data[key]
    ]
    verdict = data.get("verdict")
    known = verdict is None or (isinstance(verdict, str) and verdict in _VERDICTS)
    if "verdict" not in data or not known:
        allowed = ", ".join(sorted(_VERDICTS))
        problems.append(
            ErrorDetail("verdict", "verdict-value", f"expected one of {allowed} or null", verdict)
        )
    if problems:
        return problems
    qid = data["question_id"]
    if qid not in checks:
        return [
            ErrorDetail("question_id", "known-question", "no such question in the dataset", qid)
        ]
    if data["check_id"] not in checks[qid]:
        message = f"no such check in question {qid!r}"
        return [ErrorDetail("check_id", "known-check", message, data["check_id"])]
    return []


def load_verdicts(
    path: Path, checks: Mapping[str, Mapping[str, Check]], *, judge: str | None = None
) -> Verdicts:
    """Validated verdict rows of a JSONL file (``gamut judge`` output or gold labels).

    Each row needs ``question_id``, ``model``, ``setting``, ``check_id`` naming a check of
    the dataset (``checks``: question id -> check id -> check) and ``verdict`` (one of the
    four, or null for unscored); other fields are ignored. ``judge`` keeps only rows whose
    ``judge`` field equals it. Two rows for one check are an error: which one to trust?
    """
    verdicts: Verdicts = {}
    first_line: dict[CheckRef, int] = {}
    errors: list[ErrorDetail] = []
    several_judges = False  # a duplicate from rows naming their judge: ``judge`` picks one
    for line, data in read_jsonl(path, errors):
        where = f"{path}:{line}"
        problems = _row_problems(data, checks)
        if problems:
            errors += [p.in_file(where) for p in problems]
            continue
        if judge is not None and data.get("judge") != judge:
            continue
        ref = CheckRef(*(data[k] for k in _KEYS))
        if ref in first_line:
            errors.append(_duplicate(ref, first_line[ref], data).in_file(where))
            several_judges = several_judges or "judge" in data
            continue
        first_line[ref] = line
        verdicts[ref] = data["verdict"]
    if errors:
        raise ValidationError(errors, setting="judge" if several_judges else None)
    if not verdicts:
        detail = ErrorDetail(
            "$", "non-empty", "no verdict rows" + (f" of judge {judge!r}" if judge else "")
        )
        raise ValidationError([detail.in_file(path)])
    return verdicts


def verdict_judges(path: Path) -> list[str]:
    """The judges a verdict file's rows name (their ``judge`` field), in file order; rows
    that do not parse are left to ``load_verdicts`` to report."""
    judges: dict[str, None] = {}
    for _, data in read_jsonl(path, []):
        if isinstance(data, dict) and isinstance(data.get("judge"), str):
            judges.setdefault(data["judge"])
    return list(judges)


def _duplicate(ref: CheckRef, line: int, data: Mapping[str, Any]) -> ErrorDetail:
    hint = " (rows of several judges? keep one judge's rows with judge)" if "judge" in data else ""
    return ErrorDetail(
        "$",
        "unique-verdict",
        f"a second verdict for the same question, model, setting and check as line {line}{hint}",
        list(astuple(ref)),
    )


def tier_and_kind_groups(
    refs: Iterable[CheckRef], checks: Mapping[str, Mapping[str, Check]]
) -> tuple[dict[str, list[CheckRef]], dict[str, list[CheckRef]]]:
    """``refs`` grouped by their check's tier and by its kind (``checks``: question id ->
    check id -> check), groups in ``TIERS`` and ``CheckKind`` order, present ones only."""
    tiers: dict[str, list[CheckRef]] = {t.value: [] for t in TIERS}
    kinds: dict[str, list[CheckRef]] = {k.value: [] for k in CheckKind}
    for ref in refs:
        check = checks[ref.question_id][ref.check_id]
        tiers[check.tier.value].append(ref)
        kinds[check.kind.value].append(ref)
    return {n: g for n, g in tiers.items() if g}, {n: g for n, g in kinds.items() if g}


def model_scores(
    verdicts: Mapping[CheckRef, str | None],
    checklists: Mapping[str, Checklist],
    params: ScoringParams | None = None,
) -> dict[tuple[str, str], float | None]:
    """Mean Gamut score per (model, setting) over its responses (None: nothing scored)."""
    if not verdicts:
        return {}
    # the verdict table score_table takes: one row per check, null for unscored
    frame = pd.DataFrame([astuple(r) for r in verdicts], columns=list(_KEYS))
    frame["verdict"] = pd.Series(list(verdicts.values()), dtype=object)
    table = score_table(frame, checklists, params, keys=["question_id", "model", "setting"])
    summary = summarise_scores(table, by=["model", "setting"])
    out: dict[tuple[str, str], float | None] = {}
    for record in summary.to_dict(orient="records"):
        gamut = float(record["gamut"])
        out[(str(record["model"]), str(record["setting"]))] = None if math.isnan(gamut) else gamut
    return out


ExecutorFactory = Callable[[JudgeSettings], Executor]


def require_judge_backend(
    settings: JudgeSettings, executor_factory: ExecutorFactory | None
) -> None:
    """The extra the judge's backend needs (``MissingExtra``), checked before any store or
    folder is made; an injected client needs none."""
    if executor_factory is None:
        require_judge_extras([resolve_judge(settings)])


@contextlib.contextmanager
def store_directory(path: Path | None) -> Iterator[Path]:
    """``path`` (created if needed, kept afterwards), or a temporary directory."""
    if path is not None:
        path.mkdir(parents=True, exist_ok=True)
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="gamut-quality-") as tmp:
        yield Path(tmp)


def judge_in_store(
    plan: JudgePlan,
    store_path: Path,
    *,
    label: str,
    executor_factory: ExecutorFactory | None = None,
    on_event: OnEvent | None = None,
) -> tuple[Verdicts, JudgeStats]:
    """Judge every check of ``plan`` not yet in ``store_path``; all its verdicts.

    Callers make the plan first (which validates the answers), so bad input never
    creates a store.
    """
    backend = make_backend(plan.settings, BackendOptions(executor_factory=executor_factory))
    with VerdictStore(store_path) as store:
        stats = judge_pass(plan, backend, store, on_event, label=label)
        # rows the project wrote itself, trusted: no validation
        verdicts: Verdicts = {
            CheckRef(*(getattr(row, k) for k in _KEYS)): row.verdict
            for row in verdict_rows(plan, store)
        }
    return verdicts, stats
