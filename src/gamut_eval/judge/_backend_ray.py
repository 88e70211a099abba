"""The ``ray`` judge backend (extra ``gamut-eval[ray]``): Ray Data does the distribution.

Past one machine a pass is a data job, so it runs on an existing engine rather than a
home-made scheduler (docs/architecture.md, backends). The driver plans the checks the store
lacks and hands Ray Data one row per *response* (its question, text, keys and checks), so
every check of a response travels in one block to one actor, which sends them back to
back to one replica: the shared prefix (system prompt, question, response) is then in
that replica's prefix cache for all but the first.

- ``http`` engine: actors (``_JudgeActor``) call OpenAI-compatible endpoints (vLLM,
  SGLang, Ray Serve or a hosted API) with the OpenAI client and ``_backend_online.ask``, so
  transport retries, re-asks and unscored reasons are the online engine's own. With
  several endpoints, responses are spread round-robin over them.
- ``vllm`` engine: ``ray.data.llm`` runs vLLM engines inside the job (``judge_vllm``).

Exactly once: only the driver writes the store, and it keeps the keys it wrote in this
run, so a batch that Ray re-executes after a worker died (Ray Data restarts the actor and
retries the task) cannot write a key twice. Requests in flight on the dead worker are sent
again: at most one batch per lost worker.

Ray is imported with ``importlib`` inside functions: importing this module needs no Ray,
and the type checker does not walk Ray's sources.

The ``vllm`` engine: vLLM engines inside the Ray job, via ``ray.data.llm``. For a
self-hosted judge on a GPU cluster this skips HTTP altogether: Ray Data feeds rendered chat
requests to ``workers`` vLLM engine replicas (``vllm_tensor_parallel`` GPUs each) with
prefix caching on, and the driver settles every reply with the online engine's rules
(``_prompt.settle``: same parsing, re-asks, unscored reasons). Rows are one per check but
generated response by response, so the checks of a response sit next to each other in a
block and reach the same engine together: its prefix cache serves the shared prefix.

Re-asks run as further rounds over the same wave of responses; their conversations are
kept in memory, so a crash mid-wave re-asks those checks from their first ask on resume.
Each round is a Ray Data pipeline of its own, so its engines load the model again: a
minute or two per round, for the few percent of checks that need a re-ask.

Needs ``vllm`` and GPUs on the workers: this path is import-guarded and not exercised by
the test suite (which has no GPU); its request and reply glue (``vllm_row``,
``vllm_outcome``) is.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from gamut_eval.errors import InputError
from gamut_eval.judge._backend_online import ask
from gamut_eval.judge._client import ChatMessage, Completion, JudgeAuthError
from gamut_eval.judge._client_openai import OpenAIExecutor
from gamut_eval.judge._pass import JudgeWork, KeySet, judge_image
from gamut_eval.judge._prompt import (
    PROMPT_VERSION,
    RESPONSE_FORMAT,
    JudgeImage,
    Reask,
    render_messages,
    render_response,
    request_messages,
    settle,
    variant_with_examples,
)
from gamut_eval.judge._resolve import BackendOptions, Endpoint, ResolvedJudge
from gamut_eval.judge._settings import JudgeSettings, RaySettings
from gamut_eval.judge._store import StoredVerdict, chunked

RAY_EXTRA = "pip install 'gamut-eval[ray]'"


def import_ray() -> Any:
    """``ray`` with Ray Data, or an ``InputError`` saying which extra to install."""
    try:
        ray = importlib.import_module("ray")
        importlib.import_module("ray.data")
    except ModuleNotFoundError as exc:
        raise InputError(
            f"the ray judge backend needs Ray Data ({exc.name} is missing): {RAY_EXTRA}"
        ) from None
    return ray


def connect(ray: Any, settings: RaySettings) -> bool:
    """Join the configured cluster (or start a local instance); True if started here."""
    if ray.is_initialized():
        return False
    ray.init(address=settings.address, log_to_driver=False)
    return True


_VERDICT_FIELDS = (
    "key",
    "verdict",
    "explanation",
    "status",
    "reason",
    "attempts",
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "latency_ms",
    "created_at",
    "cache_write_tokens",
)


def response_rows(work: JudgeWork, replicas: int) -> Iterator[dict[str, Any]]:
    """One Ray Data row per answer with checks still to judge (``work.pending`` counts
    the cached ones and sends identical content once)."""
    for index, answer in enumerate(work.pending()):
        plan = answer.plan
        image = judge_image(plan.image_path) if plan.image_path else None
        yield {
            "question": plan.question,
            "response": plan.row.response,
            "image_url": image.data_url if image else "",
            "image_sha": image.sha256 if image else "",
            "keys": [k for k, _ in answer.checks],
            "checks": [c.text for _, c in answer.checks],
            "examples": plan.variant.examples,
            "endpoint": index % replicas,
        }


class _JudgeActor:
    """A Ray Data actor: judges every check of a batch of responses, concurrently.

    It keeps one event loop and one fast executor per endpoint for its whole life, so
    connections are reused across batches (an executor is bound to its loop).
    """

    def __init__(self, endpoints: list[Endpoint], settings_json: str, concurrency: int) -> None:
        self.settings = JudgeSettings.model_validate_json(settings_json)
        self.endpoints = endpoints
        self.concurrency = concurrency
        self.loop = asyncio.new_event_loop()
        self.executors: dict[int, OpenAIExecutor] = {}

    def _executor(self, index: int) -> OpenAIExecutor:
        if index not in self.executors:
            settings = self.settings.model_copy(update={"concurrency": self.concurrency})
            self.executors[index] = OpenAIExecutor(self.endpoints[index], settings)
        return self.executors[index]

    def __call__(self, batch: dict[str, Any]) -> dict[str, list[Any]]:
        return self.loop.run_until_complete(self._judge(batch))

    async def _judge(self, batch: dict[str, Any]) -> dict[str, list[Any]]:
        limit = asyncio.Semaphore(self.concurrency)
        fatal: list[str] = []

        async def one(
            executor: OpenAIExecutor, key: str, check: str, rendered: Any
        ) -> StoredVerdict | None:
            async with limit:
                try:
                    return await ask(executor, key, check, rendered, self.settings)
                except JudgeAuthError as exc:  # returned, not raised: Ray would wrap it
                    fatal.append(str(exc))
                    return None

        tasks = []
        for i in range(len(batch["keys"])):
            image = None
            if batch["image_url"][i]:
                image = JudgeImage(str(batch["image_url"][i]), str(batch["image_sha"][i]))
            variant = variant_with_examples(int(batch["examples"][i]))
            rendered = render_response(
                str(batch["question"][i]), str(batch["response"][i]), image, variant
            )
            executor = self._executor(int(batch["endpoint"][i]))
            for key, check in zip(batch["keys"][i], batch["checks"][i], strict=True):
                tasks.append(one(executor, str(key), str(check), rendered))
        rows = [r for r in await asyncio.gather(*tasks) if r is not None]
        columns: dict[str, list[Any]] = {f: [getattr(r, f) for r in rows] for f in _VERDICT_FIELDS}
        columns["fatal"] = [""] * len(rows)
        if fatal:  # one extra row carries the message to the driver
            for name in _VERDICT_FIELDS:
                columns[name].append(None)
            columns["fatal"].append(fatal[0])
        return columns

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            for executor in self.executors.values():
                self.loop.run_until_complete(executor.aclose())
            self.loop.close()


class _DriverWriter:
    """Records actor output in the pass, exactly once per key."""

    def __init__(self, work: JudgeWork) -> None:
        self.work = work
        self.settings = work.settings
        self.written = KeySet()
        self.duplicates = 0
        """Rows for keys already written in this run (a batch Ray ran twice)."""

    def add(self, batch: dict[str, Any]) -> None:
        fatal = ""
        for i in range(len(batch["fatal"])):
            if batch["fatal"][i]:  # the row that carries an auth failure, not a verdict
                fatal = str(batch["fatal"][i])
                continue
            if not self.written.add(str(batch["key"][i])):
                self.duplicates += 1
                continue
            self.work.record(self._verdict(batch, i))
        self.work.flush()
        if fatal:
            raise JudgeAuthError(fatal)

    def _verdict(self, batch: dict[str, Any], i: int) -> StoredVerdict:
        def get(name: str) -> Any:
            value = batch[name][i]
            return value.item() if hasattr(value, "item") else value

        return StoredVerdict(
            key=str(get("key")),
            judge=self.settings.judge,
            prompt_version=PROMPT_VERSION,
            verdict=get("verdict"),
            explanation=str(get("explanation") or ""),
            status=str(get("status")),
            reason=get("reason"),
            attempts=int(get("attempts")),
            prompt_tokens=int(get("prompt_tokens")),
            completion_tokens=int(get("completion_tokens")),
            cached_tokens=int(get("cached_tokens")),
            latency_ms=float(get("latency_ms")),
            created_at=float(get("created_at")),
            cache_write_tokens=int(get("cache_write_tokens")),
        )


def _judge_http(
    ray: Any,
    work: JudgeWork,
    writer: _DriverWriter,
    judge: ResolvedJudge,
    ray_settings: RaySettings,
) -> None:
    settings = work.settings
    judge.require_endpoint()
    endpoints = list(judge.replicas)
    context = ray.data.DataContext.get_current()
    # The caller shows its own progress (the CLI's bar): Ray Data's would interleave with it.
    context.enable_progress_bars = False
    context.print_on_execution_start = False
    rows = response_rows(work, len(endpoints))
    for wave in chunked(rows, ray_settings.responses_per_wave):
        dataset = ray.data.from_items(wave)
        judged = dataset.map_batches(
            _JudgeActor,
            batch_size=ray_settings.responses_per_batch,
            batch_format="numpy",
            compute=ray.data.ActorPoolStrategy(size=ray_settings.workers),
            fn_constructor_args=(
                endpoints,
                settings.model_dump_json(),
                ray_settings.worker_concurrency,
            ),
            # Ray Data's actor pools restart a killed actor and retry its batch
            # (max_restarts = max_task_retries = -1 by default); the driver drops repeats.
            num_cpus=1,
        )
        for batch in judged.iter_batches(batch_size=None, batch_format="numpy"):
            writer.add(batch)


def judge_ray(work: JudgeWork, judge: ResolvedJudge, ray_settings: RaySettings) -> int:
    """Judge every pending check of ``work`` on Ray; returns how many duplicate rows (a
    re-executed batch) the driver dropped. Blocks: Ray's driver API is synchronous, and
    the store is written from this thread only."""
    ray = import_ray()
    started = connect(ray, ray_settings)
    writer = _DriverWriter(work)
    try:
        if ray_settings.engine == "vllm":
            judge_vllm(ray, work, judge, ray_settings)
        else:
            _judge_http(ray, work, writer, judge, ray_settings)
    finally:
        if started:
            ray.shutdown()
    return writer.duplicates


@dataclass
class RayBackend:
    """The ``ray`` backend; the judge is resolved over the replicas (``RaySettings.endpoints``)."""

    judge: ResolvedJudge
    ray: RaySettings
    name: str = "ray"
    writes_store: bool = True
    exports_rows: bool = True
    probed: bool = False
    """The replicas are the cluster's to check."""
    duplicates: int = 0
    """Rows of re-executed batches the driver dropped in the last pass."""

    async def run(self, work: JudgeWork) -> None:
        self.duplicates = judge_ray(work, self.judge, self.ray)


def ray_backend(judge: ResolvedJudge, options: BackendOptions) -> RayBackend:
    return RayBackend(judge, options.ray)


@dataclass(frozen=True, slots=True)
class _Check:
    key: str
    first: list[ChatMessage]
    """The first ask; re-asks append to it."""


def vllm_sampling_params(settings: JudgeSettings) -> dict[str, Any]:
    """vLLM sampling parameters matching the fast executor's request (the verdict JSON
    schema as a structured-output constraint when ``structured_output`` is on)."""
    params: dict[str, Any] = {
        "temperature": settings.temperature,
        "max_tokens": settings.max_tokens,
    }
    if settings.structured_output:
        params["structured_outputs"] = {"json": RESPONSE_FORMAT["json_schema"]["schema"]}
    return params


def vllm_row(key: str, messages: list[ChatMessage]) -> dict[str, Any]:
    """One Ray Data row: the messages travel as JSON text (Arrow cannot type a list of
    messages whose content is sometimes a string and sometimes parts)."""
    return {"key": key, "messages": json.dumps(messages)}


class _Preprocess:
    """Row -> vLLM request (picklable, so Ray can ship it to the workers)."""

    def __init__(self, sampling_params: dict[str, Any]) -> None:
        self.sampling_params = sampling_params

    def __call__(self, row: dict[str, Any]) -> dict[str, Any]:
        return {
            "key": row["key"],
            "messages": json.loads(row["messages"]),
            "sampling_params": self.sampling_params,
        }


def _postprocess(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "key": row["key"],
        "text": row.get("generated_text", ""),
        "prompt_tokens": int(row.get("num_input_tokens") or 0),
        "completion_tokens": int(row.get("num_generated_tokens") or 0),
    }


def vllm_outcome(row: dict[str, Any]) -> Completion | str:
    """An output row as a reply, or the engine error that replaced it (rows that failed
    skip the postprocess step and carry ``__inference_error__``)."""
    error = row.get("__inference_error__")
    if error:
        return f"vLLM engine error: {str(error)[:300]}"
    return Completion(
        text=str(row.get("text", row.get("generated_text", "")) or ""),
        prompt_tokens=int(row.get("prompt_tokens", row.get("num_input_tokens", 0)) or 0),
        completion_tokens=int(
            row.get("completion_tokens", row.get("num_generated_tokens", 0)) or 0
        ),
    )


def _processor(settings: JudgeSettings, judge: ResolvedJudge, ray_settings: RaySettings) -> Any:
    try:
        llm = importlib.import_module("ray.data.llm")
    except ModuleNotFoundError:
        raise InputError(f"the vllm engine needs ray.data.llm: {RAY_EXTRA}") from None
    model = ray_settings.vllm_model or judge.require_endpoint().model_name
    config = llm.vLLMEngineProcessorConfig(
        model_source=model,
        engine_kwargs={
            "enable_prefix_caching": True,
            "tensor_parallel_size": ray_settings.vllm_tensor_parallel,
        },
        concurrency=ray_settings.workers,
        batch_size=ray_settings.vllm_batch_size,
        should_continue_on_error=True,
    )
    return llm.build_processor(
        config, preprocess=_Preprocess(vllm_sampling_params(settings)), postprocess=_postprocess
    )


def _wave_checks(work: JudgeWork, size: int) -> Iterable[list[_Check]]:
    wave: list[_Check] = []
    for answer in work.pending():
        rendered = answer.rendered
        wave += [_Check(k, render_messages(rendered, c.text)) for k, c in answer.checks]
        if len(wave) >= size:
            yield wave
            wave = []
    if wave:
        yield wave


def judge_vllm(ray: Any, work: JudgeWork, judge: ResolvedJudge, ray_settings: RaySettings) -> None:
    """Judge every pending check of ``work`` on vLLM engines; the driver records them."""
    settings = work.settings
    processor = _processor(settings, judge, ray_settings)
    wave_size = ray_settings.responses_per_wave * 30  # checks, at about 30 per response
    for wave in _wave_checks(work, wave_size):
        reasks: dict[str, Reask] = {}
        todo = wave
        for _ in range(settings.max_reasks + 1):
            rows = [vllm_row(c.key, request_messages(c.first, reasks.get(c.key))) for c in todo]
            output = processor(ray.data.from_items(rows))
            reasks = _settle_output(output.iter_rows(), reasks, work)
            todo = [c for c in todo if c.key in reasks]
            if not todo:
                break


def _settle_output(
    rows: Iterable[dict[str, Any]], reasks: dict[str, Reask], work: JudgeWork
) -> dict[str, Reask]:
    """Record settled verdicts (once per key); the re-asks for the next round."""
    written: set[str] = set()
    following: dict[str, Reask] = {}
    for row in rows:
        key = str(row["key"])
        if key in written or key in following:
            continue  # a block Ray ran twice
        result = settle(key, vllm_outcome(row), reasks.get(key), work.settings)
        if isinstance(result, Reask):
            following[key] = result
            continue
        written.add(key)
        work.record(result)
    work.flush()
    return following
