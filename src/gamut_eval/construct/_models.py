"""Artefacts shared by every stage: provenance, errors, reports, images; token usage is the
project's one ``Usage`` (``gamut_eval._usage``).

Every row a stage writes is one of these Pydantic models (or carries one), so a build folder
can be read back and checked field by field; nothing crosses modules as a raw dict.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from gamut_eval._usage import Usage

__all__ = [
    "STAGES",
    "ImageRecord",
    "Provenance",
    "StageError",
    "StageReport",
    "StageUsage",
]

FROZEN = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

STAGES: tuple[str, ...] = ("questions", "review", "evidence", "draft", "refine", "text-only")
"""The stages in pipeline order; each is a ``gamut build`` subcommand and a workdir folder."""

Popularity = Literal["head", "torso", "tail"]


class Provenance(BaseModel):
    """Where an artefact came from: enough to reproduce it and to know when it is stale."""

    model_config = FROZEN

    stage: str
    """The stage that made it."""
    model: str | None
    """The Inspect model that wrote it (``None`` when no model was involved)."""
    prompt_version: str | None
    """Version of the prompt template used; a new version never reuses cached results."""
    inputs: dict[str, str]
    """Content hash (sha256) of each input, by name (``image``, ``question``, ``draft``...)."""
    key: str
    """The cache key: a hash of stage, model, prompt version, inputs and options."""
    usage: Usage = Usage(calls=0)
    """Tokens spent making it (the first time; a cached artefact costs nothing again)."""


class StageError(BaseModel):
    """A unit of work (one image or question) that failed; other units went on."""

    model_config = FROZEN

    id: str
    """The image or question id."""
    stage: str
    """The stage it failed in."""
    kind: str
    """Short machine-readable kind: ``not-json``, ``invalid``, ``model-call``, ``search``..."""
    message: str
    """What went wrong, in words."""
    details: tuple[str, ...] = ()
    """The last validation errors, one per line, when the model's output was rejected."""
    model: str | None = None
    """The model involved, if any."""
    prompt_version: str | None = None
    """The prompt version involved, if any."""
    inputs: dict[str, str] = {}
    """Content hashes of the unit's inputs."""
    usage: Usage = Usage(calls=0)
    """Tokens the failed attempts spent."""


class StageUsage(BaseModel):
    """Token and cost accounting of one stage run (``<stage>/usage.json``): the run's
    ``Usage``, fresh and cached, with their costs and the run's settings."""

    model_config = FROZEN

    stage: str
    """The stage."""
    model: str | None
    """The model used."""
    fresh: Usage
    """Spent in this run, failed units included."""
    cached: Usage
    """Recorded on the artefacts reused from the cache (not spent again)."""
    cost_usd: float | None
    """Cost of ``fresh``: the provider's reported cost, else the price table's; ``None``
    when neither knows the model."""
    cached_cost_usd: float | None
    """What the reused artefacts cost when they were made."""
    settings: dict[str, Any]
    """The settings of the run (repairs, concurrency, options), for the record."""


class StageReport(BaseModel):
    """What a stage run did: counts, where it wrote, what failed, what to do next."""

    model_config = FROZEN

    stage: str
    """The stage."""
    units: int
    """Units of work (images or questions) considered."""
    done: int
    """Units with a result (fresh or cached)."""
    cached: int
    """Of ``done``, how many came from the cache with no model call."""
    failed: int
    """Units that ended with a recorded error."""
    outputs: dict[str, str]
    """Files written, by name."""
    usage: StageUsage
    """Token and cost accounting."""
    errors: tuple[StageError, ...] = ()
    """The errors recorded (also in ``<stage>/errors.jsonl``)."""
    notes: tuple[str, ...] = ()
    """Status lines (``2 images await human review``)."""
    next_step: str | None = None
    """What to do next, when something other than the next stage is needed."""


class ImageRecord(BaseModel):
    """One input image, resolved (``questions/images.jsonl``)."""

    model_config = FROZEN

    id: Annotated[str, Field(pattern=r"^[A-Za-z0-9._-]+$")]
    """Image id; also the id of the question built for it."""
    image: str
    """Absolute path of the image file."""
    sha256: str
    """Content hash of the image bytes."""
    entity: str | None = None
    """Ground-truth entity, when the manifest gives it."""
    domain: str | None = None
    """Domain, e.g. ``food``."""
    popularity: Popularity | None = None
    """How well known the entity is."""
    metadata: dict[str, Any] = {}
    """Free-form fields from the manifest."""
