"""A judge setting, resolved once: its backend, its endpoint, the client that reaches it.

``resolve_judge`` turns ``JudgeSettings`` (and a backend name, when a command picks one:
``dry-run``, say) into a frozen ``ResolvedJudge`` that every later step reads. The backend
registry (``backends.make_backend``) makes the backend from it, the probe (``_probe.py``)
sends its request with the client it names and returns it again carrying the learned
request shape, and the online backend opens its clients from it. Nothing after this works
out the backend, the endpoint or the client again, so a backend's name and the client it
sends with cannot disagree: ``inspect`` always sends through Inspect AI.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from gamut_eval.errors import InputError
from gamut_eval.judge._endpoints import Endpoint, Wire, default_backend, resolve_endpoint
from gamut_eval.judge._offline import OFFLINE_JUDGE
from gamut_eval.judge._reference import REFERENCE_JUDGE
from gamut_eval.judge._settings import ONLINE_BACKENDS, JudgeSettings

if TYPE_CHECKING:
    from gamut_eval.judge.backends._shape import RequestShape

__all__ = ["ClientKind", "ResolvedJudge", "backend_name", "resolve_judge"]

ClientKind = Literal["openai", "anthropic", "gemini", "inspect"]
"""The client one request is sent with: the fast clients by wire protocol (``openai``:
``FastExecutor``, ``anthropic``: ``AnthropicExecutor``, ``gemini``: ``GeminiExecutor``),
or Inspect AI's model API (``InspectExecutor``)."""

_BUILT_IN = ("offline", "reference", "dry-run")
"""Backends that send nothing: no endpoint, no client."""
_OPENAI_ONLY = ("batch", "ray")
"""Backends that send OpenAI chat-completion bodies whatever the judge's provider."""


@dataclass(frozen=True)
class ResolvedJudge:
    """One judge as every step after the settings sees it."""

    settings: JudgeSettings
    backend: str
    """The registry name (``fast``, ``inspect``, ``offline``, ``reference``, ``batch``,
    ``ray``, ``dry-run``); ``auto`` is already decided."""
    endpoint: Endpoint | None = None
    """Where requests go; None through Inspect, for the built-in judges and the dry run,
    and when the endpoint could not be resolved (``problem``)."""
    replicas: tuple[Endpoint, ...] = ()
    """The endpoints requests are spread over: ``(endpoint,)``, or one per base URL of a
    Ray pass over several replicas."""
    wire: Wire | None = None
    """The request format the endpoint speaks; None where no endpoint is reached directly."""
    client: ClientKind | None = None
    """The client that answers one request; None for backends that send nothing."""
    problem: str = ""
    """Why a backend that needs an endpoint has none; raised when the endpoint is needed
    (a pass that only ingests batch results needs none)."""
    shape: RequestShape | None = None
    """How the endpoint takes its parameters, as a probe learned it (fast OpenAI client)."""

    @property
    def judge(self) -> str:
        """The judge's model id, as recorded with every verdict."""
        return self.settings.judge

    def require_endpoint(self) -> Endpoint:
        """The endpoint; ``InputError`` saying why when there is none."""
        if self.endpoint is None:
            raise InputError(self.problem or f"judge {self.judge} has no endpoint")
        return self.endpoint


def backend_name(settings: JudgeSettings) -> str:
    """The registry name ``settings`` asks for (``auto``: offline for the offline judge,
    reference for the reference judge, fast where the provider speaks the OpenAI API or is
    Anthropic or Google, inspect otherwise); ``resolve_judge`` is its one caller."""
    if settings.judge == OFFLINE_JUDGE and settings.backend in ONLINE_BACKENDS:
        return "offline"
    if settings.judge == REFERENCE_JUDGE and settings.backend in ONLINE_BACKENDS:
        return "reference"
    if settings.backend != "auto":
        return settings.backend
    return default_backend(settings.judge)


def resolve_judge(
    settings: JudgeSettings, backend: str | None = None, *, replicas: Sequence[str] = ()
) -> ResolvedJudge:
    """``settings`` resolved for ``backend`` (default: the one the settings ask for).

    ``replicas``: base URLs a Ray pass spreads its requests over (default: the judge's
    own). An endpoint that cannot be resolved is not an error yet: the record carries the
    reason (``problem``), raised by the first step that needs the endpoint.
    """
    name = backend or backend_name(settings)
    if name in _BUILT_IN:
        return ResolvedJudge(settings, name)
    if name == "inspect":
        return ResolvedJudge(settings, name, client="inspect")
    openai_only = name in _OPENAI_ONLY
    urls = tuple(replicas) if name == "ray" and replicas else (settings.base_url,)
    try:
        found = tuple(
            resolve_endpoint(settings.judge, base_url=url, openai_only=openai_only) for url in urls
        )
    except InputError as exc:
        problem = str(exc)
        if name == "batch":
            problem = f"the batch backend needs an OpenAI-compatible judge endpoint: {problem}"
        return ResolvedJudge(settings, name, problem=problem)
    endpoint = found[0]
    return ResolvedJudge(settings, name, endpoint, found, endpoint.wire, client=endpoint.wire)
