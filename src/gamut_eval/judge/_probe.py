"""Fail fast: one tiny request per judge endpoint and model before any work.

A long run should not learn after minutes (or never) that the URL is dead, the model name
wrong, the key rejected or a parameter refused. Before anything is written, every distinct
(backend, judge, base URL) gets one real judge request (the same prompt, on a two-word
answer) with the client the resolved judge names, a short timeout and no transport
retries, all of them at once. A refusal the request shape can adapt to
(``_wire_openai.py``) is corrected there, and the probe returns the resolved judge again
carrying the learned shape, so the run's first request is already right. Anything else
ends the command with ``ProbeFailed`` (exit 2) naming the judge, the URL and the reason.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence

from gamut_eval.errors import InputError, JudgeError
from gamut_eval.judge._client import JudgeAuthError, JudgeCallError, JudgeUnavailable
from gamut_eval.judge._prompt import RESPONSE_FORMAT, render_messages, render_response
from gamut_eval.judge._resolve import ResolvedJudge
from gamut_eval.judge._settings import JudgeSettings

PROBE_QUESTION = "What is 2 + 2?"
PROBE_ANSWER = "4."
PROBE_CHECK = "States that it is 4."
"""The probe's request: the judge prompt on a two-word answer (what a server's request log
shows first)."""

PROBE_TIMEOUT_S = 20.0
"""Seconds one probe request may take by default: a refused connection fails at once, a
server that accepts and never answers fails after this. A ``--timeout`` other than the
default is used instead (a local server on a busy CPU can take longer to answer first)."""
_PROBED = ("fast", "inspect", "batch")
"""Backends whose endpoint is probed (offline and dry-run send nothing; Ray's replicas are
the cluster's to check)."""


class ProbeFailed(InputError):
    """A judge endpoint cannot be used as configured; nothing was sent to the others.

    Turning the ``probe`` setting off skips the check: every message says so."""

    settings = ("probe",)


_SKIP = "nothing was written (turning probe off skips this check)"


def _where(judge: ResolvedJudge) -> tuple[str, str]:
    """Where the judge is reached, and a note when its key variable is unset (a missing
    key is the likeliest reason a hosted endpoint cannot be used)."""
    if judge.client == "inspect":
        return f"provider {judge.judge.split('/', 1)[0]}", ""
    endpoint = judge.require_endpoint()
    unset = f" ({endpoint.api_key_env} is not set)" if endpoint.api_key is None else ""
    return endpoint.base_url, unset


def probe_timeout_s(settings: JudgeSettings) -> float:
    """How long the probe waits: ``PROBE_TIMEOUT_S``, or the request timeout the user chose
    when it is not the default."""
    default = JudgeSettings.model_fields["timeout_s"].default
    if settings.timeout_s != default:
        return settings.timeout_s
    return min(settings.timeout_s, PROBE_TIMEOUT_S)


async def _probe(judge: ResolvedJudge) -> ResolvedJudge:
    from gamut_eval.judge._backend_online import open_client
    from gamut_eval.judge._client_openai import OpenAIExecutor

    settings = judge.settings
    where, unset = _where(judge)
    messages = render_messages(render_response(PROBE_QUESTION, PROBE_ANSWER), PROBE_CHECK)
    response_format = RESPONSE_FORMAT if settings.structured_output else None
    wait = probe_timeout_s(settings)
    quick = {"timeout_s": wait, "max_retries": 0, "concurrency": 1}
    client = open_client(judge, settings.model_copy(update=quick))
    try:
        await asyncio.wait_for(client.complete(messages, response_format), wait + 5)
    except JudgeAuthError as exc:
        raise ProbeFailed(f"judge {settings.judge} at {where}: {exc}") from None
    except JudgeCallError as exc:
        if not (isinstance(exc, JudgeUnavailable) and exc.throttled):
            if not exc.reason.startswith("the request timed out"):
                raise _failed(settings, where, exc.reason + unset) from None
            reason = f"the request timed out: no reply in {wait:g} s (a longer timeout_s waits)"
            raise _failed(settings, where, reason + unset, ("timeout_s",)) from None
        # a 429 that asks to wait: the endpoint, the model and the key answered; the run
        # meets the throttle with its own retries (and learns the request shape there)
    except JudgeError as exc:  # the client could not be made (a missing SDK, say)
        raise ProbeFailed(f"{exc}; {_SKIP}") from None
    except TimeoutError:
        raise _failed(settings, where, "no reply in time" + unset) from None
    finally:
        await client.aclose()
    if not isinstance(client, OpenAIExecutor):
        return judge
    return dataclasses.replace(judge, shape=dataclasses.replace(client.shape))


def _failed(
    settings: JudgeSettings, where: str, reason: str, first: tuple[str, ...] = ()
) -> ProbeFailed:
    """The probe's refusal; ``first``: the settings the reason names."""
    return ProbeFailed(
        f"judge {settings.judge} at {where} cannot be used: {reason}. Check the model name, "
        "the URL (base_url or the provider's *_BASE_URL variable) and the key; nothing was "
        f"sent to the other judges and {_SKIP}",
        setting=(*first, "base_url", "probe"),
    )


def probe_judges(judges: Sequence[ResolvedJudge]) -> list[ResolvedJudge]:
    """Probe each judge that asks for it (``settings.probe``) and whose backend sends to
    it, concurrently; the judges again, in order, each probed one carrying the request
    shape it learned. Raises ``ProbeFailed`` for the first that fails."""

    def wanted(judge: ResolvedJudge) -> bool:
        return judge.settings.probe and judge.backend in _PROBED

    def where(judge: ResolvedJudge) -> tuple[str, str, str | None]:
        return judge.backend, judge.judge, judge.settings.base_url

    distinct = {where(j): j for j in judges if wanted(j)}
    if not distinct:
        return list(judges)

    async def main() -> list[ResolvedJudge]:
        return list(await asyncio.gather(*(_probe(j) for j in distinct.values())))

    probed = dict(zip(distinct, asyncio.run(main()), strict=True))
    return [
        dataclasses.replace(j, shape=probed[where(j)].shape) if wanted(j) else j for j in judges
    ]
