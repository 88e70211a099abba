"""The ``batch`` judge backend: provider batch APIs (half price) and ``vllm run-batch``.

A pass is a few rounds. Round one writes every check the store lacks as Batch API JSONL
(``write_requests``), uploads each file to ``/files``, creates a batch on ``/batches``
(``BatchClient``), polls it, downloads the output and error files and ingests them
(``Ingester``). Malformed replies come back as re-asks, which the next round sends with
their conversation, up to ``max_reasks``; errors inside a batch are stored unscored with
the reason.

Resumable: each file's job (file id, batch id, state) is written to the store's database
(``BatchLedger``) before the next step, so a restart collects what was submitted instead
of submitting it again. A crash between creating a batch and recording its id is covered
too: a job left at ``uploaded`` first looks for a batch made from its file.

Offline: with ``write_only`` the backend only writes the files (for ``vllm run-batch``),
and with ``ingest`` it reads result files back.

The ledger: what a batch run must remember across restarts, kept in the verdict store's
own file. Two tables, added beside ``verdicts`` with ``CREATE TABLE IF NOT EXISTS`` (a store written
before they existed opens unchanged; readers of ``verdicts`` never see them):

- ``batch_jobs``: one row per batch file, from written to ingested, with the provider's
  file and batch ids. A restart reads it to *collect* what was submitted instead of
  submitting it again (a batch is billed once).
- ``batch_reasks``: checks whose reply was not a valid verdict, with the conversation so
  far, so the next round (in this process or the next) re-asks them as the online backends do.

They go through the store's connection: the store's ``flock`` already makes this process
the only writer, and one connection means one transaction order, so there is no second
writer to wait for (``database is locked`` is impossible by construction).

The files: judge requests as OpenAI Batch API JSONL files, and their result files read
back. One line per request::

    {"custom_id": <store key>, "method": "POST", "url": "/v1/chat/completions",
     "body": <the chat-completions body the OpenAI client would send>}

the format OpenAI's Batch API and ``vllm run-batch`` both read. The custom id is the
verdict store's key, so a result line lands on its verdict row with no side table.
Files are split at the provider's limits (requests and bytes per file), at a response
boundary where possible so the checks of one response (one shared prefix) stay in one
file, and each file is written atomically (temporary name, fsync, rename).

Ingesting: batch results go into the verdict store through the online engine's rules.
Every result line is settled by ``_prompt.settle``: a valid verdict is stored, a malformed
reply becomes a re-ask for the next round (until ``max_reasks``), an error inside the batch
(the line's ``error``, a non-200 status, an unusable body) is stored unscored with the
reason, which the store never counts as done (errors are not cached). Ingesting is
idempotent: a key that already has a verdict is skipped, and a reply already counted
towards a re-ask (same result id) is not counted twice, so a crash mid-ingest is repaired
by ingesting the same file again.

The API client: a small client for the OpenAI-compatible ``/files`` and ``/batches``
endpoints. Only what a judge pass needs: upload a request file, create a batch, read its
status, find a batch by its input file (to adopt one created just before a crash), and
stream a result file to disk. Transport policy as in the OpenAI client, scaled down to a few
calls a minute: 429 / 5xx / timeouts / resets retried with full-jitter backoff
(``Retry-After`` honoured), 401/403 stop the run naming the key's environment variable,
other 4xx raise ``BatchError`` with the provider's message.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import aiohttp

from gamut_eval.errors import GamutError, InputError, JudgeError
from gamut_eval.judge._client import Completion, JudgeAuthError
from gamut_eval.judge._client_http import retry_after_s
from gamut_eval.judge._pass import JudgeWork, KeySet, Pending
from gamut_eval.judge._prompt import Reask, render_messages, request_messages, settle
from gamut_eval.judge._resolve import BackendOptions, Endpoint, ResolvedJudge
from gamut_eval.judge._settings import BatchSettings, JudgeSettings
from gamut_eval.judge._store import StoredVerdict, VerdictStore, chunked, keyed_rows
from gamut_eval.judge._wire_openai import (
    completion_from_body,
    error_fields,
    error_reason,
    initial_shape,
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS batch_jobs (
    job_id TEXT PRIMARY KEY,
    judge TEXT NOT NULL,
    path TEXT NOT NULL,
    requests INTEGER NOT NULL,
    state TEXT NOT NULL
        CHECK (state IN ('written', 'uploaded', 'submitted', 'ingested')),
    input_file_id TEXT,
    batch_id TEXT,
    provider_status TEXT,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS batch_reasks (
    key TEXT PRIMARY KEY,
    judge TEXT NOT NULL,
    history TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cached_tokens INTEGER NOT NULL,
    result_id TEXT NOT NULL
) WITHOUT ROWID;
"""

JobState = str
"""``written`` -> ``uploaded`` (file id known) -> ``submitted`` (batch id known) ->
``ingested`` (results in the verdict store)."""


@dataclass(frozen=True, slots=True)
class BatchJob:
    """One batch file and how far it got."""

    job_id: str
    judge: str
    path: Path
    requests: int
    state: JobState
    input_file_id: str | None = None
    batch_id: str | None = None
    provider_status: str | None = None


class BatchLedger:
    """Batch jobs and pending re-asks of one judge, in ``store``'s database file."""

    def __init__(self, store: VerdictStore, judge: str) -> None:
        # The store's own connection, on purpose (see the module docstring).
        self._db: sqlite3.Connection = store._db
        self.judge = judge
        self._db.executescript(_SCHEMA)

    # -- jobs -----------------------------------------------------------------------------

    def add_job(self, job_id: str, path: Path, requests: int) -> BatchJob:
        self._db.execute(
            "INSERT OR REPLACE INTO batch_jobs (job_id, judge, path, requests, state, updated_at)"
            " VALUES (?, ?, ?, ?, 'written', ?)",
            (job_id, self.judge, str(path), requests, time.time()),
        )
        return BatchJob(job_id, self.judge, path, requests, "written")

    def update(self, job: BatchJob, state: JobState, **ids: str | None) -> BatchJob:
        """Move ``job`` to ``state``, recording any of input_file_id, batch_id,
        provider_status given."""
        values = {
            "input_file_id": ids.get("input_file_id", job.input_file_id),
            "batch_id": ids.get("batch_id", job.batch_id),
            "provider_status": ids.get("provider_status", job.provider_status),
        }
        self._db.execute(
            "UPDATE batch_jobs SET state = ?, input_file_id = ?, batch_id = ?,"
            " provider_status = ?, updated_at = ? WHERE job_id = ?",
            (state, *values.values(), time.time(), job.job_id),
        )
        return BatchJob(job.job_id, job.judge, job.path, job.requests, state, *values.values())

    def forget(self, job: BatchJob) -> None:
        self._db.execute("DELETE FROM batch_jobs WHERE job_id = ?", (job.job_id,))

    def open_jobs(self) -> list[BatchJob]:
        """This judge's jobs not yet ingested, oldest first."""
        query = (
            "SELECT job_id, judge, path, requests, state, input_file_id, batch_id,"
            " provider_status FROM batch_jobs WHERE judge = ? AND state != 'ingested'"
            " ORDER BY updated_at, job_id"
        )
        return [
            BatchJob(r[0], r[1], Path(r[2]), r[3], r[4], r[5], r[6], r[7])
            for r in self._db.execute(query, (self.judge,))
        ]

    # -- re-asks --------------------------------------------------------------------------

    def reasks(self, keys: Sequence[str]) -> dict[str, Reask]:
        """Pending re-asks among ``keys``."""
        out: dict[str, Reask] = {}
        query = (
            "SELECT key, history, prompt_tokens, completion_tokens, cached_tokens, result_id"
            " FROM batch_reasks WHERE"
        )
        for row in keyed_rows(self._db, query, keys):
            history = tuple((str(r), str(e)) for r, e in json.loads(row[1]))
            out[row[0]] = Reask(row[0], history, row[2], row[3], row[4], row[5])
        return out

    def settle_reasks(self, pending: Iterable[Reask], finished: Iterable[str]) -> None:
        """In one transaction: record new re-asks, drop those of checks now settled."""
        rows = [
            (
                r.key,
                self.judge,
                json.dumps(r.history),
                r.prompt_tokens,
                r.completion_tokens,
                r.cached_tokens,
                r.result_id,
            )
            for r in pending
        ]
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.executemany("DELETE FROM batch_reasks WHERE key = ?", [(k,) for k in finished])
            self._db.executemany(
                "INSERT OR REPLACE INTO batch_reasks VALUES (?, ?, ?, ?, ?, ?, ?)", rows
            )
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def reask_count(self) -> int:
        query = "SELECT COUNT(*) FROM batch_reasks WHERE judge = ?"
        return int(self._db.execute(query, (self.judge,)).fetchone()[0])


CHAT_URL = "/v1/chat/completions"
_SEPARATORS = (",", ":")


@dataclass(frozen=True, slots=True)
class BatchFile:
    """One written request file."""

    job_id: str
    path: Path
    requests: int
    bytes: int


def request_line(key: str, body: dict[str, Any]) -> bytes:
    """One JSONL line (with its newline) of a batch request file."""
    line = {"custom_id": key, "method": "POST", "url": CHAT_URL, "body": body}
    return (json.dumps(line, separators=_SEPARATORS) + "\n").encode()


def pending_requests(
    pending: Iterable[Pending], ledger: BatchLedger, settings: JudgeSettings, model_name: str
) -> Iterator[list[tuple[str, bytes]]]:
    """Per answer, the request lines of its checks still to send (``JudgeWork.pending``
    decides which); a check with a pending re-ask is sent with its conversation so far."""
    for answer in pending:
        reasks = ledger.reasks([k for k, _ in answer.checks])
        rendered = answer.rendered
        template = _template(rendered, model_name, settings)
        lines = []
        for key, check in answer.checks:
            reask = reasks.get(key)
            if template is not None and reask is None:
                line = template.line(key, check.text)
            else:
                messages = request_messages(render_messages(rendered, check.text), reask)
                line = request_line(key, _body(model_name, messages, settings))
            lines.append((key, line))
        yield lines


def _body(model_name: str, messages: list[Any], settings: JudgeSettings) -> dict[str, Any]:
    """The body the fast client would first send this model (a batch has no second try
    at the shape: a refused parameter comes back as an error line)."""
    return initial_shape(model_name, settings).body(model_name, messages, settings)


_KEY_MARK = "@@gamut-key@@"
_CHECK_MARK = "@@gamut-check@@"


@dataclass(frozen=True, slots=True)
class _LineTemplate:
    """One response's request line with holes for the key and the check text.

    Serialising the whole body for every check cost more than everything else put
    together (a 1M-request pass is ~4.5 GB of JSON, mostly the same prefix 30 times).
    JSON escapes a string character by character, so escape(prefix + check) ==
    escape(prefix) + escape(check): the prefix is serialised once per response and each
    line is spliced; the bytes are exactly ``request_line``'s (a test checks)."""

    head: str
    middle: str
    tail: str

    def line(self, key: str, check_text: str) -> bytes:
        check = json.dumps(check_text.strip())[1:-1]
        return f"{self.head}{key}{self.middle}{check}{self.tail}".encode()


def _template(rendered: Any, model_name: str, settings: JudgeSettings) -> _LineTemplate | None:
    """The splice template of a text-only first ask; None where splicing does not apply
    (an image part, or a response that happens to contain a marker)."""
    messages = render_messages(rendered, _CHECK_MARK)
    content = messages[1]["content"]
    if not isinstance(content, str) or content.count(_CHECK_MARK) != 1:
        return None
    text = request_line(_KEY_MARK, _body(model_name, messages, settings)).decode()
    head, sep, rest = text.partition(_KEY_MARK)
    middle, sep2, tail = rest.partition(_CHECK_MARK)
    if not (sep and sep2) or _KEY_MARK in rest or _CHECK_MARK in tail:
        return None
    return _LineTemplate(head, middle, tail)


class BatchFileWriter:
    """Writes request lines into files of at most ``max_requests`` lines / ``max_bytes``."""

    def __init__(self, directory: Path, prefix: str, max_requests: int, max_bytes: int) -> None:
        self.directory = directory
        self.prefix = prefix
        self.max_requests = max_requests
        self.max_bytes = max_bytes
        self.files: list[BatchFile] = []
        self.too_large: list[tuple[str, int]] = []
        """(key, bytes) of single requests larger than ``max_bytes``: never written."""
        self._handle: IO[bytes] | None = None
        self._tmp: Path | None = None
        self._job_id = ""
        self._count = self._bytes = 0
        directory.mkdir(parents=True, exist_ok=True)

    def add(self, lines: list[tuple[str, bytes]]) -> None:
        """Add one response's lines, starting a new file first if they would not fit."""
        size = sum(len(b) for _, b in lines)
        fits = (
            self._count + len(lines) <= self.max_requests and self._bytes + size <= self.max_bytes
        )
        if self._handle is not None and not fits:
            self._finish()
        for key, line in lines:
            self._add_line(key, line)

    def _add_line(self, key: str, line: bytes) -> None:
        if len(line) > self.max_bytes:
            self.too_large.append((key, len(line)))
            return
        full = self._count + 1 > self.max_requests or self._bytes + len(line) > self.max_bytes
        if self._handle is not None and full:
            self._finish()
        handle = self._handle or self._start()
        handle.write(line)
        self._count += 1
        self._bytes += len(line)

    def _start(self) -> IO[bytes]:
        self._job_id = f"{self.prefix}-{len(self.files):05d}-{uuid.uuid4().hex[:8]}"
        self._tmp = self.directory / f".{self._job_id}.jsonl.tmp"
        self._handle = self._tmp.open("wb")
        self._count = self._bytes = 0
        return self._handle

    def _finish(self) -> None:
        handle, tmp = self._handle, self._tmp
        if handle is None or tmp is None:
            return
        handle.flush()
        os.fsync(handle.fileno())
        handle.close()
        path = self.directory / f"{self._job_id}.jsonl"
        os.replace(tmp, path)
        self.files.append(BatchFile(self._job_id, path, self._count, self._bytes))
        self._handle = self._tmp = None

    def close(self) -> list[BatchFile]:
        """Finish the last file; every file written, in order."""
        self._finish()
        return self.files

    def abort(self) -> None:
        """Remove a half-written file (the completed ones stay)."""
        if self._handle is not None and self._tmp is not None:
            self._handle.close()
            self._tmp.unlink(missing_ok=True)
            self._handle = self._tmp = None


@dataclass(frozen=True, slots=True)
class ResultLine:
    """One line of a batch output or error file."""

    custom_id: str
    result_id: str
    status: int | None
    """HTTP status of the request inside the batch (None when the line has no response)."""
    body: Any
    error: Any
    """The line's ``error`` object (a request that never ran), or None."""


def read_results(path: Path) -> Iterator[ResultLine]:
    """Stream a results file (OpenAI's or ``vllm run-batch``'s output format).

    A line that is not a JSON object with a ``custom_id`` is an error naming the line: a
    results file that cannot be read is not silently half-ingested.
    """
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            yield _result_line(path, number, raw)


def _result_line(path: Path, number: int, raw: bytes) -> ResultLine:
    try:
        data = json.loads(raw)
        custom_id = data["custom_id"]
    except (ValueError, LookupError, TypeError):
        torn = "; the last line is incomplete" if not raw.endswith(b"\n") else ""
        raise InputError(
            f"{path}: line {number} is not a batch result (a JSON object with `custom_id`)"
            f"{torn}: {raw[:120]!r}"
        ) from None
    response = data.get("response") or {}
    status = response.get("status_code") if isinstance(response, dict) else None
    result_id = str(data.get("id") or f"{path.name}:{number}")
    body = response.get("body") if isinstance(response, dict) else None
    return ResultLine(str(custom_id), result_id, status, body, data.get("error"))


def read_custom_ids(path: Path) -> list[str]:
    """The custom ids of a request file, in order."""
    ids = []
    with path.open("rb") as handle:
        for raw in handle:
            if raw.strip():
                ids.append(str(json.loads(raw)["custom_id"]))
    return ids


_INGEST_CHUNK = 5000
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


class Ingester:
    """Settles result lines of one judge into the pass (``work.record``); the pass keeps
    the keys that got a final row, so it does not send them again."""

    def __init__(self, work: JudgeWork, ledger: BatchLedger, known: KeySet | None = None) -> None:
        self.work = work
        self.ledger = ledger
        self.known = known
        """The keys of this run; lines for other keys are counted as unknown and skipped."""

    def ingest_file(self, path: Path) -> IngestCounts:
        counts = IngestCounts()
        for chunk in chunked(read_results(path), _INGEST_CHUNK):
            self._ingest(chunk, counts)
        return counts

    def _ingest(self, chunk: list[ResultLine], counts: IngestCounts) -> None:
        counts.lines += len(chunk)
        keys = [line.custom_id for line in chunk]
        done = self.work.store.done(keys)
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
            result = settle(key, _outcome(line), prior, self.work.settings, line.result_id)
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
        done = self.work.store.done(absent)
        priors = self.ledger.reasks(absent)
        rows = [
            settle(k, reason, priors.get(k), self.work.settings)
            for k in absent
            if k not in done and k not in self.work.settled
        ]
        verdicts = [r for r in rows if isinstance(r, StoredVerdict)]
        for row in verdicts:
            self.work.record(row)
        self.work.flush()
        self.ledger.settle_reasks((), [v.key for v in verdicts])
        return len(verdicts)


TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})
"""Batch statuses after which nothing more will run."""
_LIST_PAGES = 20
"""Pages of 100 batches searched when adopting a batch after a crash (newest first)."""


class BatchError(JudgeError):
    """The batch API refused a call, or kept failing past the retries."""


@dataclass(frozen=True, slots=True)
class BatchStatus:
    """The fields of a batch object that a judge pass reads."""

    id: str
    status: str
    input_file_id: str | None
    output_file_id: str | None
    error_file_id: str | None
    errors: str
    """The batch-level errors (why validation failed), joined; '' when none."""

    @classmethod
    def parse(cls, data: dict[str, Any]) -> BatchStatus:
        errors = data.get("errors") or {}
        items = errors.get("data") if isinstance(errors, dict) else None
        messages = [str(e.get("message", e)) for e in items or [] if isinstance(e, dict)]
        return cls(
            id=str(data["id"]),
            status=str(data.get("status", "")),
            input_file_id=data.get("input_file_id"),
            output_file_id=data.get("output_file_id"),
            error_file_id=data.get("error_file_id"),
            errors="; ".join(messages),
        )

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL


class BatchClient:
    """Calls ``{base_url}/files`` and ``{base_url}/batches`` for one endpoint."""

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        timeout_s: float = 600.0,
        max_retries: int = 6,
        backoff_base_s: float = 1.0,
    ) -> None:
        self.endpoint = endpoint
        self.max_retries = max_retries
        self.backoff_base_s = backoff_base_s
        headers = {"User-Agent": "gamut-eval (batch judge)"}
        if endpoint.api_key:
            headers["Authorization"] = f"Bearer {endpoint.api_key}"
        self._headers = headers
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)
        self._session: aiohttp.ClientSession | None = None

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None:  # made lazily: a session belongs to the running loop
            self._session = aiohttp.ClientSession(
                headers=self._headers, timeout=self._timeout, trust_env=True
            )
        return self._session

    # -- calls ----------------------------------------------------------------------------

    async def upload(self, path: Path) -> str:
        """Upload a request file (purpose ``batch``); its file id."""
        reply = await self._json("POST", "/files", upload=path)
        return str(reply["id"])

    async def create(
        self, input_file_id: str, window: str, metadata: dict[str, str]
    ) -> BatchStatus:
        body = {
            "input_file_id": input_file_id,
            "endpoint": "/v1/chat/completions",
            "completion_window": window,
            "metadata": metadata,
        }
        return BatchStatus.parse(await self._json("POST", "/batches", body=body))

    async def get(self, batch_id: str) -> BatchStatus:
        return BatchStatus.parse(await self._json("GET", f"/batches/{batch_id}"))

    async def find_by_input_file(self, input_file_id: str) -> BatchStatus | None:
        """The batch created from ``input_file_id``, if there is one among the recent ones."""
        after: str | None = None
        for _ in range(_LIST_PAGES):
            params = {"limit": "100", **({"after": after} if after else {})}
            page = await self._json("GET", "/batches", params=params)
            for item in page.get("data") or []:
                if item.get("input_file_id") == input_file_id:
                    return BatchStatus.parse(item)
            if not page.get("has_more") or not page.get("data"):
                return None
            after = str(page["data"][-1]["id"])
        return None

    async def download(self, file_id: str, dest: Path) -> None:
        """Stream a file's content to ``dest`` (atomically: a partial download never
        replaces a complete one)."""
        tmp = dest.with_name(f".{dest.name}.part")
        for attempt in range(self.max_retries + 1):
            try:
                await self._download_once(file_id, tmp)
                tmp.replace(dest)
                return
            except _Retry as retry:
                if attempt == self.max_retries:
                    raise BatchError(f"downloading {file_id}: {retry.reason}") from None
                await asyncio.sleep(self._backoff(attempt, retry.after_s))

    async def _download_once(self, file_id: str, tmp: Path) -> None:
        url = f"{self.endpoint.base_url}/files/{file_id}/content"
        try:
            async with self._open().get(url) as reply:
                if reply.status != 200:
                    self._raise_for(reply.status, await reply.read(), reply.headers)
                with tmp.open("wb") as handle:
                    async for chunk in reply.content.iter_chunked(1 << 20):
                        handle.write(chunk)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise _Retry(f"{type(exc).__name__}: {exc}") from None

    # -- transport ------------------------------------------------------------------------

    async def _json(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: dict[str, str] | None = None,
        upload: Path | None = None,
    ) -> Any:
        url = f"{self.endpoint.base_url}{path}"
        for attempt in range(self.max_retries + 1):
            try:
                if upload is None:
                    return await self._json_once(method, url, body, params, None)
                with upload.open("rb") as handle:  # streamed, and closed on every outcome
                    form = aiohttp.FormData()
                    form.add_field("purpose", "batch")
                    form.add_field(
                        "file", handle, filename=upload.name, content_type="application/jsonl"
                    )
                    return await self._json_once(method, url, body, params, form)
            except _Retry as retry:
                if attempt == self.max_retries:
                    raise BatchError(
                        f"{method} {url}: {retry.reason} (gave up after {attempt + 1} attempts)"
                    ) from None
                await asyncio.sleep(self._backoff(attempt, retry.after_s))
        raise AssertionError("unreachable")

    async def _json_once(
        self,
        method: str,
        url: str,
        body: Any,
        params: dict[str, str] | None,
        form: aiohttp.FormData | None,
    ) -> Any:
        try:
            async with self._open().request(
                method, url, json=body, params=params, data=form
            ) as reply:
                raw = await reply.read()
                if reply.status != 200:
                    self._raise_for(reply.status, raw, reply.headers)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise _Retry(f"{type(exc).__name__}: {exc}") from None
        try:
            return json.loads(raw)
        except ValueError:
            raise _Retry(f"the batch API sent a reply that is not JSON: {raw[:200]!r}") from None

    def _raise_for(self, status: int, raw: bytes, headers: Any) -> None:
        message, _ = error_fields(raw)
        if status == 429 or status >= 500 or status in (408, 409):
            raise _Retry(f"HTTP {status}: {message}", retry_after_s(headers))
        if status in (401, 403):
            raise JudgeAuthError(
                f"the batch API rejected the credentials (HTTP {status}); set "
                f"{self.endpoint.api_key_env} [{self.endpoint.base_url}: {message}]"
            )
        raise BatchError(f"the batch API refused the call (HTTP {status}): {message}")

    def _backoff(self, attempt: int, after_s: float | None) -> float:
        jitter = random.uniform(0, min(60.0, self.backoff_base_s * 2**attempt))
        return (after_s or 0.0) + jitter


class _Retry(Exception):
    """A failed call worth repeating."""

    def __init__(self, reason: str, after_s: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.after_s = after_s


class BatchesPending(GamutError):
    """Batches are still running at the provider; rerun the same command to collect them."""


def batch_directory(store: VerdictStore, batch: BatchSettings) -> Path:
    """Where request and result files go: ``--batch-dir`` or ``<store>.batches/``."""
    return batch.directory or store.path.with_name(store.path.name + ".batches")


def _slug(judge: str) -> str:
    return re.sub(r"[^A-Za-z0-9.-]+", "_", judge)[:60]


def write_round(
    pending: Iterable[Pending],
    work: JudgeWork,
    ledger: BatchLedger,
    batch: BatchSettings,
    directory: Path,
    model_name: str,
) -> list[BatchFile]:
    """Write one round's request files. Requests too large for any file (an image past
    the byte limit) are never sent: they are recorded unscored with the reason."""
    prefix = f"{_slug(work.settings.judge)}-{time.strftime('%Y%m%dT%H%M%S')}"
    writer = BatchFileWriter(directory, prefix, batch.max_requests, batch.max_bytes)
    try:
        for lines in pending_requests(pending, ledger, work.settings, model_name):
            writer.add(lines)
    except BaseException:
        writer.abort()
        raise
    files = writer.close()
    for key, size in writer.too_large:
        reason = f"request of {size} bytes is larger than a batch file may be ({batch.max_bytes})"
        row = settle(key, reason, None, work.settings)
        if isinstance(row, StoredVerdict):
            work.record(row)
    work.flush()
    return files


@dataclass
class BatchRun:
    """One judge's batch pass: rounds of files until every check is settled."""

    work: JudgeWork
    store: VerdictStore
    batch: BatchSettings
    client: BatchClient
    model_name: str
    ledger: BatchLedger = field(init=False)
    ingester: Ingester = field(init=False)
    directory: Path = field(init=False)
    _deadline: float = field(init=False)

    def __post_init__(self) -> None:
        self.ledger = BatchLedger(self.store, self.work.settings.judge)
        self.ingester = Ingester(self.work, self.ledger)
        self.directory = batch_directory(self.store, self.batch)
        wait = self.batch.max_wait_s
        self._deadline = time.monotonic() + wait if wait is not None else float("inf")

    async def run(self) -> None:
        """Collect batches left by an earlier process, then send rounds until every check
        is settled. Raises ``BatchesPending`` if ``max_wait_s`` ran out first."""
        resumed = self.ledger.open_jobs()
        if resumed:
            self.work.note(f"resuming {len(resumed)} batch job(s) recorded in {self.store.path}")
            await self._run_jobs(resumed, resumed=True)
        for round_number in range(self.work.settings.max_reasks + 2):
            if self.ledger.open_jobs():
                break
            pending = self.work.pending(count_cached=round_number == 0)
            files = write_round(
                pending, self.work, self.ledger, self.batch, self.directory, self.model_name
            )
            if not files:
                break
            requests = sum(f.requests for f in files)
            self.work.note(f"round {round_number + 1}: {requests} requests in {len(files)} file(s)")
            jobs = [self.ledger.add_job(f.job_id, f.path, f.requests) for f in files]
            await self._run_jobs(jobs, resumed=False)
        self._raise_if_pending()

    def _raise_if_pending(self) -> None:
        still = self.ledger.open_jobs()
        if still:
            ids = ", ".join(j.batch_id or j.job_id for j in still[:5])
            raise BatchesPending(
                f"{len(still)} batch(es) still running at the provider ({ids}); their ids are "
                f"kept in {self.store.path}: run the same command again to collect them"
            )

    async def _run_jobs(self, jobs: list[BatchJob], *, resumed: bool) -> None:
        limit = asyncio.Semaphore(self.batch.max_active or len(jobs) or 1)

        async def one(job: BatchJob) -> None:
            async with limit:
                await self._drive(job, resumed)

        try:
            async with asyncio.TaskGroup() as group:
                for job in jobs:
                    group.create_task(one(job))
        except BaseExceptionGroup as group_error:  # the first failure, as itself (exit codes)
            raise group_error.exceptions[0] from None

    async def _drive(self, job: BatchJob, resumed: bool) -> None:
        """Take one job from wherever it stopped to ingested (or to the deadline)."""
        if job.state in ("written", "uploaded") and not job.path.exists():
            self.work.note(
                f"{job.job_id}: request file {job.path} is gone; its checks are re-planned"
            )
            self.ledger.forget(job)
            return
        if job.state == "written":
            file_id = await self.client.upload(job.path)
            job = self.ledger.update(job, "uploaded", input_file_id=file_id)
        if job.state == "uploaded":
            job = await self._submit(job, resumed)
        status = await self._poll(job)
        if status is not None:
            await self._collect(job, status)

    async def _submit(self, job: BatchJob, resumed: bool) -> BatchJob:
        assert job.input_file_id is not None
        found = await self.client.find_by_input_file(job.input_file_id) if resumed else None
        status = found or await self.client.create(
            job.input_file_id,
            self.batch.completion_window,
            {"gamut_job": job.job_id, "gamut_judge": self.work.settings.judge[:500]},
        )
        self.work.note(f"{job.job_id}: batch {status.id} ({job.requests} requests) {status.status}")
        return self.ledger.update(
            job, "submitted", batch_id=status.id, provider_status=status.status
        )

    async def _poll(self, job: BatchJob) -> BatchStatus | None:
        """Wait for a terminal status; None if the deadline comes first."""
        assert job.batch_id is not None
        last = job.provider_status
        while True:
            status = await self.client.get(job.batch_id)
            if status.status != last:
                self.work.note(f"batch {status.id}: {status.status}")
                self.ledger.update(job, "submitted", provider_status=status.status)
                last = status.status
            if status.terminal:
                return status
            if time.monotonic() + self.batch.poll_interval_s > self._deadline:
                return None
            await asyncio.sleep(self.batch.poll_interval_s)

    async def _collect(self, job: BatchJob, status: BatchStatus) -> None:
        seen: set[str] = set()
        downloaded = []
        for file_id, kind in ((status.output_file_id, "output"), (status.error_file_id, "errors")):
            if file_id:
                dest = self.directory / f"{job.job_id}.{kind}.jsonl"
                await self.client.download(file_id, dest)
                seen |= self.ingester.ingest_file(dest).seen
                downloaded.append(dest)
        ids = read_custom_ids(job.path) if job.path.exists() else []
        detail = f": {status.errors}" if status.errors else ""
        reason = f"no result in batch {status.id} ({status.status}{detail})"
        missing = self.ingester.missing(ids, seen, reason)
        self.ledger.update(job, "ingested", provider_status=status.status)
        for path in (job.path, *downloaded):  # the verdicts are in the store now
            path.unlink(missing_ok=True)
        self.work.note(
            f"batch {status.id} {status.status}: {len(seen)} results ingested"
            + (f", {missing} requests without a result" if missing else "")
        )
        self.work.event("progress")


def ingest_files(paths: Iterable[Path], work: JudgeWork, store: VerdictStore) -> IngestCounts:
    """Ingest result files written offline (``vllm run-batch -o``); re-asks stay pending
    in the store for the next ``write`` round. Lines for keys that are not checks of this
    pass are skipped and counted."""
    known = KeySet()
    for answer in work.plan:
        for key in answer.keys:
            known.add(key)
    ledger = BatchLedger(store, work.settings.judge)
    ingester = Ingester(work, ledger, known)
    total = IngestCounts()
    for path in paths:
        if not path.is_file():
            raise InputError(f"{path}: batch results file not found")
        counts = ingester.ingest_file(path)
        for name in ("lines", "stored", "reasks", "skipped", "unknown"):
            setattr(total, name, getattr(total, name) + getattr(counts, name))
    total.reasks = ledger.reask_count()
    return total


@dataclass(frozen=True)
class BatchWriteReport:
    """What a write-only batch pass wrote."""

    files: list[BatchFile]
    requests: int
    cached: int
    """Checks the store already held (not written)."""
    reasks: int
    """Requests among ``requests`` that re-ask a malformed verdict."""
    directory: Path


@dataclass
class BatchBackend:
    """The ``batch`` backend: submit and collect rounds of batch files; or only write the
    files (``write_only``), or only ingest result files (``ingest``). The judge's endpoint
    is OpenAI-compatible (the batch API lives beside chat completions)."""

    judge: ResolvedJudge
    batch: BatchSettings
    write_only: bool = False
    ingest: tuple[Path, ...] = ()
    client_factory: Callable[[Endpoint], BatchClient] | None = None
    name: str = "batch"
    writes_store: bool = True
    written: BatchWriteReport | None = None
    """What ``write_only`` wrote."""
    ingested: IngestCounts | None = None
    """What ``ingest`` ingested."""

    @property
    def exports_rows(self) -> bool:
        return not self.write_only

    @property
    def probed(self) -> bool:
        """Only a pass that submits batches talks to the endpoint."""
        return not (self.write_only or self.ingest)

    async def run(self, work: JudgeWork) -> None:
        work.track_settled = True  # rounds read the plan again and skip what they settled
        store = work.store
        if not isinstance(store, VerdictStore):
            raise InputError(
                "the batch backend needs a verdict store file (store)", setting="store"
            )
        if self.ingest:
            self.ingested = ingest_files(self.ingest, work, store)
            if self.ingested.reasks:
                work.stats.unfinished = f"{self.ingested.reasks} checks await a re-ask"
        elif self.write_only:
            self.written = self._write(work, store)
            work.stats.unfinished = "request files written; nothing sent"
        else:
            endpoint = self.judge.require_endpoint()
            timeout = max(work.settings.timeout_s, 600.0)
            client = (self.client_factory or (lambda e: BatchClient(e, timeout_s=timeout)))(
                endpoint
            )
            try:
                await BatchRun(work, store, self.batch, client, endpoint.model_name).run()
            finally:
                await client.aclose()

    def _write(self, work: JudgeWork, store: VerdictStore) -> BatchWriteReport:
        ledger = BatchLedger(store, work.settings.judge)
        reasks = ledger.reask_count()
        directory = batch_directory(store, self.batch)
        model_name = self.judge.require_endpoint().model_name
        files = write_round(work.pending(), work, ledger, self.batch, directory, model_name)
        requests = sum(f.requests for f in files)
        cached = work.stats.cached
        return BatchWriteReport(files, requests, cached, min(reasks, requests), directory)


def batch_backend(judge: ResolvedJudge, options: BackendOptions) -> BatchBackend:
    if options.batch_write_only and options.batch_ingest:
        raise InputError(
            "batch_write_only and batch_ingest are separate steps: give one",
            setting=("batch_write_only", "batch_ingest"),
        )
    return BatchBackend(
        judge, options.batch, options.batch_write_only, options.batch_ingest, options.client_factory
    )
