"""The LLM judge: one pass for every backend, one prompt, strict verdict parsing, the store.

Where a verdict comes from: ``_pass.py`` (the judge pass). Each (answer, check) pair is
judged independently with four verdicts. Importing this package does not import Inspect
AI or Ray (their backends load them on first use).
"""

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
    JudgeUnavailable,
)
from gamut_eval.judge.backends import BACKENDS, OFFLINE_JUDGE, BackendOptions, make_backend
from gamut_eval.judge.backends._fast import FastExecutor
from gamut_eval.judge.backends._inspect import InspectExecutor
from gamut_eval.judge.backends._online import make_client

__all__ = [
    "BACKENDS",
    "OFFLINE_JUDGE",
    "PROMPT_VERSION",
    "RESPONSE_FORMAT",
    "Backend",
    "BackendOptions",
    "BatchSettings",
    "Completion",
    "Endpoint",
    "Executor",
    "FastExecutor",
    "InspectExecutor",
    "JudgeAuthError",
    "JudgeCallError",
    "JudgeImage",
    "JudgePlan",
    "JudgeReport",
    "JudgeRequestRejected",
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
    "response_digest",
    "run_pass",
    "settle",
    "verdict_rows",
    "write_verdict_rows",
]
