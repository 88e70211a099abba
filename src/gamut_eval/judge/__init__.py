"""The LLM judge: one pass for every backend, one prompt, strict verdict parsing, the store.

Where a verdict comes from: ``_pass.py`` (the judge pass). Each (answer, check) pair is
judged independently with four verdicts. The names below are imported on first use, so
importing a part of the package (its settings, say) loads nothing else; Inspect AI and Ray
load only when their backends run. The modules are laid out in docs/architecture.md (the
judge); ``_registry.py`` names the backends and the clients.
"""

from __future__ import annotations

import typing as _typing

from gamut_eval._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from gamut_eval.judge._backend_batch import BatchBackend as BatchBackend
    from gamut_eval.judge._backend_dry_run import (
        DryRunBackend as DryRunBackend,
        DryRunReport as DryRunReport,
    )
    from gamut_eval.judge._backend_online import make_client as make_client
    from gamut_eval.judge._builtin import (
        MEETS_AT as MEETS_AT,
        grade_check as grade_check,
    )
    from gamut_eval.judge._client import (
        Completion as Completion,
        Executor as Executor,
        JudgeAuthError as JudgeAuthError,
        JudgeCallError as JudgeCallError,
        JudgeRequestRejected as JudgeRequestRejected,
        JudgeServerGone as JudgeServerGone,
        JudgeStalled as JudgeStalled,
        JudgeUnavailable as JudgeUnavailable,
    )
    from gamut_eval.judge._client_anthropic import AnthropicExecutor as AnthropicExecutor
    from gamut_eval.judge._client_gemini import GeminiExecutor as GeminiExecutor
    from gamut_eval.judge._client_inspect import (
        InspectExecutor as InspectExecutor,
        causes as causes,
        creation_reason as creation_reason,
        describe as describe,
        is_auth_failure as is_auth_failure,
        key_hint as key_hint,
    )
    from gamut_eval.judge._client_openai import (
        FastExecutor as FastExecutor,
        OpenAIExecutor as OpenAIExecutor,
    )
    from gamut_eval.judge._pass import (
        NOT_JUDGED as NOT_JUDGED,
        Backend as Backend,
        Cells as Cells,
        JudgePlan as JudgePlan,
        JudgeReport as JudgeReport,
        JudgeStats as JudgeStats,
        JudgeWork as JudgeWork,
        OnEvent as OnEvent,
        PassEvent as PassEvent,
        Pending as Pending,
        PlannedResponse as PlannedResponse,
        UnscoredRateExceeded as UnscoredRateExceeded,
        VerdictRow as VerdictRow,
        check_unscored_rate as check_unscored_rate,
        judge_pass as judge_pass,
        judge_responses as judge_responses,
        run_pass as run_pass,
        tally as tally,
        unscored_limit_error as unscored_limit_error,
        unscored_over as unscored_over,
        verdict_rows as verdict_rows,
        write_verdict_rows as write_verdict_rows,
    )
    from gamut_eval.judge._probe import (
        PROBE_CHECK as PROBE_CHECK,
        PROBE_TIMEOUT_S as PROBE_TIMEOUT_S,
        ProbeFailed as ProbeFailed,
        probe_judges as probe_judges,
    )
    from gamut_eval.judge._prompt import (
        COMPACT as COMPACT,
        EXAMPLES as EXAMPLES,
        GUIDED as GUIDED,
        PROMPT_VERSION as PROMPT_VERSION,
        RESPONSE_FORMAT as RESPONSE_FORMAT,
        CacheRules as CacheRules,
        JudgeImage as JudgeImage,
        ParsedReply as ParsedReply,
        PromptVariant as PromptVariant,
        Reask as Reask,
        RenderedResponse as RenderedResponse,
        cache_rules as cache_rules,
        check_key as check_key,
        hidden_characters as hidden_characters,
        judge_key as judge_key,
        parse_reply as parse_reply,
        prompt_variant as prompt_variant,
        render_messages as render_messages,
        render_response as render_response,
        response_digest as response_digest,
        settle as settle,
    )
    from gamut_eval.judge._registry import (
        BACKENDS as BACKENDS,
        OFFLINE_JUDGE as OFFLINE_JUDGE,
        ONLINE_BACKENDS as ONLINE_BACKENDS,
        REFERENCE_JUDGE as REFERENCE_JUDGE,
        VERDICT_OUTPUT_TOKENS as VERDICT_OUTPUT_TOKENS,
    )
    from gamut_eval.judge._resolve import (
        BackendOptions as BackendOptions,
        Endpoint as Endpoint,
        ResolvedJudge as ResolvedJudge,
        default_backend as default_backend,
        make_backend as make_backend,
        require_judge_extras as require_judge_extras,
        resolve_endpoint as resolve_endpoint,
        resolve_judge as resolve_judge,
    )
    from gamut_eval.judge._settings import (
        BatchSettings as BatchSettings,
        JudgeSettings as JudgeSettings,
        PromptLayout as PromptLayout,
        RaySettings as RaySettings,
    )
    from gamut_eval.judge._store import (
        MemoryStore as MemoryStore,
        Store as Store,
        StoreBusyError as StoreBusyError,
        StoredVerdict as StoredVerdict,
        StoreError as StoreError,
        VerdictStore as VerdictStore,
    )
    from gamut_eval.judge._wire_openai import (
        RequestShape as RequestShape,
        Structured as Structured,
        next_structured as next_structured,
        refuses_structured_output as refuses_structured_output,
    )

if not _typing.TYPE_CHECKING:  # type checkers see the names above, not a __getattr__
    __getattr__, __dir__ = _lazy_exports(globals())
