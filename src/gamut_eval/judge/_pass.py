"""The judge pass: where every verdict comes from.

Every command that produces verdicts (``gamut run``, ``gamut judge``, the judge-quality
commands, the Inspect scorer) reads as one sentence: **plan** the (answer, check) pairs
(``JudgePlan``), hand the ones the store does not already hold to a **backend**, **settle**
each reply into a stored row (``_settle.settle``), and report **events** as it goes.

    plan ──> JudgeWork.pending() ──> backend.run(work) ──> settle() ──> work.record(row)
                 (store look-ups,        (online, batch,      (the one      (buffered store
                  identical content       Ray, dry run,        reply ->      writes, stats,
                  sent once)              offline)             row rule)     events)

A backend implements one small protocol (``Backend``): a name, the resolved judge it
serves, whether it writes the store and wants its endpoint probed, and ``async run(work)``.
What differs between backends (an aiohttp client, provider batch files, Ray Data, counting
tokens) stays inside it; planning, de-duplication, storage and progress stay here, once.

Streaming by design: answers are read lazily, keys are looked up in the store one answer
at a time, and finished rows are committed every ``FLUSH_S`` seconds, so memory does not
grow with the size of the run and a ``kill -9`` loses at most that much work.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

from gamut_eval.judge._plan import JudgePlan, PlannedResponse, judge_image
from gamut_eval.judge._prompt import RenderedResponse, hidden_characters, render_response
from gamut_eval.judge._settings import JudgeSettings
from gamut_eval.judge._store import Store, StoredVerdict
from gamut_eval.judge._types import JudgeServerGone
from gamut_eval.rubric import Check

if TYPE_CHECKING:
    from gamut_eval.judge._resolve import ResolvedJudge

__all__ = [
    "FLUSH_S",
    "Backend",
    "JudgeStats",
    "JudgeWork",
    "KeySet",
    "OnEvent",
    "PassEvent",
    "Pending",
    "judge_pass",
    "run_pass",
]

FLUSH_S = 0.05
"""How often finished verdicts are committed: what a kill -9 can lose (and re-judge)."""


@dataclass
class JudgeStats:
    """What a pass did; every event carries it."""

    total: int = 0
    """(answer, check) pairs in the plan."""
    cached: int = 0
    """Pairs the store already held, or repeats of identical content in this pass."""
    judged: int = 0
    """Pairs settled in this pass (verdict or unscored)."""
    ok: int = 0
    unscored: int = 0
    calls: int = 0
    """Judge calls made (first asks and re-asks)."""
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    """Why checks ended unscored, by the first words of the reason."""
    flagged: list[tuple[str, str, str, list[str]]] = field(default_factory=list)
    """Answers with zero-width or bidi control characters: (question, model, setting,
    characters). They are judged as written, and reported."""
    started: float = field(default_factory=time.monotonic)
    unfinished: str | None = None
    """Set by a backend that stopped with work outstanding (re-asks awaiting another batch
    round): the pass is then not complete, and its unscored rate is not judged yet."""

    @property
    def done(self) -> int:
        return self.cached + self.judged

    def record(self, row: StoredVerdict) -> None:
        self.judged += 1
        self.calls += row.attempts
        self.prompt_tokens += row.prompt_tokens
        self.cached_tokens += row.cached_tokens
        self.completion_tokens += row.completion_tokens
        if row.status == "ok":
            self.ok += 1
        else:
            self.unscored += 1
            self.reasons[row.reason.split(":", 1)[0][:40] if row.reason else ""] += 1


@dataclass(frozen=True, slots=True)
class PassEvent:
    """Something a pass reports: ``start``, ``progress`` (after each settled or reused
    check), ``note`` (a message for the user, e.g. a batch submitted) and ``done``."""

    kind: Literal["start", "progress", "note", "done"]
    judge: str
    stats: JudgeStats
    message: str = ""
    label: str = ""
    """What the caller calls this pass (``repeat 2 of 3``); the judge's name by default."""


OnEvent = Callable[[PassEvent], object]


@dataclass
class KeySet:
    """64-bit key prefixes: what a pass keeps per key, small on runs of millions of checks."""

    keys: set[int] = field(default_factory=set)

    def add(self, key: str) -> bool:
        """True the first time ``key`` is offered."""
        short = int(key[:16], 16)
        if short in self.keys:
            return False
        self.keys.add(short)
        return True

    def __contains__(self, key: str) -> bool:
        return int(key[:16], 16) in self.keys


@dataclass(slots=True)
class Pending:
    """One answer's checks still to judge, in rubric order."""

    plan: PlannedResponse
    checks: list[tuple[str, Check]]
    """(store key, check) pairs."""
    _rendered: RenderedResponse | None = None

    @property
    def rendered(self) -> RenderedResponse:
        """The shared prefix of this answer's requests (rendered once, with a fresh nonce)."""
        if self._rendered is None:
            plan = self.plan
            image = judge_image(plan.image_path) if plan.image_path else None
            self._rendered = render_response(plan.question, plan.row.response, image)
        return self._rendered


class Backend(Protocol):
    """Turns a pass's pending checks into settled rows (``work.record``)."""

    judge: ResolvedJudge
    """The judge it serves, resolved once (``_resolve``); a probe replaces it with the
    record that carries the request shape it learned, before the pass."""

    @property
    def name(self) -> str:
        """As in the registry and ``--backend``."""
        ...

    @property
    def writes_store(self) -> bool:
        """False for backends that only read (the dry run): the store is then opened
        read-only, or not at all when it does not exist."""
        ...

    @property
    def exports_rows(self) -> bool:
        """False for backends that produce no verdicts (the dry run, write-only batch
        files): there are no rows to export after the pass."""
        ...

    @property
    def probed(self) -> bool:
        """Whether the pass sends to the judge's endpoint and wants it probed first
        (``_probe``; a judge whose ``probe`` setting is off is not)."""
        ...

    async def run(self, work: JudgeWork) -> None:
        """Judge what ``work.pending()`` yields; record every settled row."""
        ...


class JudgeWork:
    """A pass in progress, as its backend sees it."""

    def __init__(
        self, plan: JudgePlan, store: Store, on_event: OnEvent | None = None, label: str = ""
    ) -> None:
        self.plan = plan
        self.label = label or plan.settings.judge
        self.store = store
        self.settings: JudgeSettings = plan.settings
        self.stats = JudgeStats(total=plan.total)
        self.on_event = on_event
        self.settled = KeySet()
        """Keys recorded in this pass, kept only when ``track_settled`` is set: a backend
        that streams the plan again in later rounds (batch) skips them there."""
        self.track_settled = False
        """Set by backends that read the plan more than once; the others need not pay a
        set entry per check."""
        self._buffer: list[StoredVerdict] = []
        self._flushed = time.monotonic()

    # -- what to judge ---------------------------------------------------------------------

    def pending(self, *, count_cached: bool = True) -> Iterator[Pending]:
        """Stream the plan's answers with the checks still to judge.

        A check is skipped when the store holds its verdict, when it was settled in an
        earlier round of this pass, or when identical content (same key) was already taken
        in this stream: two models giving the same empty answer are judged once. Skipped
        checks count as cached, except those settled earlier in the pass, which counted as
        judged then (``count_cached=False`` for a backend's later rounds over the plan).
        """
        taken = KeySet()
        for plan in self.plan:
            done = self.store.done(plan.keys)
            todo = []
            for key, check in zip(plan.keys, plan.checks, strict=True):
                repeat = not taken.add(key)
                if not repeat and key in self.settled:
                    continue  # settled in an earlier round of this pass: counted then
                if repeat or key in done:
                    if count_cached:
                        self.stats.cached += 1
                    continue
                todo.append((key, check))
            if count_cached and len(todo) < len(plan.keys):
                self.event("progress")
            if not todo:
                continue
            if count_cached:
                self._flag_hidden(plan)
            yield Pending(plan, todo)

    def _flag_hidden(self, plan: PlannedResponse) -> None:
        hidden = hidden_characters(plan.row.response)
        if hidden:
            row = plan.row
            self.stats.flagged.append((row.question_id, row.model, row.setting, hidden))

    # -- what was judged -------------------------------------------------------------------

    def record(self, row: StoredVerdict) -> None:
        """Keep one settled row: buffered for the store, counted, reported."""
        self._buffer.append(row)
        if self.track_settled:
            self.settled.add(row.key)
        self.stats.record(row)
        if time.monotonic() - self._flushed >= FLUSH_S:
            self.flush()
        self.event("progress")

    def flush(self) -> None:
        """Commit the buffered rows."""
        rows, self._buffer = self._buffer, []
        self._flushed = time.monotonic()
        if rows:
            self.store.put(rows)

    def event(self, kind: Literal["start", "progress", "note", "done"], message: str = "") -> None:
        if self.on_event is not None:
            self.on_event(PassEvent(kind, self.settings.judge, self.stats, message, self.label))

    def note(self, message: str) -> None:
        """A message for the user (a batch submitted, a round started...)."""
        self.event("note", message)

    async def _flush_periodically(self) -> None:
        while True:
            await asyncio.sleep(FLUSH_S)
            self.flush()


async def run_pass(
    plan: JudgePlan,
    backend: Backend,
    store: Store,
    on_event: OnEvent | None = None,
    *,
    label: str = "",
) -> JudgeStats:
    """Judge every check of ``plan`` that ``store`` does not already hold, with ``backend``.

    Commits as it goes; on any exit (an auth failure, Ctrl-C) what finished is committed.
    ``label`` names the pass in its events (default: the judge).
    """
    work = JudgeWork(plan, store, on_event, label)
    work.event("start")
    flusher = asyncio.create_task(work._flush_periodically())
    try:
        await backend.run(work)
    except JudgeServerGone as exc:
        stats = work.stats
        left = stats.total - stats.done
        raise JudgeServerGone(
            f"{exc}; {left:,} of {stats.total:,} checks are left unscored (what was judged "
            "is kept: rerun to continue once the server answers again)"
        ) from None
    finally:
        flusher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await flusher
        work.flush()
    work.event("done")
    return work.stats


def judge_pass(
    plan: JudgePlan,
    backend: Backend,
    store: Store,
    on_event: OnEvent | None = None,
    *,
    label: str = "",
) -> JudgeStats:
    """``run_pass`` in a fresh event loop (for synchronous callers)."""
    return asyncio.run(run_pass(plan, backend, store, on_event, label=label))
