"""Batch results into the verdict store, through the online engine's rules.

Every result line is settled by ``_settle.settle``: a valid verdict is stored, a malformed
reply becomes a re-ask for the next round (until ``max_reasks``), an error inside the batch
(the line's ``error``, a non-200 status, an unusable body) is stored unscored with the
reason, which the store never counts as done (errors are not cached). Ingesting is
idempotent: a key that already has a verdict is skipped, and a reply already counted
towards a re-ask (same result id) is not counted twice, so a crash mid-ingest is repaired
by ingesting the same file again.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from gamut_eval.judge._pass import JudgeWork, KeySet
from gamut_eval.judge._settle import Reask, settle
from gamut_eval.judge._store import StoredVerdict
from gamut_eval.judge._types import Completion
from gamut_eval.judge.backends._batch_files import ResultLine, read_results
from gamut_eval.judge.backends._batch_store import BatchLedger
from gamut_eval.judge.backends._wire import completion_from_body, error_reason

__all__ = ["IngestCounts", "Ingester"]

_CHUNK = 5000
"""Result lines per commit: bounded memory on 50,000-line files, few transactions."""


@dataclass
class IngestCounts:
    """What ingesting one or more results files did."""

    lines: int = 0
    stored: int = 0
    """Verdict rows written (ok or unscored)."""
    reasks: int = 0
    """Checks left with a re-ask for the next round."""
    skipped: int = 0
    """Lines for checks that already had a verdict, or replies already counted."""
    unknown: int = 0
    """Lines whose custom id is not a check of this run."""
    seen: set[str] = field(default_factory=set, repr=False)
    """Custom ids met (for finding requests a batch never answered)."""


def _outcome(line: ResultLine) -> Completion | str:
    """The reply of a result line, or why there is none (the unscored reason)."""
    if line.error:
        error = line.error if isinstance(line.error, dict) else {"message": str(line.error)}
        code = error.get("code") or "error"
        return f"batch error: {code}: {str(error.get('message', ''))[:300]}"
    if line.status is None:
        return "batch result without a response"
    if line.status != 200:
        return error_reason(line.status, line.body)
    return completion_from_body(line.body)


def _chunks(lines: Iterable[ResultLine]) -> Iterator[list[ResultLine]]:
    chunk: list[ResultLine] = []
    for line in lines:
        chunk.append(line)
        if len(chunk) >= _CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


class Ingester:
    """Settles result lines of one judge into the pass (``work.record``); the pass keeps
    the keys that got a final row, so it does not send them again."""

    def __init__(self, work: JudgeWork, ledger: BatchLedger, known: KeySet | None = None) -> None:
        self.work = work
        self.store = work.store
        self.ledger = ledger
        self.settings = work.settings
        self.settled = work.settled
        self.known = known
        """The keys of this run; lines for other keys are counted as unknown and skipped."""

    def ingest_file(self, path: Path) -> IngestCounts:
        counts = IngestCounts()
        for chunk in _chunks(read_results(path)):
            self._ingest(chunk, counts)
        return counts

    def ingest_lines(self, lines: Iterable[ResultLine]) -> IngestCounts:
        counts = IngestCounts()
        for chunk in _chunks(lines):
            self._ingest(chunk, counts)
        return counts

    def _ingest(self, chunk: list[ResultLine], counts: IngestCounts) -> None:
        counts.lines += len(chunk)
        keys = [line.custom_id for line in chunk]
        done = self.store.done(keys)
        reasks = self.ledger.reasks(keys)
        finals: dict[str, StoredVerdict] = {}
        pending: dict[str, Reask] = {}
        for line in chunk:
            key = line.custom_id
            counts.seen.add(key)
            if self.known is not None and key not in self.known:
                counts.unknown += 1
                continue
            prior = pending.get(key) or reasks.get(key)
            if key in done or key in finals or (prior and prior.result_id == line.result_id):
                counts.skipped += 1
                continue
            result = settle(key, _outcome(line), prior, self.settings, line.result_id)
            if isinstance(result, Reask):
                pending[key] = result
            else:
                finals[key] = result
                pending.pop(key, None)
        self._commit(finals, pending, counts)

    def _commit(
        self, finals: dict[str, StoredVerdict], pending: dict[str, Reask], counts: IngestCounts
    ) -> None:
        for row in finals.values():
            self.work.record(row)
        self.work.flush()  # the verdicts first: a crash now leaves a re-ask, never a loss
        self.ledger.settle_reasks(pending.values(), finals)
        counts.stored += len(finals)
        counts.reasks += len(pending)

    def missing(self, key_ids: Iterable[str], seen: set[str], reason: str) -> int:
        """Store ``reason`` as unscored for requests that got no result line at all (a
        failed or expired batch); returns how many."""
        absent = [k for k in key_ids if k not in seen]
        done = self.store.done(absent)
        priors = self.ledger.reasks(absent)
        rows = [
            settle(k, reason, priors.get(k), self.settings)
            for k in absent
            if k not in done and k not in self.settled
        ]
        verdicts = [r for r in rows if isinstance(r, StoredVerdict)]
        for row in verdicts:
            self.work.record(row)
        self.work.flush()
        self.ledger.settle_reasks((), [v.key for v in verdicts])
        return len(verdicts)
