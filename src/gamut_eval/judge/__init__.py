"""The LLM judge: one pass for every backend, one prompt, strict verdict parsing, the store.

Where a verdict comes from: ``_pass.py`` (the judge pass). Each (answer, check) pair is
judged independently with four verdicts. The names below are imported on first use, so
importing a part of the package (its settings, say) loads nothing else; Inspect AI and Ray
load only when their backends run.
"""

from __future__ import annotations

import typing as _typing

from gamut_eval._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from gamut_eval.judge._endpoints import Endpoint, default_backend, resolve_endpoint
    from gamut_eval.judge._parse import ParsedReply, parse_reply
    from gamut_eval.judge._pass import (
        Backend,
        JudgeStats,
        JudgeWork,
        PassEvent,
        Pending,
        judge_pass,
        run_pass,
    )
    from gamut_eval.judge._plan import JudgePlan, PlannedResponse
    from gamut_eval.judge._prompt import (
        PROMPT_VERSION,
        RESPONSE_FORMAT,
        JudgeImage,
        RenderedResponse,
        check_key,
        hidden_characters,
        judge_key,
        render_messages,
        render_response,
        response_digest,
    )
    from gamut_eval.judge._records import VerdictRow
    from gamut_eval.judge._resolve import ResolvedJudge, resolve_judge
    from gamut_eval.judge._run import (
        JudgeReport,
        UnscoredRateExceeded,
        judge_responses,
        verdict_rows,
        write_verdict_rows,
    )
    from gamut_eval.judge._settings import BatchSettings, JudgeSettings, RaySettings
    from gamut_eval.judge._settle import Reask, settle
    from gamut_eval.judge._store import (
        MemoryStore,
        StoreBusyError,
        StoredVerdict,
        StoreError,
        VerdictStore,
    )
    from gamut_eval.judge._types import (
        Completion,
        Executor,
        JudgeAuthError,
        JudgeCallError,
        JudgeRequestRejected,
        JudgeServerGone,
        JudgeUnavailable,
    )
    from gamut_eval.judge.backends import (
        BACKENDS,
        OFFLINE_JUDGE,
        REFERENCE_JUDGE,
        BackendOptions,
        make_backend,
    )
    from gamut_eval.judge.backends._anthropic import AnthropicExecutor
    from gamut_eval.judge.backends._fast import FastExecutor
    from gamut_eval.judge.backends._gemini import GeminiExecutor
    from gamut_eval.judge.backends._inspect import InspectExecutor
    from gamut_eval.judge.backends._online import make_client

_LAZY: dict[str, str] = {
    "Endpoint": "gamut_eval.judge._endpoints",
    "default_backend": "gamut_eval.judge._endpoints",
    "resolve_endpoint": "gamut_eval.judge._endpoints",
    "ParsedReply": "gamut_eval.judge._parse",
    "parse_reply": "gamut_eval.judge._parse",
    "Backend": "gamut_eval.judge._pass",
    "JudgeStats": "gamut_eval.judge._pass",
    "JudgeWork": "gamut_eval.judge._pass",
    "PassEvent": "gamut_eval.judge._pass",
    "Pending": "gamut_eval.judge._pass",
    "judge_pass": "gamut_eval.judge._pass",
    "run_pass": "gamut_eval.judge._pass",
    "JudgePlan": "gamut_eval.judge._plan",
    "PlannedResponse": "gamut_eval.judge._plan",
    "JudgeImage": "gamut_eval.judge._prompt",
    "PROMPT_VERSION": "gamut_eval.judge._prompt",
    "RESPONSE_FORMAT": "gamut_eval.judge._prompt",
    "RenderedResponse": "gamut_eval.judge._prompt",
    "check_key": "gamut_eval.judge._prompt",
    "hidden_characters": "gamut_eval.judge._prompt",
    "judge_key": "gamut_eval.judge._prompt",
    "render_messages": "gamut_eval.judge._prompt",
    "render_response": "gamut_eval.judge._prompt",
    "response_digest": "gamut_eval.judge._prompt",
    "VerdictRow": "gamut_eval.judge._records",
    "ResolvedJudge": "gamut_eval.judge._resolve",
    "resolve_judge": "gamut_eval.judge._resolve",
    "JudgeReport": "gamut_eval.judge._run",
    "UnscoredRateExceeded": "gamut_eval.judge._run",
    "judge_responses": "gamut_eval.judge._run",
    "verdict_rows": "gamut_eval.judge._run",
    "write_verdict_rows": "gamut_eval.judge._run",
    "BatchSettings": "gamut_eval.judge._settings",
    "JudgeSettings": "gamut_eval.judge._settings",
    "RaySettings": "gamut_eval.judge._settings",
    "Reask": "gamut_eval.judge._settle",
    "settle": "gamut_eval.judge._settle",
    "MemoryStore": "gamut_eval.judge._store",
    "StoreBusyError": "gamut_eval.judge._store",
    "StoreError": "gamut_eval.judge._store",
    "StoredVerdict": "gamut_eval.judge._store",
    "VerdictStore": "gamut_eval.judge._store",
    "Completion": "gamut_eval.judge._types",
    "Executor": "gamut_eval.judge._types",
    "JudgeAuthError": "gamut_eval.judge._types",
    "JudgeServerGone": "gamut_eval.judge._types",
    "JudgeCallError": "gamut_eval.judge._types",
    "JudgeRequestRejected": "gamut_eval.judge._types",
    "JudgeUnavailable": "gamut_eval.judge._types",
    "BACKENDS": "gamut_eval.judge.backends",
    "BackendOptions": "gamut_eval.judge.backends",
    "OFFLINE_JUDGE": "gamut_eval.judge.backends",
    "REFERENCE_JUDGE": "gamut_eval.judge.backends",
    "make_backend": "gamut_eval.judge.backends",
    "AnthropicExecutor": "gamut_eval.judge.backends._anthropic",
    "FastExecutor": "gamut_eval.judge.backends._fast",
    "GeminiExecutor": "gamut_eval.judge.backends._gemini",
    "InspectExecutor": "gamut_eval.judge.backends._inspect",
    "make_client": "gamut_eval.judge.backends._online",
}
"""Public name -> the module it comes from, imported when the name is first used."""


__getattr__, __dir__ = _lazy_exports(__name__, _LAZY, globals())


__all__ = [
    "BACKENDS",
    "OFFLINE_JUDGE",
    "PROMPT_VERSION",
    "REFERENCE_JUDGE",
    "RESPONSE_FORMAT",
    "AnthropicExecutor",
    "Backend",
    "BackendOptions",
    "BatchSettings",
    "Completion",
    "Endpoint",
    "Executor",
    "FastExecutor",
    "GeminiExecutor",
    "InspectExecutor",
    "JudgeAuthError",
    "JudgeCallError",
    "JudgeImage",
    "JudgePlan",
    "JudgeReport",
    "JudgeRequestRejected",
    "JudgeServerGone",
    "JudgeSettings",
    "JudgeStats",
    "JudgeUnavailable",
    "JudgeWork",
    "MemoryStore",
    "ParsedReply",
    "PassEvent",
    "Pending",
    "PlannedResponse",
    "RaySettings",
    "Reask",
    "RenderedResponse",
    "ResolvedJudge",
    "StoreBusyError",
    "StoreError",
    "StoredVerdict",
    "UnscoredRateExceeded",
    "VerdictRow",
    "VerdictStore",
    "check_key",
    "default_backend",
    "hidden_characters",
    "judge_key",
    "judge_pass",
    "judge_responses",
    "make_backend",
    "make_client",
    "parse_reply",
    "render_messages",
    "render_response",
    "resolve_endpoint",
    "resolve_judge",
    "response_digest",
    "run_pass",
    "settle",
    "verdict_rows",
    "write_verdict_rows",
]
