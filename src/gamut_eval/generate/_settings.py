"""How candidate answers are generated, declared once: Inspect AI's names and meanings.

Each field holds its default and, in its docstring, its help text; the options of
``gamut generate`` and ``gamut run`` are derived from this model (its ``model_fields``),
and ``run.json`` records its dump. ``None`` leaves a value to the provider's default, as
Inspect does. ``model_args`` is the repeatable ``-M key=value`` option (its own option,
not derived: ``cli`` metadata ``None``).

How the fields reach Inspect (``generate_responses``): ``temperature``, ``max_tokens``,
``top_p`` and ``reasoning_effort`` are ``GenerateConfig`` fields passed to ``eval_set``;
``model_args`` is ``eval_set(model_args=...)``; ``epochs`` is ``eval_set(epochs=...)``;
``system_message`` is a solver of the task (``gamut_task``) that inserts the text verbatim.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ReasoningEffort = Literal["minimal", "low", "medium", "high"]

SECRET_MARKERS = ("key", "token", "secret", "password")
"""A model argument whose name contains one of these is not written to run.json."""
_REDACTED = "<redacted>"


class GenerationSettings(BaseModel):
    """How the answering models are asked: generation config, system message, epochs."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    temperature: Annotated[float, Field(ge=0)] | None = None
    """Sampling temperature of the answering models (default: the provider's)."""
    max_tokens: Annotated[int, Field(ge=1)] | None = None
    """Most tokens an answer may have (default: the provider's)."""
    top_p: Annotated[float, Field(ge=0, le=1)] | None = None
    """Nucleus sampling: the probability mass of tokens considered (default: the
    provider's)."""
    reasoning_effort: ReasoningEffort | None = None
    """Reasoning effort of reasoning models (Inspect's GenerateConfig.reasoning_effort)."""
    system_message: str | None = None
    """A system message put before every question, verbatim (no template)."""
    epochs: Annotated[int, Field(ge=1)] = 1
    """Answers per question, model and setting; above 1 only `gamut generate` (one row per
    epoch, `epoch` in its metadata)."""
    model_args: Annotated[dict[str, Any], Field(json_schema_extra={"cli": None})] = {}
    """Arguments of the answering models' providers (Inspect's ``model_args``, ``-M``)."""

    def generate_config(self) -> dict[str, Any]:
        """The ``GenerateConfig`` fields that are set, for ``eval_set(**config)``."""
        fields = ("temperature", "max_tokens", "top_p", "reasoning_effort")
        return {name: getattr(self, name) for name in fields if getattr(self, name) is not None}

    def recorded(self) -> dict[str, Any]:
        """The settings as ``run.json`` records them: model arguments that look like
        credentials (``api_key``...) are redacted."""
        data = self.model_dump(mode="json")
        data["model_args"] = {
            key: _REDACTED if any(m in key.lower() for m in SECRET_MARKERS) else value
            for key, value in self.model_args.items()
        }
        return data

    def identity(self) -> dict[str, Any]:
        """The settings that differ from the defaults (all of them change answers), as the
        run folder's identity holds them: the defaults give ``{}``, as before they existed."""
        defaults = GenerationSettings().recorded()
        return {k: v for k, v in self.recorded().items() if v != defaults[k]}


def parse_model_args(values: tuple[str, ...] | list[str], flag: str = "-M") -> dict[str, Any]:
    """``-M key=value`` options as a mapping, each value read as a YAML scalar (``0.5``
    is a float, ``true`` a boolean, ``x`` a string), as Inspect's ``-M`` reads them; a
    dash in a key becomes an underscore. Raises ``ValueError`` naming a malformed one."""
    import yaml

    args: dict[str, Any] = {}
    for item in values:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{flag} {item!r}: expected key=value")
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            value = raw
        args[key.strip().replace("-", "_")] = value
    return args
