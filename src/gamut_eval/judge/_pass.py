"""The judge pass: the plan, the pass every backend runs under, the verdict rows, the run.

The plan: what one judge is asked to grade, every (response, check) pair of a set of
answers. A ``JudgePlan`` is the dataset, the answers (a responses file, streamed, or rows in
memory) and one judge's settings. It validates the answers when it is made, so bad input
is refused before any store is opened, and yields one ``PlannedResponse`` per answer:
the question as the model was asked it, the checks, and each check's store key. Keys hash
everything that determines a verdict (docs/method.md, judge keys; for a built-in judge,
its revision: ``_builtin.py``), so the store can say what is already done. Iterating
twice reads the answers twice: plans stay streaming, and memory does not grow with the
size of the run.

The pass: where every verdict comes from. Every command that produces verdicts (``gamut
run``, ``gamut judge``, the judge-quality commands, the Inspect scorer) reads as one
sentence: **plan** the (answer, check) pairs (``JudgePlan``), hand the ones the store does
not already hold to a **backend**, **settle** each reply into a stored row
(``_prompt.settle``), and report **events** as it goes.

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

The rows: ``VerdictRow`` is what ``gamut judge`` writes and ``gamut score`` reads, one per
(answer, check, judge).

The run: judging a whole answers file, the library function behind ``gamut judge``.
``judge_responses`` is the judge pass with the file around it: the answers are
validated before the store is opened (bad input never creates or locks a store), every
backend writes the same store, the verdict rows are exported from the store, and a pass
whose share of unscored checks passes ``max_unscored_rate`` raises after writing its rows,
so they can be inspected.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from collections import Counter, deque
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import IO, TYPE_CHECKING, Literal, Protocol, cast

from pydantic import BaseModel, ConfigDict

from gamut_eval._lock import hold_run_folder_of
from gamut_eval._tables import table_format, write_rows
from gamut_eval.dataset import Dataset
from gamut_eval.errors import GamutError
from gamut_eval.judge._builtin import keyed_judge
from gamut_eval.judge._client import JudgeServerGone, JudgeStalled
from gamut_eval.judge._probe import probe_judges
from gamut_eval.judge._prompt import (
    CHARS_PER_TOKEN,
    COMPACT,
    JudgeImage,
    PromptVariant,
    RenderedResponse,
    cache_rules,
    check_key,
    hidden_characters,
    prompt_variant,
    render_response,
    response_digest,
)
from gamut_eval.judge._resolve import make_backend
from gamut_eval.judge._settings import JudgeSettings
from gamut_eval.judge._store import MemoryStore, Store, StoredVerdict, VerdictStore
from gamut_eval.responses import ResponseRow, check_responses, iter_responses
from gamut_eval.rubric import Check, Checklist
from gamut_eval.scoring import VerdictName

if TYPE_CHECKING:
    from gamut_eval.judge._resolve import ResolvedJudge


@dataclass(frozen=True, slots=True)
class PlannedResponse:
    """One answer with its checks and their store keys (no prompt rendered yet)."""

    row: ResponseRow
    question: str
    """The question as the model was asked it in this setting."""
    checks: tuple[Check, ...]
    keys: tuple[str, ...]
    image_path: Path | None
    """The image the judge is shown, when ``judge_image`` is on in the multimodal setting."""
    variant: PromptVariant = COMPACT
    """The instructions its checks are sent with (``_prompt.prompt_variant``); its
    version is part of every key."""


@lru_cache(maxsize=64)
def judge_image(path: Path) -> JudgeImage:
    """An image read and encoded once per run, however many answers show it."""
    return JudgeImage.from_path(path)


class JudgePlan:
    """Every (answer, check) pair one judge is to grade.

    ``responses`` is a responses file (validated here against the dataset: fields, known
    questions, no duplicates) or rows already in memory (trusted; the Inspect scorer hands
    one answer at a time). ``checklists`` saves compiling the dataset again when the
    caller already holds its checklists.
    """

    def __init__(
        self,
        dataset: Dataset,
        responses: str | Path | Sequence[ResponseRow],
        settings: JudgeSettings,
        *,
        total: int | None = None,
        checklists: Mapping[str, Checklist] | None = None,
    ) -> None:
        self.dataset = dataset
        self.settings = settings
        self._checklists = checklists if checklists is not None else dataset.checklists()
        if isinstance(responses, str | Path):
            self.path: Path | None = Path(responses)
            self._rows: Sequence[ResponseRow] = ()
            if total is None:
                per_question = check_responses(self.path, set(dataset.by_id()))
                total = sum(n * len(self._checklists[q].checks) for q, n in per_question.items())
        else:
            self.path = None
            self._rows = responses
            if total is None:
                total = sum(len(self._checklists[r.question_id].checks) for r in responses)
        self.total = total
        """(answer, check) pairs in the plan."""

    def for_judge(
        self, settings: JudgeSettings, questions: Collection[str] | None = None
    ) -> JudgePlan:
        """The same answers for another judge, without validating them again; with
        ``questions``, only the answers to those (every model and setting of each)."""
        if questions is not None:
            keep = set(questions)
            rows = [row for row in self._answers() if row.question_id in keep]
            return JudgePlan(self.dataset, rows, settings, checklists=self._checklists)
        source: str | Path | Sequence[ResponseRow] = self.path or self._rows
        return JudgePlan(
            self.dataset, source, settings, total=self.total, checklists=self._checklists
        )

    def _answers(self) -> Iterable[ResponseRow]:
        if self.path is None:
            return self._rows
        return (row for _, row in iter_responses(self.path))

    def __iter__(self) -> Iterator[PlannedResponse]:
        settings = self.settings
        keyed = keyed_judge(settings.judge)
        rules = cache_rules(settings.judge)
        records = self.dataset.by_id()
        for row in self._answers():
            record = records[row.question_id]
            question = record.question_for(row.setting)
            image = None
            if settings.judge_image and row.setting == "multimodal":
                image = self.dataset.image_path(record)
            image_sha = judge_image(image).sha256 if image else None
            checks = self._checklists[row.question_id].checks
            variant = prompt_variant(
                settings.prompt_layout,
                rules,
                question,
                row.response,
                1 if image else 0,
                len(checks),
            )
            digest = response_digest(keyed, question, row.response, image_sha, variant.version)
            keys = tuple(check_key(digest, c.text) for c in checks)
            yield PlannedResponse(row, question, checks, keys, image, variant)


def complete_answers(plan: JudgePlan) -> None:
    """Refuse a plan whose answers leave a gap: for every (model, setting) the answers
    name, every question of the dataset must be answered (an ``InputError`` naming the
    count and the first few missing)."""
    from gamut_eval.responses import complete_responses

    rows = list(plan._answers())
    by_setting: dict[str, set[str]] = {}
    for row in rows:
        by_setting.setdefault(row.setting, set()).add(row.model)
    questions = [record.id for record in plan.dataset]
    for setting, models in sorted(by_setting.items()):
        kept = [r for r in rows if r.setting == setting]
        complete_responses(kept, questions, sorted(models), [setting], source=plan.path)


FLUSH_S = 0.05
"""How often finished verdicts are committed: what a kill -9 can lose (and re-judge)."""
LONG_NOTES = 5
"""Long answers named one by one as they are reached; the rest are counted at the end."""
TICK_S = 1.0
"""How often a pass reports progress when nothing settles."""
RECENT_CHECKS = 100
RECENT_UNSCORED = 80
"""An online pass stops when at least this many of its last ``RECENT_CHECKS`` settled
checks ended unscored (fewer checks than that never stop it: a few early failures are
the unscored limit's to judge at the end)."""


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
    cache_write_tokens: int = 0
    """Prompt tokens written to the provider's cache (Anthropic reports them apart)."""
    completion_tokens: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    """Why checks ended unscored, by the first words of the reason."""
    flagged: list[tuple[str, str, str, list[str]]] = field(default_factory=list)
    """Answers with zero-width or bidi control characters: (question, model, setting,
    characters). They are judged as written, and reported."""
    long: list[tuple[str, str, str, int, int]] = field(default_factory=list)
    """Answers estimated longer than ``long_answer_tokens``: (question, model, setting,
    estimated tokens, checks to send it with)."""
    started: float = field(default_factory=time.monotonic)
    unfinished: str | None = None
    """Set by a backend that stopped with work outstanding (re-asks awaiting another batch
    round): the pass is then not complete, and its unscored rate is not judged yet."""
    waiting_until: float = 0.0
    """Wall-clock time (``time.time()``) until which the judge's server asked the pass to
    wait (a long ``Retry-After``); 0 when it did not."""
    waiting_for: str = ""
    """Why it waits (the server's reply)."""

    @property
    def done(self) -> int:
        return self.cached + self.judged

    def record(self, row: StoredVerdict) -> None:
        self.judged += 1
        self.calls += row.attempts
        self.prompt_tokens += row.prompt_tokens
        self.cached_tokens += row.cached_tokens
        self.cache_write_tokens += row.cache_write_tokens
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
            self._rendered = render_response(plan.question, plan.row.response, image, plan.variant)
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
        self.watch_unscored = False
        """Set by the online backends: the pass stops (``JudgeStalled``) when at least
        ``RECENT_UNSCORED`` of the last ``RECENT_CHECKS`` checks ended unscored."""
        self._recent: deque[bool] = deque(maxlen=RECENT_CHECKS)
        self._recent_unscored = 0
        self._recent_reasons: deque[str] = deque(maxlen=RECENT_CHECKS)

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
                self._flag_long(plan, len(todo))
            yield Pending(plan, todo)

    def _flag_hidden(self, plan: PlannedResponse) -> None:
        hidden = hidden_characters(plan.row.response)
        if hidden:
            row = plan.row
            self.stats.flagged.append((row.question_id, row.model, row.setting, hidden))

    def _flag_long(self, plan: PlannedResponse, checks: int) -> None:
        tokens = len(plan.row.response) // CHARS_PER_TOKEN
        limit = self.settings.long_answer_tokens
        if tokens <= limit:
            return
        row = plan.row
        self.stats.long.append((row.question_id, row.model, row.setting, tokens, checks))
        if len(self.stats.long) <= LONG_NOTES:
            self.note(
                f"warning: the answer to {row.question_id} by {row.model} ({row.setting}) "
                f"is about {tokens:,} tokens, more than long_answer_tokens ({limit:,}); it "
                f"is sent whole with each of its {checks} checks (about {tokens * checks:,} "
                "prompt tokens) and may not fit the judge's context"
            )

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
        if self.watch_unscored:
            self._watch(row)

    def _watch(self, row: StoredVerdict) -> None:
        """Stop the pass when most of its recent checks ended unscored: the judge no
        longer works, and going on would only add to the unscored."""
        recent = self._recent
        unscored = row.status != "ok"
        if len(recent) == recent.maxlen:
            self._recent_unscored -= recent[0]
        recent.append(unscored)
        self._recent_unscored += unscored
        if unscored:
            self._recent_reasons.append(row.reason or "")
        if len(recent) < RECENT_CHECKS or self._recent_unscored < RECENT_UNSCORED:
            return
        self.flush()
        reasons = Counter(r.split(":", 1)[0][:60] for r in self._recent_reasons)
        why = ", ".join(f"{r} x{n}" for r, n in reasons.most_common(3))
        raise JudgeStalled(
            f"the judge {self.settings.judge} stopped working: {self._recent_unscored} of the "
            f"last {RECENT_CHECKS} checks ended unscored ({why})"
        )

    def wait(self, seconds: float, why: str) -> None:
        """The judge's server asked for a wait of ``seconds``: shown while it lasts."""
        until = time.time() + seconds
        if until > self.stats.waiting_until:
            self.stats.waiting_until, self.stats.waiting_for = until, why
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
        """Commit every ``FLUSH_S``; and report progress every ``TICK_S`` even when nothing
        settles, so the display keeps time while the judge is slow, waits or fails."""
        ticked = time.monotonic()
        while True:
            await asyncio.sleep(FLUSH_S)
            self.flush()
            if time.monotonic() - ticked >= TICK_S:
                ticked = time.monotonic()
                self.event("progress")


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
        left = stats.total - stats.cached - stats.ok  # never judged, or judged unscored
        raise type(exc)(
            f"{exc}; {left:,} of {stats.total:,} checks are left unscored and "
            f"{stats.cached + stats.ok:,} done (what was judged is kept: rerun to continue "
            "once the server answers again)",
            setting=exc.settings,
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


Status = Literal["ok", "unscored"]


class VerdictRow(BaseModel):
    """One judge's verdict on one check of one answer."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    question_id: str
    """Id of the dataset record."""
    model: str
    """The model that gave the answer."""
    setting: Literal["multimodal", "text_only"]
    """The setting the answer was given in."""
    judge: str
    """The judge model, as named on the command line."""
    check_id: str
    """Id of the check in the question's checklist (``core/item-1``...)."""
    verdict: VerdictName | None
    """The verdict; ``null`` when the check is unscored (the judge could not grade it)."""
    status: Status
    """``ok`` with a verdict, ``unscored`` without."""
    reason: str | None
    """Why the check is unscored (``null`` when it has a verdict)."""
    explanation: str
    """The judge's own words for its verdict."""
    attempts: int
    """Judge calls made for this check (first ask and re-asks); 0 if it was never judged."""


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
    cells: Mapping[tuple[str, str], tuple[int, int]] = field(default_factory=dict)
    """Rows and rows without a verdict per (model, setting); the unscored limit holds for
    each (empty: for the whole report)."""

    @property
    def unscored_rate(self) -> float:
        return self.unscored / self.rows if self.rows else 0.0


Cells = dict[tuple[str, str], tuple[int, int]]
"""Rows and rows without a verdict per (model, setting)."""


def tally(rows: Iterator[VerdictRow], cells: Cells) -> Iterator[VerdictRow]:
    """``rows``, counted per (model, setting) into ``cells`` as they pass."""
    for row in rows:
        count, unscored = cells.get((row.model, row.setting), (0, 0))
        cells[row.model, row.setting] = (count + 1, unscored + (row.verdict is None))
        yield row


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


def unscored_over(
    judge: str, cells: Mapping[tuple[str, str], tuple[int, int]], limit: float
) -> list[str]:
    """One line for each (model, setting) whose share of checks ``judge`` could not grade
    is above ``limit``."""
    return [
        f"{model} / {setting}: {unscored} of {rows} checks ({100 * unscored / rows:.1f}%) "
        f"could not be graded by {judge}"
        for (model, setting), (rows, unscored) in sorted(cells.items())
        if rows and unscored / rows > limit
    ]


def unscored_limit_error(
    lines: Sequence[str], limit: float, reasons: str = ""
) -> UnscoredRateExceeded:
    """The error of checks past the unscored limit (``lines``: ``unscored_over``'s)."""
    why = f" Reasons: {reasons}." if reasons else ""
    return UnscoredRateExceeded(
        "; ".join(lines) + f"; above max_unscored_rate {limit:g} (the share of each model's "
        "checks in each setting that may go ungraded): no score should be reported from "
        f"this run.{why} Rerun to retry them, or raise max_unscored_rate",
        setting="max_unscored_rate",
    )


def check_unscored_rate(report: JudgeReport, settings: JudgeSettings) -> None:
    """Raise ``UnscoredRateExceeded`` when too many checks of a model in a setting (of the
    whole report, when it has no cells) could not be graded."""
    cells = report.cells or {("all models", "all settings"): (report.rows, report.unscored)}
    lines = unscored_over(settings.judge, cells, settings.max_unscored_rate)
    if not lines:
        return
    reasons = ", ".join(f"{r} x{n}" for r, n in report.stats.reasons.most_common(5))
    raise unscored_limit_error(lines, settings.max_unscored_rate, reasons or "see the rows")


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
    # Verdicts written into a run folder wait for no run that holds it: refused at once.
    store_lock = store_path.with_name(store_path.name + ".lock")
    into = out if backend.exports_rows else None
    with (
        hold_run_folder_of(into, besides=store_lock if backend.writes_store else None),
        open_store(store_path, backend, wait_for_store_s) as store,
    ):
        stats = judge_pass(plan, backend, store, on_event)
        if not backend.exports_rows:
            return JudgeReport(stats, 0, 0)
        cells: Cells = {}
        rows = tally(verdict_rows(plan, store), cells)
        if out is None:  # JSONL on standard output
            count = write_verdict_rows(rows, sys.stdout)[0]
        else:  # in the format the extension names
            count = write_rows(out, (row.__dict__ for row in rows))
    report = JudgeReport(stats, count, sum(unscored for _, unscored in cells.values()), cells)
    if not stats.unfinished:
        check_unscored_rate(report, settings)
    return report
