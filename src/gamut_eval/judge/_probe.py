"""Fail fast: one tiny request per judge endpoint and model before any work.

A long run should not learn after minutes (or never) that the URL is dead, the model name
wrong, the key rejected or a parameter refused. Before anything is written, every distinct
(backend, judge, base URL) gets one real judge request (the same prompt, on a two-word
answer) with a short timeout and no transport retries, all of them at once. A refusal the
request shape can adapt to (``backends/_shape.py``) is corrected there, and the learned
shape is handed to the run, so the run's first request is already right. Anything else
ends the command with ``ProbeFailed`` (exit 2) naming the judge, the URL and the reason.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass

from gamut_eval.errors import InputError, JudgeError
from gamut_eval.judge._prompt import RESPONSE_FORMAT, render_messages, render_response
from gamut_eval.judge._settings import JudgeSettings
from gamut_eval.judge._types import JudgeAuthError, JudgeCallError
from gamut_eval.judge.backends import backend_name
from gamut_eval.judge.backends._shape import RequestShape

__all__ = [
    "PROBE_CHECK",
    "PROBE_QUESTION",
    "PROBE_TIMEOUT_S",
    "ProbeFailed",
    "ProbeResult",
    "probe_judges",
]

PROBE_QUESTION = "What is 2 + 2?"
PROBE_ANSWER = "4."
PROBE_CHECK = "States that it is 4."
"""The probe's request: the judge prompt on a two-word answer (what a server's request log
shows first)."""

PROBE_TIMEOUT_S = 20.0
"""Seconds one probe request may take: a refused connection fails at once, a server that
accepts and never answers fails after this."""
_PROBED = ("fast", "inspect", "batch")
"""Backends whose endpoint is probed (offline and dry-run send nothing; Ray's replicas are
the cluster's to check)."""


class ProbeFailed(InputError):
    """A judge endpoint cannot be used as configured; nothing was sent to the others."""


@dataclass(frozen=True)
class ProbeResult:
    """What one probe learned."""

    judge: str
    where: str
    """The endpoint's base URL, or the provider for judges reached through Inspect."""
    shape: RequestShape | None
    """How the endpoint takes its parameters (fast client); None through Inspect."""
    seconds: float


def _where(settings: JudgeSettings) -> tuple[str, str]:
    """Where the judge is reached, and a note when its key variable is unset (a missing
    key is the likeliest reason a hosted endpoint cannot be used)."""
    if backend_name(settings) == "inspect":
        return f"provider {settings.judge.split('/', 1)[0]}", ""
    from gamut_eval.judge._endpoints import resolve_endpoint

    endpoint = resolve_endpoint(settings.judge, base_url=settings.base_url)
    unset = f" ({endpoint.api_key_env} is not set)" if endpoint.api_key is None else ""
    return endpoint.base_url, unset


def _probe_settings(settings: JudgeSettings) -> JudgeSettings:
    quick = {"timeout_s": min(settings.timeout_s, PROBE_TIMEOUT_S), "max_retries": 0}
    backend = "fast" if backend_name(settings) == "batch" else settings.backend
    return settings.model_copy(update={**quick, "concurrency": 1, "backend": backend})


async def _probe(settings: JudgeSettings) -> ProbeResult:
    from gamut_eval.judge.backends._online import make_client

    where, unset = _where(settings)
    quick = _probe_settings(settings)
    messages = render_messages(render_response(PROBE_QUESTION, PROBE_ANSWER), PROBE_CHECK)
    response_format = RESPONSE_FORMAT if settings.structured_output else None
    started = time.monotonic()
    client = make_client(quick)
    try:
        await asyncio.wait_for(client.complete(messages, response_format), PROBE_TIMEOUT_S + 5)
    except JudgeAuthError as exc:
        raise ProbeFailed(f"judge {settings.judge} at {where}: {exc}") from None
    except JudgeCallError as exc:
        raise ProbeFailed(_message(settings, where, exc.reason + unset)) from None
    except JudgeError as exc:  # the client could not be made (a missing SDK, say)
        raise ProbeFailed(f"{exc}; nothing was written (--no-probe skips this check)") from None
    except TimeoutError:
        raise ProbeFailed(_message(settings, where, "no reply in time" + unset)) from None
    finally:
        await client.aclose()
    shape = getattr(client, "shape", None)
    learned = dataclasses.replace(shape) if isinstance(shape, RequestShape) else None
    return ProbeResult(settings.judge, where, learned, time.monotonic() - started)


def _message(settings: JudgeSettings, where: str, reason: str) -> str:
    return (
        f"judge {settings.judge} at {where} cannot be used: {reason}. Check the model name, "
        "the URL (--base-url or the provider's *_BASE_URL variable) and the key; nothing was "
        "sent to the other judges and nothing was written (--no-probe skips this check)"
    )


def probe_judges(judges: Sequence[JudgeSettings]) -> dict[str, ProbeResult]:
    """Probe each judge that asks for it (``settings.probe``), concurrently; the results by
    judge name. Raises ``ProbeFailed`` for the first that fails."""
    wanted = [s for s in judges if s.probe and backend_name(s) in _PROBED]
    if not wanted:
        return {}
    distinct = {(backend_name(s), s.judge, s.base_url): s for s in wanted}

    async def main() -> list[ProbeResult]:
        return list(await asyncio.gather(*(_probe(s) for s in distinct.values())))

    return {result.judge: result for result in asyncio.run(main())}
