"""A small client for the OpenAI-compatible ``/files`` and ``/batches`` endpoints.

Only what a judge pass needs: upload a request file, create a batch, read its status, find
a batch by its input file (to adopt one created just before a crash), and stream a result
file to disk. Transport policy as in the fast executor, scaled down to a few calls a
minute: 429 / 5xx / timeouts / resets retried with full-jitter backoff (``Retry-After``
honoured), 401/403 stop the run naming the key's environment variable, other 4xx raise
``BatchError`` with the provider's message.
"""

from __future__ import annotations

import asyncio
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from gamut_eval.errors import JudgeError
from gamut_eval.judge._endpoints import Endpoint
from gamut_eval.judge._types import JudgeAuthError
from gamut_eval.judge.backends._limits import retry_after_s
from gamut_eval.judge.backends._wire import error_fields

__all__ = ["TERMINAL", "BatchClient", "BatchError", "BatchStatus"]

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
