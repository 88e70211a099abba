"""Test doubles shipped with gamut-eval: deterministic fake judge servers.

Tests and benchmarks point a judge client at :class:`FakeOpenAIServer` (OpenAI-compatible),
:class:`FakeAnthropicServer` (Anthropic's Messages API) or :class:`FakeGeminiServer`
(Gemini's generateContent) instead of a paid API: replies come from a policy (a keyword
stand-in judge by default), judge-output faults are injected on demand, every request
is logged by a hash of its canonical body, and each fake's prompt cache follows its
provider's documented rules (cached reads, and Anthropic's cache writes, in the usage it
reports; ``reported_usage`` sums them). :class:`FakeHubServer` is a folder-backed
Hugging Face Hub for offline tests of ``hf://`` datasets and ``gamut push``.
"""

from __future__ import annotations

import typing as _typing

from gamut_eval._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from gamut_eval.testing._fake_hub import FakeHubServer as FakeHubServer
    from gamut_eval.testing._fake_openai import (
        DEFAULT_MODELS as DEFAULT_MODELS,
        HOST as HOST,
        FakeOpenAIServer as FakeOpenAIServer,
    )
    from gamut_eval.testing._fake_providers import (
        FakeAnthropicServer as FakeAnthropicServer,
        FakeGeminiServer as FakeGeminiServer,
    )
    from gamut_eval.testing._faults import (
        FAULT_KINDS as FAULT_KINDS,
        FaultKind as FaultKind,
        FaultRule as FaultRule,
        load_fault_rules as load_fault_rules,
        parse_fault_rules as parse_fault_rules,
        serialise_fault_rules as serialise_fault_rules,
    )
    from gamut_eval.testing._policies import (
        CHECK_HEADING_RE as CHECK_HEADING_RE,
        INJECTION_RE as INJECTION_RE,
        RESPONSE_FENCE_RE as RESPONSE_FENCE_RE,
        FakeServerError as FakeServerError,
        FixedPolicy as FixedPolicy,
        InjectablePolicy as InjectablePolicy,
        JudgePrompt as JudgePrompt,
        KeywordPolicy as KeywordPolicy,
        LenientPolicy as LenientPolicy,
        MappingPolicy as MappingPolicy,
        Policy as Policy,
        PolicyFunction as PolicyFunction,
        ReplyPolicy as ReplyPolicy,
        ScriptedPolicy as ScriptedPolicy,
        ScriptExhaustedError as ScriptExhaustedError,
        parse_judge_prompt as parse_judge_prompt,
        policy_by_name as policy_by_name,
        verdict_json as verdict_json,
    )
    from gamut_eval.testing._replay import (
        Recorded as Recorded,
        ReplayedRequest as ReplayedRequest,
        ReplayServer as ReplayServer,
        fill as fill,
        load_recording as load_recording,
    )
    from gamut_eval.testing._requests import (
        RequestContext as RequestContext,
        RequestRecord as RequestRecord,
        body_hash as body_hash,
    )
    from gamut_eval.testing._synthetic_run import (
        paper_questions as paper_questions,
        synthetic_run as synthetic_run,
    )
    from gamut_eval.testing.fake_openai import (
        READY_PREFIX as READY_PREFIX,
        start_fake_server_process as start_fake_server_process,
        stop_fake_server_process as stop_fake_server_process,
    )

if not _typing.TYPE_CHECKING:  # type checkers see the names above, not a __getattr__
    __getattr__, __dir__ = _lazy_exports(globals())
