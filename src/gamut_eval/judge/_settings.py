"""One typed configuration for a judge run, recorded with every run."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["JudgeSettings"]


class JudgeSettings(BaseModel):
    """How to judge: which model, through which backend, how hard to push it.

    Merge order where several sources set a value: command-line flag > argument > default.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    judge: str
    """Judge model in Inspect's naming (``openai/gpt-4.1-mini``, ``openai-api/vllm/qwen``...)."""
    backend: Literal["auto", "fast", "inspect"] = "auto"
    """``fast`` (aiohttp, OpenAI-compatible endpoints), ``inspect`` (any Inspect provider);
    ``auto`` picks fast where the provider speaks the OpenAI API."""
    base_url: str | None = None
    """Override of the endpoint's base URL (fast backend)."""
    concurrency: Annotated[int, Field(ge=1, le=4096)] = 64
    """Requests in flight at once."""
    rpm: Annotated[int, Field(ge=1)] | None = None
    """Requests-per-minute limit (fast backend)."""
    tpm: Annotated[int, Field(ge=1)] | None = None
    """Tokens-per-minute limit (fast backend)."""
    timeout_s: Annotated[float, Field(gt=0)] = 120.0
    """Per-request timeout."""
    max_retries: Annotated[int, Field(ge=0, le=20)] = 6
    """Transport retries (429, 5xx, timeouts) per request."""
    max_reasks: Annotated[int, Field(ge=0, le=10)] = 2
    """Re-asks after a reply that is not a valid verdict, before the check is unscored."""
    temperature: Annotated[float, Field(ge=0)] = 0.0
    max_tokens: Annotated[int, Field(ge=16)] = 400
    """Upper bound on the judge's reply length."""
    structured_output: bool = True
    """Ask for the verdict JSON schema via ``response_format`` where supported."""
    judge_image: bool = False
    """Show the judge the image in the multimodal setting (checks are self-contained, so
    off by default)."""
    inspect_batch: bool = False
    """With the inspect backend, use the provider's batch API (Anthropic, Google...)."""
    max_unscored_rate: Annotated[float, Field(ge=0, le=1)] = 0.02
    """A run whose share of unscored checks is above this fails instead of reporting."""
