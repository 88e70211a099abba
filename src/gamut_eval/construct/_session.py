"""A build run: the folder, its cache, the model, and the unit-of-work runner of each stage.

Each stage splits its work into units (one image, one question). ``StageRun.unit`` looks the
unit up in the cache by its content-hash key; on a miss it runs the unit's work under the
concurrency limit and stores the result the moment it succeeds, so a crash loses at most
the units in flight. A unit that fails (bad model output after all repairs, a failed call,
a failed search) is recorded as a ``StageError`` and the other units go on. At the end the
stage writes its errors file and its token and cost accounting.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import pydantic
from pydantic import BaseModel

from gamut_eval._usage import Usage, priced
from gamut_eval.construct._llm import (
    BuildModel,
    Prompt,
    UsageMeter,
    chat_messages,
    extract_json,
    repair_message,
)
from gamut_eval.construct._models import (
    Invalid,
    Provenance,
    StageError,
    StageReport,
    StageUsage,
    UnitError,
)
from gamut_eval.construct._settings import BuildSettings
from gamut_eval.construct._workdir import BuildCache, Workdir, unit_key
from gamut_eval.errors import InputError
from gamut_eval.prices import PriceTable

if TYPE_CHECKING:
    from inspect_ai.model import Model

NO_IMAGES = (
    "use a vision model for this stage (it shows the model the images), or run the stages "
    "that need none (evidence, draft, refine, text-only) with this one"
)
"""The way out a build names when its model refuses images."""


def probe_build_model(model: str, *, images: bool) -> None:
    """One tiny request to the build's model before a stage touches its folder: the run's
    probe (``generate.probe_models``, with a 2x2 image for the stages that show the model
    images), so a dead URL, a server that never answers, a rejected key or a model that
    cannot take images ends the command in seconds with ``ProbeFailed`` (exit 2) naming
    the way out, instead of failing every unit after its retries."""
    from gamut_eval.generate import probe_models

    probe_models([model], "multimodal" if images else "text_only", no_images=NO_IMAGES)


M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")


class BuildSession:
    """A build folder open for one run (``async with``): the cache and its writer lock, the
    model (optional: stages without model calls need none), settings and prices."""

    def __init__(
        self,
        workdir: str | Path,
        model: str | Model | None = None,
        settings: BuildSettings | None = None,
        prices: PriceTable | None = None,
    ) -> None:
        self.workdir = Workdir(workdir)
        self.settings = settings or BuildSettings()
        self.model = None if model is None else BuildModel(model, self.settings.model)
        self.prices = prices or PriceTable(models={})
        if self.prices.currency != "USD":
            currency = self.prices.currency
            raise InputError(f"a build's costs are in USD (the price table's: {currency})")
        self._cache: BuildCache | None = None
        self._limit: asyncio.Semaphore | None = None
        self.corrections_said = 0
        """Structured-output corrections already reported in a stage's notes."""

    async def __aenter__(self) -> BuildSession:
        self._cache = BuildCache(self.workdir.cache)
        self._limit = asyncio.Semaphore(self.settings.max_concurrency)
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if self.model is not None:
                await self.model.aclose()
        finally:
            if self._cache is not None:
                self._cache.close()

    @property
    def cache(self) -> BuildCache:
        if self._cache is None:
            raise RuntimeError("use the session in `async with`")
        return self._cache

    @property
    def limit(self) -> asyncio.Semaphore:
        if self._limit is None:
            raise RuntimeError("use the session in `async with`")
        return self._limit

    def require_model(self, stage: str) -> BuildModel:
        if self.model is None:
            raise InputError(
                f"the {stage} stage needs a model: give model (PROVIDER/MODEL)", setting="model"
            )
        return self.model

    def stage(
        self, name: str, prompt_version: str | None, options: dict[str, Any] | None = None
    ) -> StageRun:
        """The runner of one stage; ``options`` change results, so they are in every key. A
        stage with a prompt calls the model, so it needs one."""
        if prompt_version is not None:
            self.require_model(name)
        return StageRun(self, name, prompt_version, options or {})


class UnitCall:
    """What a unit's work receives: the model, a usage meter, and its provenance."""

    def __init__(self, run: StageRun, inputs: dict[str, str], key: str) -> None:
        self.run = run
        self.inputs = inputs
        self.key = key
        self.meter = UsageMeter()

    async def ask(
        self, prompt: Prompt, validate: Callable[[Any], Awaitable[T]], schema: dict[str, Any]
    ) -> tuple[T, int]:
        """A JSON reply that ``validate`` accepts, and the repairs it took.

        ``validate`` raises ``Invalid`` with the errors to feed back. After ``max_repairs``
        rejected repairs the unit fails with ``UnitError`` (kind ``not-json`` or ``invalid``).
        """
        from inspect_ai.model import ChatMessageAssistant, ChatMessageUser

        model = self.run.session.require_model(self.run.name)
        max_repairs = self.run.session.settings.max_repairs
        messages = chat_messages(prompt)
        last = Invalid(["no reply"])
        text = ""
        for attempt in range(max_repairs + 1):
            text = await model.generate(messages, schema, self.meter)
            try:
                return await validate(extract_json(text)), attempt
            except Invalid as exc:
                last = exc
            messages += [
                ChatMessageAssistant(content=text or "(empty reply)"),
                ChatMessageUser(content=repair_message(last.errors)),
            ]
        what = "not JSON" if last.kind == "not-json" else "invalid"
        raise UnitError(
            last.kind,
            f"the model's reply was still {what} after {max_repairs} repair(s)",
            tuple(last.errors),
            reply=text,
        )

    def provenance(self) -> Provenance:
        return Provenance(
            stage=self.run.name,
            model=self.run.model_name,
            prompt_version=self.run.prompt_version,
            inputs=self.inputs,
            key=self.key,
            usage=self.meter.usage,
        )


class StageRun:
    """Runs the units of one stage and keeps its counts, errors and usage."""

    def __init__(
        self, session: BuildSession, name: str, prompt_version: str | None, options: dict[str, Any]
    ) -> None:
        self.session = session
        self.name = name
        self.prompt_version = prompt_version
        self.options = options
        self.model_name = session.model.name if session.model else None
        self.errors: list[StageError] = []
        self.fresh = Usage(calls=0)
        self.cached_usage = Usage(calls=0)
        self.done = 0
        self.cached = 0
        self.fresh_keys: set[str] = set()
        """Keys of the units computed (not reused) in this run."""

    async def unit(
        self,
        unit_id: str,
        inputs: dict[str, str],
        work: Callable[[UnitCall], Awaitable[M]],
        result_type: type[M],
    ) -> M | None:
        """The unit's result, from the cache or from ``work``; ``None`` if it failed."""
        key = unit_key(self.name, self.model_name, self.prompt_version, inputs, self.options)
        hit = self._cached(key, result_type)
        if hit is not None:
            self.done += 1
            self.cached += 1
            self.cached_usage = self.cached_usage + _usage_of(hit)
            return hit
        call = UnitCall(self, inputs, key)
        try:
            async with self.session.limit:
                result = await work(call)
        except UnitError as exc:
            self._record(unit_id, call, exc)
            return None
        except Invalid as exc:  # a check outside ask(), e.g. of a compiled rubric
            self._record(
                unit_id, call, UnitError(exc.kind, "the result was rejected", tuple(exc.errors))
            )
            return None
        finally:
            self.fresh = self.fresh + call.meter.usage
        self.session.cache.put(key, self.name, unit_id, result.model_dump_json())
        self.fresh_keys.add(key)
        self.done += 1
        return result

    def _cached(self, key: str, result_type: type[M]) -> M | None:
        if self.session.settings.refresh:
            return None
        stored = self.session.cache.get(key)
        if stored is None:
            return None
        try:
            return result_type.model_validate_json(stored)
        except pydantic.ValidationError:
            return None  # written by an older format: redo it

    def _record(self, unit_id: str, call: UnitCall, error: UnitError) -> None:
        self.errors.append(
            StageError(
                id=unit_id,
                stage=self.name,
                kind=error.kind,
                message=error.message,
                details=error.details,
                reply=error.reply,
                setting=error.setting,
                model=self.model_name,
                prompt_version=self.prompt_version,
                inputs=call.inputs,
                usage=call.meter.usage,
            )
        )

    def fail(self, unit_id: str, kind: str, message: str) -> None:
        """Record a failure found outside a unit's work (e.g. a missing input)."""
        self.errors.append(StageError(id=unit_id, stage=self.name, kind=kind, message=message))

    def finish(
        self,
        *,
        units: int,
        outputs: dict[str, Path],
        done: int | None = None,
        cached: int | None = None,
        notes: tuple[str, ...] = (),
        next_step: str | None = None,
        next_step_settings: tuple[str, ...] = (),
    ) -> StageReport:
        """Write ``errors.jsonl`` and ``usage.json`` and return the report."""
        workdir = self.session.workdir
        errors = sorted(self.errors, key=lambda e: e.id)
        errors_path = workdir.write_path(workdir.errors(self.name), errors)
        usage = self._usage()
        usage_path = workdir.write_json(workdir.usage(self.name), usage)
        model = self.session.model
        if model is not None and len(model.corrections) > self.session.corrections_said:
            # how the provider takes structured output, said once, by the stage that learned it
            notes = (*notes, *model.corrections[self.session.corrections_said :])
            self.session.corrections_said = len(model.corrections)
        outputs = {**outputs, "errors": errors_path, "usage": usage_path}
        return StageReport(
            stage=self.name,
            units=units,
            done=self.done if done is None else done,
            cached=self.cached if cached is None else cached,
            failed=len({e.id for e in errors}),
            outputs={k: str(v) for k, v in outputs.items()},
            usage=usage,
            errors=tuple(errors),
            notes=notes,
            next_step=next_step,
            next_step_settings=next_step_settings,
        )

    def _usage(self) -> StageUsage:
        prices = self.session.prices
        settings = asdict(self.session.settings)
        return StageUsage(
            stage=self.name,
            model=self.model_name,
            fresh=self.fresh,
            cached=self.cached_usage,
            cost_usd=_cost(self.model_name, self.fresh, prices),
            cached_cost_usd=_cost(self.model_name, self.cached_usage, prices),
            settings={**settings, "prompt_version": self.prompt_version, **self.options},
        )


def _usage_of(result: BaseModel) -> Usage:
    provenance = getattr(result, "provenance", None)
    return provenance.usage if isinstance(provenance, Provenance) else Usage(calls=0)


def _cost(model: str | None, usage: Usage, prices: PriceTable) -> float | None:
    """The cost of ``usage``: the provider's reported cost when present, else from the
    table, else ``None`` (unknown, never zero; nothing called costs nothing)."""
    cost = priced(model, usage, prices)
    if cost.cost is None:
        return None if cost.calls else 0.0
    return cost.cost if cost.priced_as is None else round(cost.cost, 6)
