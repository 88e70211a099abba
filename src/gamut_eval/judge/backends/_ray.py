"""The ``ray`` judge backend (extra ``gamut-eval[ray]``): Ray Data does the distribution.

Past one machine a pass is a data job, so it runs on an existing engine rather than a
home-made scheduler (docs/architecture.md, backends). The driver plans the checks the store
lacks and hands Ray Data one row per *response* (its question, text, keys and checks), so
every check of a response travels in one block to one actor, which sends them back to
back to one replica: the shared prefix (system prompt, question, response) is then in
that replica's prefix cache for all but the first.

- ``http`` engine: actors (``_JudgeActor``) call OpenAI-compatible endpoints (vLLM,
  SGLang, Ray Serve or a hosted API) with the fast executor and ``_online.ask``, so
  transport retries, re-asks and unscored reasons are the online engine's own. With
  several endpoints, responses are spread round-robin over them.
- ``vllm`` engine: ``ray.data.llm`` runs vLLM engines inside the job (``_ray_vllm``).

Exactly once: only the driver writes the store, and it keeps the keys it wrote in this
run, so a batch that Ray re-executes after a worker died (Ray Data restarts the actor and
retries the task) cannot write a key twice. Requests in flight on the dead worker are sent
again: at most one batch per lost worker.

Ray is imported with ``importlib`` inside functions: importing this module needs no Ray,
and the type checker does not walk Ray's sources.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from gamut_eval.judge._endpoints import Endpoint
from gamut_eval.judge._pass import JudgeWork, KeySet
from gamut_eval.judge._plan import judge_image
from gamut_eval.judge._prompt import PROMPT_VERSION, JudgeImage, render_response
from gamut_eval.judge._resolve import ResolvedJudge
from gamut_eval.judge._settings import JudgeSettings, RaySettings
from gamut_eval.judge._store import StoredVerdict
from gamut_eval.judge._types import JudgeAuthError
from gamut_eval.judge.backends import BackendOptions
from gamut_eval.judge.backends._fast import FastExecutor
from gamut_eval.judge.backends._online import ask
from gamut_eval.judge.backends._ray_setup import connect, import_ray

__all__ = ["RayBackend", "judge_ray", "ray_backend", "response_rows"]

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
            "endpoint": index % replicas,
        }


def _waves(rows: Iterator[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    wave: list[dict[str, Any]] = []
    for row in rows:
        wave.append(row)
        if len(wave) >= size:
            yield wave
            wave = []
    if wave:
        yield wave


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
        self.executors: dict[int, FastExecutor] = {}

    def _executor(self, index: int) -> FastExecutor:
        if index not in self.executors:
            settings = self.settings.model_copy(update={"concurrency": self.concurrency})
            self.executors[index] = FastExecutor(self.endpoints[index], settings)
        return self.executors[index]

    def __call__(self, batch: dict[str, Any]) -> dict[str, list[Any]]:
        return self.loop.run_until_complete(self._judge(batch))

    async def _judge(self, batch: dict[str, Any]) -> dict[str, list[Any]]:
        limit = asyncio.Semaphore(self.concurrency)
        fatal: list[str] = []

        async def one(
            executor: FastExecutor, key: str, check: str, rendered: Any
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
            rendered = render_response(str(batch["question"][i]), str(batch["response"][i]), image)
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
    for wave in _waves(rows, ray_settings.responses_per_wave):
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
            from gamut_eval.judge.backends._ray_vllm import judge_vllm

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
