"""Every setting of a build, declared once: how the model is called, how much a search
gathers, what the fetcher reads, and what the stages are asked for.

Plain dataclasses with no heavy import, so the ``gamut build`` options read their defaults
from here when the command loads.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from gamut_eval.errors import InputError


@dataclass(frozen=True, slots=True)
class ModelSettings:
    """How the build calls its model (mapped onto Inspect's ``GenerateConfig``)."""

    max_tokens: int = 8192
    temperature: float | None = None
    """``None`` keeps the provider's default."""
    structured_output: bool = True
    """Send the reply's JSON Schema as an Inspect ``ResponseSchema``."""
    timeout_s: int = 300
    max_retries: int = 5
    """Inspect's retries of transient failures (429, 5xx) per call."""


@dataclass(frozen=True, slots=True)
class BuildSettings:
    """Settings of a build run (recorded in every stage's ``usage.json``)."""

    max_repairs: int = 2
    """Validation errors fed back to the model at most this many times per reply."""
    max_concurrency: int = 8
    """Units of work in flight at once."""
    refresh: bool = False
    """Ignore cached units (redo and re-store them)."""
    model: ModelSettings = field(default_factory=ModelSettings)
    """How the model is called."""

    def __post_init__(self) -> None:
        if self.max_repairs < 0:
            raise InputError(f"max_repairs must be 0 or more (found: {self.max_repairs})")
        if self.max_concurrency < 1:
            raise InputError(f"max_concurrency must be at least 1 (found: {self.max_concurrency})")


@dataclass(frozen=True, slots=True)
class ResearchSettings:
    """How much a search gathers per question."""

    per_query: int = 3
    """Hits kept per query."""
    max_snippets: int = 12
    """Snippets kept per question."""
    max_queries: int = 5
    """Queries the model may plan."""

    def __post_init__(self) -> None:
        for name in ("per_query", "max_snippets", "max_queries"):
            value = getattr(self, name)
            if value < 1:
                raise InputError(f"{name} must be at least 1 (found: {value})", setting=name)

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class FetchSettings:
    """Limits of the fetcher."""

    timeout_s: float = 20.0
    """Whole request, connection to last byte."""
    max_bytes: int = 2_000_000
    """Read at most this much of a page."""
    allow_files: bool = True
    """Read ``file://`` URLs and paths. Off for web providers: a result claiming a local
    file as its source must not make the build read this machine's files."""


@dataclass(frozen=True)
class PipelineOptions:
    """The stages' options, for ``run_all``."""

    per_image: int = 5
    decisions: tuple[Path, ...] = ()
    max_rounds: int = 3
    proposals: int = 3
    research: ResearchSettings = field(default_factory=ResearchSettings)
