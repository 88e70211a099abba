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
    from gamut_eval.judge._backend_names import ONLINE_BACKENDS as ONLINE_BACKENDS
    from gamut_eval.judge._endpoints import (
        Endpoint as Endpoint,
        default_backend as default_backend,
        resolve_endpoint as resolve_endpoint,
    )
    from gamut_eval.judge._offline import (
        MEETS_AT as MEETS_AT,
        OFFLINE_JUDGE as OFFLINE_JUDGE,
        grade_check as grade_check,
    )
    from gamut_eval.judge._parse import ParsedReply as ParsedReply, parse_reply as parse_reply
    from gamut_eval.judge._pass import (
        Backend as Backend,
        JudgeStats as JudgeStats,
        JudgeWork as JudgeWork,
        OnEvent as OnEvent,
        PassEvent as PassEvent,
        Pending as Pending,
        judge_pass as judge_pass,
        run_pass as run_pass,
    )
    from gamut_eval.judge._plan import JudgePlan as JudgePlan, PlannedResponse as PlannedResponse
    from gamut_eval.judge._probe import (
        PROBE_CHECK as PROBE_CHECK,
        PROBE_TIMEOUT_S as PROBE_TIMEOUT_S,
        ProbeFailed as ProbeFailed,
        probe_judges as probe_judges,
    )
    from gamut_eval.judge._prompt import (
        PROMPT_VERSION as PROMPT_VERSION,
        RESPONSE_FORMAT as RESPONSE_FORMAT,
        JudgeImage as JudgeImage,
        RenderedResponse as RenderedResponse,
        check_key as check_key,
        hidden_characters as hidden_characters,
        judge_key as judge_key,
        render_messages as render_messages,
        render_response as render_response,
        response_digest as response_digest,
    )
    from gamut_eval.judge._records import VerdictName as VerdictName, VerdictRow as VerdictRow
    from gamut_eval.judge._reference import REFERENCE_JUDGE as REFERENCE_JUDGE
    from gamut_eval.judge._resolve import (
        ResolvedJudge as ResolvedJudge,
        resolve_judge as resolve_judge,
    )
    from gamut_eval.judge._run import (
        NOT_JUDGED as NOT_JUDGED,
        JudgeReport as JudgeReport,
        UnscoredRateExceeded as UnscoredRateExceeded,
        check_unscored_rate as check_unscored_rate,
        judge_responses as judge_responses,
        verdict_rows as verdict_rows,
        write_verdict_rows as write_verdict_rows,
    )
    from gamut_eval.judge._settings import (
        BatchSettings as BatchSettings,
        JudgeSettings as JudgeSettings,
        RaySettings as RaySettings,
    )
    from gamut_eval.judge._settle import Reask as Reask, settle as settle
    from gamut_eval.judge._store import (
        MemoryStore as MemoryStore,
        Store as Store,
        StoreBusyError as StoreBusyError,
        StoredVerdict as StoredVerdict,
        StoreError as StoreError,
        VerdictStore as VerdictStore,
    )
    from gamut_eval.judge._types import (
        Completion as Completion,
        Executor as Executor,
        JudgeAuthError as JudgeAuthError,
        JudgeCallError as JudgeCallError,
        JudgeRequestRejected as JudgeRequestRejected,
        JudgeServerGone as JudgeServerGone,
        JudgeUnavailable as JudgeUnavailable,
    )
    from gamut_eval.judge.backends import (
        BACKENDS as BACKENDS,
        BackendOptions as BackendOptions,
        make_backend as make_backend,
    )
    from gamut_eval.judge.backends._anthropic import AnthropicExecutor as AnthropicExecutor
    from gamut_eval.judge.backends._batch import BatchBackend as BatchBackend
    from gamut_eval.judge.backends._dryrun import (
        DryRunBackend as DryRunBackend,
        DryRunReport as DryRunReport,
    )
    from gamut_eval.judge.backends._fast import FastExecutor as FastExecutor
    from gamut_eval.judge.backends._gemini import GeminiExecutor as GeminiExecutor
    from gamut_eval.judge.backends._inspect import InspectExecutor as InspectExecutor
    from gamut_eval.judge.backends._inspect_errors import (
        causes as causes,
        creation_reason as creation_reason,
        describe as describe,
        is_auth_failure as is_auth_failure,
        key_hint as key_hint,
    )
    from gamut_eval.judge.backends._online import make_client as make_client
    from gamut_eval.judge.backends._shape import (
        RequestShape as RequestShape,
        Structured as Structured,
        next_structured as next_structured,
        refuses_structured_output as refuses_structured_output,
    )

if not _typing.TYPE_CHECKING:  # type checkers see the names above, not a __getattr__
    __getattr__, __dir__ = _lazy_exports(globals())
