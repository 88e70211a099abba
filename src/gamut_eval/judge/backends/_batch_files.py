"""Judge requests as OpenAI Batch API JSONL files, and their result files read back.

One line per request::

    {"custom_id": <store key>, "method": "POST", "url": "/v1/chat/completions",
     "body": <the chat-completions body the fast executor would send>}

the format OpenAI's Batch API and ``vllm run-batch`` both read. The custom id is the
verdict store's key, so a result line lands on its verdict row with no side table.
Files are split at the provider's limits (requests and bytes per file), at a response
boundary where possible so the checks of one response (one shared prefix) stay in one
file, and each file is written atomically (temporary name, fsync, rename).
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from gamut_eval.errors import InputError
from gamut_eval.judge._pass import Pending
from gamut_eval.judge._prompt import render_messages
from gamut_eval.judge._settings import JudgeSettings
from gamut_eval.judge._settle import request_messages
from gamut_eval.judge.backends._batch_store import BatchLedger
from gamut_eval.judge.backends._shape import initial_shape

__all__ = [
    "CHAT_URL",
    "BatchFile",
    "BatchFileWriter",
    "ResultLine",
    "pending_requests",
    "read_custom_ids",
    "read_results",
]

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
