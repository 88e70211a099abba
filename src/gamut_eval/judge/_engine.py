"""The judge engine: (response, check) pairs in, verdict rows in the store out.

Streaming by design: responses are read lazily, keys are looked up in the store one
response at a time, and a bounded queue feeds ``concurrency`` workers, so memory does not
grow with the size of the run. Each check is judged independently; malformed replies are
re-asked a bounded number of times and then recorded as unscored with the reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from gamut_eval.dataset import Dataset
from gamut_eval.judge._parse import parse_reply
from gamut_eval.judge._prompt import (
    PROMPT_VERSION,
    RESPONSE_FORMAT,
    JudgeImage,
    RenderedResponse,
    check_key,
    hidden_characters,
    render_messages,
    render_response,
    response_digest,
)
from gamut_eval.judge._settings import JudgeSettings
from gamut_eval.judge._store import StoredVerdict, VerdictStore
from gamut_eval.judge._types import (
    ChatMessage,
    Completion,
    Executor,
    JudgeCallError,
)
from gamut_eval.responses import ResponseRow, iter_responses
from gamut_eval.rubric import Check

__all__ = [
    "JudgeStats",
    "PlannedResponse",
    "judge_checks",
    "judge_one",
    "judge_planned",
    "plan_responses",
]

REASK = (
    "Your previous reply was not a valid verdict ({error}). Reply again with only the JSON "
    'object {{"explanation": "...", "verdict": "meets" | "partially_meets" | "missing" | '
    '"contradicts"}} for the same check.'
)
_FLUSH_S = 0.05
"""How often finished verdicts are committed: what a kill -9 can lose (and re-judge)."""


@dataclass(frozen=True, slots=True)
class PlannedResponse:
    """One response with its checks and their store keys (no prompt rendered yet)."""

    row: ResponseRow
    question: str
    """The question as the model was asked it in this setting."""
    checks: tuple[Check, ...]
    keys: tuple[str, ...]
    image_path: Path | None


@lru_cache(maxsize=64)
def _image(path: Path) -> JudgeImage:
    return JudgeImage.from_path(path)


def plan_responses(
    dataset: Dataset, responses_path: str | Path, settings: JudgeSettings
) -> Iterator[PlannedResponse]:
    """Stream every (response, checklist) of a validated responses file, with keys."""
    records = dataset.by_id()
    checklists = dataset.checklists()
    for _, row in iter_responses(responses_path):
        record = records[row.question_id]
        question = record.question_for(row.setting)
        image = None
        if settings.judge_image and row.setting == "multimodal":
            image = dataset.image_path(record)
        image_sha = _image(image).sha256 if image else None
        digest = response_digest(settings.judge, question, row.response, image_sha)
        checks = checklists[row.question_id].checks
        keys = tuple(check_key(digest, c.text) for c in checks)
        yield PlannedResponse(row, question, checks, keys, image)


@dataclass
class JudgeStats:
    """What a run did; ``progress`` callbacks receive it after each verdict."""

    total: int = 0
    cached: int = 0
    judged: int = 0
    ok: int = 0
    unscored: int = 0
    calls: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    flagged: list[tuple[str, str, str, list[str]]] = field(default_factory=list)
    """Responses with zero-width or bidi control characters: (question, model, setting,
    characters). They are judged as written, and reported."""
    started: float = field(default_factory=time.monotonic)

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
            self.reasons[_reason_class(row.reason or "")] += 1


def _reason_class(reason: str) -> str:
    """A short bucket for a reason, for progress and summaries."""
    return reason.split(":", 1)[0][:40]


@dataclass(frozen=True, slots=True)
class _Work:
    key: str
    check_text: str
    rendered: RenderedResponse


class _Writer:
    """Buffers finished verdicts and commits them every ``_FLUSH_S`` seconds."""

    def __init__(self, store: VerdictStore) -> None:
        self.store = store
        self.buffer: list[StoredVerdict] = []

    def add(self, row: StoredVerdict) -> None:
        self.buffer.append(row)

    def flush(self) -> None:
        rows, self.buffer = self.buffer, []
        self.store.put(rows)

    async def run(self) -> None:
        while True:
            await asyncio.sleep(_FLUSH_S)
            self.flush()


async def judge_one(executor: Executor, work: _Work, settings: JudgeSettings) -> StoredVerdict:
    """Judge one check: bounded re-asks on malformed replies, never raises on a bad reply."""
    messages: list[ChatMessage] = render_messages(work.rendered, work.check_text)
    fmt = RESPONSE_FORMAT if settings.structured_output else None
    usage = [0, 0, 0]
    latency = 0.0
    error = ""
    for attempt in range(1, settings.max_reasks + 2):
        try:
            completion = await executor.complete(messages, fmt)
        except JudgeCallError as exc:
            return _row(work, settings, None, "", exc.reason, attempt, usage, latency)
        _add_usage(usage, completion)
        latency += completion.latency_s
        parsed = parse_reply(completion.text, completion.refusal)
        if parsed.verdict is not None:
            return _row(
                work,
                settings,
                parsed.verdict.value,
                parsed.explanation,
                None,
                attempt,
                usage,
                latency,
            )
        error = parsed.error or "invalid reply"
        messages = [
            *messages,
            {"role": "assistant", "content": completion.text},
            {"role": "user", "content": REASK.format(error=error[:200])},
        ]
    reason = f"unparseable: {error} (after {settings.max_reasks + 1} attempts)"
    return _row(work, settings, None, "", reason, settings.max_reasks + 1, usage, latency)


def _add_usage(usage: list[int], completion: Completion) -> None:
    usage[0] += completion.prompt_tokens
    usage[1] += completion.completion_tokens
    usage[2] += completion.cached_tokens


def _row(
    work: _Work,
    settings: JudgeSettings,
    verdict: str | None,
    explanation: str,
    reason: str | None,
    attempts: int,
    usage: list[int],
    latency_s: float,
) -> StoredVerdict:
    return StoredVerdict(
        key=work.key,
        judge=settings.judge,
        prompt_version=PROMPT_VERSION,
        verdict=verdict,
        explanation=explanation,
        status="ok" if verdict is not None else "unscored",
        reason=reason,
        attempts=attempts,
        prompt_tokens=usage[0],
        completion_tokens=usage[1],
        cached_tokens=usage[2],
        latency_ms=latency_s * 1000,
        created_at=time.time(),
    )


async def judge_planned(
    plans: Iterable[PlannedResponse],
    executor: Executor,
    store: VerdictStore,
    settings: JudgeSettings,
    stats: JudgeStats,
    on_progress: Callable[[JudgeStats], Any] | None = None,
) -> None:
    """Judge every check of ``plans`` that the store does not already hold.

    Commits as it goes; on any exit (an auth failure, Ctrl-C) what finished is committed.
    """
    queue: asyncio.Queue[_Work | None] = asyncio.Queue(maxsize=settings.concurrency * 2)
    writer = _Writer(store)
    seen: set[int] = set()

    async def produce() -> None:
        for plan in plans:
            pending = _pending(plan, store, seen, stats)
            if on_progress is not None and len(pending) < len(plan.keys):
                on_progress(stats)
            if not pending:
                continue
            hidden = hidden_characters(plan.row.response)
            if hidden:
                stats.flagged.append(
                    (plan.row.question_id, plan.row.model, plan.row.setting, hidden)
                )
            image = _image(plan.image_path) if plan.image_path else None
            rendered = render_response(plan.question, plan.row.response, image)
            for key, check in pending:
                await queue.put(_Work(key, check.text, rendered))
        for _ in range(settings.concurrency):
            await queue.put(None)

    async def work() -> None:
        while (item := await queue.get()) is not None:
            row = await judge_one(executor, item, settings)
            writer.add(row)
            stats.record(row)
            if on_progress is not None:
                on_progress(stats)

    flusher = asyncio.create_task(writer.run())
    try:
        async with asyncio.TaskGroup() as group:
            group.create_task(produce())
            for _ in range(settings.concurrency):
                group.create_task(work())
    except BaseExceptionGroup as eg:
        raise eg.exceptions[0] from None
    finally:
        flusher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await flusher
        writer.flush()


def _pending(
    plan: PlannedResponse, store: VerdictStore, seen: set[int], stats: JudgeStats
) -> list[tuple[str, Check]]:
    """Checks of ``plan`` still to judge; counts the rest as cached.

    ``seen`` de-duplicates identical (response, check) content within a run (two models
    giving the same empty answer, say), so each is sent once; it keeps 64-bit prefixes of the
    keys, not the keys, to stay small on runs of millions of checks.
    """
    done = store.done(plan.keys)
    pending = []
    for key, check in zip(plan.keys, plan.checks, strict=True):
        short = int(key[:16], 16)
        if key in done or short in seen:
            stats.cached += 1
            continue
        seen.add(short)
        pending.append((key, check))
    return pending


async def judge_checks(
    executor: Executor,
    settings: JudgeSettings,
    question: str,
    response: str,
    checks: tuple[Check, ...],
    image: JudgeImage | None = None,
    store: VerdictStore | None = None,
) -> list[StoredVerdict]:
    """Judge the checks of one response concurrently (for scorers that see one answer at a
    time); verdicts already in ``store`` are reused and new ones written to it."""
    digest = response_digest(settings.judge, question, response, image.sha256 if image else None)
    keys = [check_key(digest, c.text) for c in checks]
    known = store.get(keys) if store is not None else {}
    rendered = render_response(question, response, image)
    limit = asyncio.Semaphore(settings.concurrency)

    async def one(key: str, check: Check) -> StoredVerdict:
        cached = known.get(key)
        if cached is not None and cached.status == "ok":
            return cached
        async with limit:
            return await judge_one(executor, _Work(key, check.text, rendered), settings)

    rows = await asyncio.gather(*(one(k, c) for k, c in zip(keys, checks, strict=True)))
    if store is not None:
        store.put([r for r in rows if known.get(r.key) is not r])
    return list(rows)
