"""The LLM judge: one prompt for every backend, strict verdict parsing, executors, the store.

Each (response, check) pair is judged independently with four verdicts. Importing this
package does not import Inspect AI (the ``inspect`` executor loads it on first use).
"""

from gamut_eval.judge._endpoints import Endpoint, default_backend, resolve_endpoint
from gamut_eval.judge._engine import (
    JudgeStats,
    PlannedResponse,
    judge_one,
    judge_planned,
    plan_responses,
)
from gamut_eval.judge._fast import FastConfig, FastExecutor
from gamut_eval.judge._inspect import InspectConfig, InspectExecutor
from gamut_eval.judge._parse import ParsedReply, parse_reply
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
from gamut_eval.judge._run import (
    JudgeReport,
    UnscoredRateExceeded,
    count_checks,
    judge_responses,
    make_executor,
    verdict_rows,
    write_verdict_rows,
)
from gamut_eval.judge._settings import JudgeSettings
from gamut_eval.judge._store import StoreBusyError, StoredVerdict, StoreError, VerdictStore
from gamut_eval.judge._types import (
    Completion,
    Executor,
    JudgeAuthError,
    JudgeCallError,
    JudgeRequestRejected,
    JudgeUnavailable,
)

__all__ = [
    "PROMPT_VERSION",
    "RESPONSE_FORMAT",
    "Completion",
    "Endpoint",
    "Executor",
    "FastConfig",
    "FastExecutor",
    "InspectConfig",
    "InspectExecutor",
    "JudgeAuthError",
    "JudgeCallError",
    "JudgeImage",
    "JudgeReport",
    "JudgeRequestRejected",
    "JudgeSettings",
    "JudgeStats",
    "JudgeUnavailable",
    "ParsedReply",
    "PlannedResponse",
    "RenderedResponse",
    "StoreBusyError",
    "StoreError",
    "StoredVerdict",
    "UnscoredRateExceeded",
    "VerdictStore",
    "check_key",
    "count_checks",
    "default_backend",
    "hidden_characters",
    "judge_key",
    "judge_one",
    "judge_planned",
    "judge_responses",
    "make_executor",
    "parse_reply",
    "plan_responses",
    "render_messages",
    "render_response",
    "resolve_endpoint",
    "response_digest",
    "verdict_rows",
    "write_verdict_rows",
]
