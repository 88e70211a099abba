"""The ``ray`` backend's ``vllm`` engine: vLLM engines inside the Ray job, via ``ray.data.llm``.

For a self-hosted judge on a GPU cluster this skips HTTP altogether: Ray Data feeds
rendered chat requests to ``workers`` vLLM engine replicas (``vllm_tensor_parallel`` GPUs
each) with prefix caching on, and the driver settles every reply with the online engine's
rules (``_settle.settle``: same parsing, re-asks, unscored reasons). Rows are one per check
but generated response by response, so the checks of a response sit next to each other in
a block and reach the same engine together: its prefix cache serves the shared prefix.

Re-asks run as further rounds over the same wave of responses; their conversations are
kept in memory, so a crash mid-wave re-asks those checks from their first ask on resume.
Each round is a Ray Data pipeline of its own, so its engines load the model again: a
minute or two per round, for the few percent of checks that need a re-ask.

Needs ``vllm`` and GPUs on the workers: this path is import-guarded and not exercised by
the test suite (which has no GPU); its request and reply glue (``vllm_row``,
``vllm_outcome``) is.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from gamut_eval.errors import InputError
from gamut_eval.judge._pass import JudgeWork
from gamut_eval.judge._prompt import RESPONSE_FORMAT, render_messages
from gamut_eval.judge._resolve import ResolvedJudge
from gamut_eval.judge._settings import JudgeSettings, RaySettings
from gamut_eval.judge._settle import Reask, request_messages, settle
from gamut_eval.judge._types import ChatMessage, Completion
from gamut_eval.judge.backends._ray_setup import RAY_EXTRA

__all__ = ["judge_vllm", "vllm_outcome", "vllm_row", "vllm_sampling_params"]


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
