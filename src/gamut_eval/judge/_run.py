"""Judging a whole answers file: the library function behind ``gamut judge``.

``judge_responses`` is the judge pass (``_pass``) with the file around it: the answers are
validated before the store is opened (bad input never creates or locks a store), every
backend writes the same store, the verdict rows are exported from the store, and a pass
whose share of unscored checks passes ``max_unscored_rate`` raises after writing its rows,
so they can be inspected.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, cast

from gamut_eval._tables import table_format, write_rows
from gamut_eval.dataset import Dataset
from gamut_eval.errors import GamutError
from gamut_eval.judge._pass import Backend, JudgeStats, OnEvent, judge_pass
from gamut_eval.judge._plan import JudgePlan, complete_answers
from gamut_eval.judge._probe import probe_judges
from gamut_eval.judge._records import Status, VerdictName, VerdictRow
from gamut_eval.judge._settings import JudgeSettings
from gamut_eval.judge._store import MemoryStore, Store, VerdictStore
from gamut_eval.judge.backends import make_backend

__all__ = [
    "JudgeReport",
    "UnscoredRateExceeded",
    "check_unscored_rate",
    "judge_responses",
    "open_store",
    "verdict_rows",
    "write_verdict_rows",
]

NOT_JUDGED = "not judged (the run was interrupted)"


class UnscoredRateExceeded(GamutError):
    """Too many checks could not be graded: the judge, not the models, is the problem."""


@dataclass(frozen=True)
class JudgeReport:
    """The outcome of judging one answers file with one judge."""

    stats: JudgeStats
    rows: int
    """Verdict rows written."""
    unscored: int
    """Rows without a verdict."""

    @property
    def unscored_rate(self) -> float:
        return self.unscored / self.rows if self.rows else 0.0


def verdict_rows(plan: JudgePlan, store: Store) -> Iterator[VerdictRow]:
    """Stream the plan's verdict rows from the store (a check never judged is unscored)."""
    judge = plan.settings.judge
    for answer in plan:
        stored = store.get(answer.keys)
        row = answer.row
        for key, check in zip(answer.keys, answer.checks, strict=True):
            found = stored.get(key)
            yield VerdictRow.model_construct(
                question_id=row.question_id,
                model=row.model,
                setting=row.setting,
                judge=judge,
                check_id=check.id,
                verdict=cast("VerdictName | None", found.verdict if found else None),
                status=cast("Status", found.status if found else "unscored"),
                reason=found.reason if found else NOT_JUDGED,
                explanation=found.explanation if found else "",
                attempts=found.attempts if found else 0,
            )


def write_verdict_rows(rows: Iterator[VerdictRow], handle: IO[str]) -> tuple[int, int]:
    """Write rows as JSONL; return (rows, unscored rows)."""
    count = unscored = 0
    for row in rows:
        handle.write(json.dumps(row.__dict__, ensure_ascii=False) + "\n")
        count += 1
        unscored += row.verdict is None
    return count, unscored


def export_verdict_rows(rows: Iterator[VerdictRow], out: Path | None) -> tuple[int, int]:
    """Rows to ``out`` in the format its extension names (JSONL on standard output when
    None); return (rows, unscored rows)."""
    if out is None:
        return write_verdict_rows(rows, sys.stdout)
    unscored = 0

    def counted() -> Iterator[dict[str, object]]:
        nonlocal unscored
        for row in rows:
            unscored += row.verdict is None
            yield row.__dict__

    return write_rows(out, counted()), unscored


def check_unscored_rate(report: JudgeReport, settings: JudgeSettings) -> None:
    """Raise ``UnscoredRateExceeded`` when too many checks could not be graded."""
    if report.unscored_rate <= settings.max_unscored_rate:
        return
    reasons = (
        ", ".join(f"{r} x{n}" for r, n in report.stats.reasons.most_common(5)) or "see the rows"
    )
    raise UnscoredRateExceeded(
        f"{report.unscored} of {report.rows} checks ({100 * report.unscored_rate:.1f}%) could "
        f"not be graded by {settings.judge}, above --max-unscored-rate "
        f"{settings.max_unscored_rate:g}; no score should be reported from this run. "
        f"Reasons: {reasons}. Rerun to retry them."
    )


@contextlib.contextmanager
def open_store(path: Path, backend: Backend, wait_s: float = 0.0) -> Iterator[Store]:
    """The store a backend needs: the writer's lock for backends that write; a read-only
    view (or an empty one, when the file does not exist) for those that do not."""
    if backend.writes_store:
        with VerdictStore(path, wait_s=wait_s) as store:
            yield store
    elif path.is_file():
        with VerdictStore(path, writer=False) as store:
            yield store
    else:
        yield MemoryStore()


def judge_responses(
    dataset: Dataset,
    responses: Path,
    settings: JudgeSettings,
    store_path: Path,
    out: Path | None,
    *,
    backend: Backend | None = None,
    wait_for_store_s: float = 0.0,
    on_event: OnEvent | None = None,
    complete: bool = False,
) -> JudgeReport:
    """Judge every check of every answer not already in the store, then export the rows
    to ``out`` (standard output when None).

    ``backend`` defaults to the one ``settings`` asks for; when it sends to the judge's
    endpoint, the endpoint is probed first and the backend handed the probed judge. A
    backend that produces no verdicts (a dry run, write-only batch files) exports no rows;
    a pass left unfinished (re-asks awaiting a batch round) exports its rows but is not yet
    held to the unscored rate. ``complete``: refuse answers files that lack an answer of a
    model to a question (for every model and setting the file names), as ``gamut judge``
    does.
    """
    if out is not None:
        table_format(out)  # an unknown extension is refused before any work
    plan = JudgePlan(dataset, responses, settings)  # validates before any store is opened
    if complete:
        complete_answers(plan)
    backend = backend or make_backend(settings)
    if backend.probed:  # a dead endpoint ends here, before the store is opened
        [backend.judge] = probe_judges([backend.judge])
    with open_store(store_path, backend, wait_for_store_s) as store:
        stats = judge_pass(plan, backend, store, on_event)
        if not backend.exports_rows:
            return JudgeReport(stats, 0, 0)
        count, unscored = export_verdict_rows(verdict_rows(plan, store), out)
    report = JudgeReport(stats, count, unscored)
    if not stats.unfinished:
        check_unscored_rate(report, settings)
    return report
