"""Test doubles shipped with gamut-eval: deterministic fake judge servers.

Tests and benchmarks point a judge client at :class:`FakeOpenAIServer` (OpenAI-compatible),
:class:`FakeAnthropicServer` (Anthropic's Messages API) or :class:`FakeGeminiServer`
(Gemini's generateContent) instead of a paid API: replies come from a policy (a keyword
stand-in judge by default), judge-output faults are injected on demand, and every request
is logged by a hash of its canonical body. :class:`FakeHubServer` is a folder-backed
Hugging Face Hub for offline tests of ``hf://`` datasets and ``gamut push``.
"""

from gamut_eval.testing._fake_anthropic import FakeAnthropicServer
from gamut_eval.testing._fake_gemini import FakeGeminiServer
from gamut_eval.testing._fake_hub import FakeHubServer
from gamut_eval.testing._fake_openai import DEFAULT_MODELS, HOST, FakeOpenAIServer
from gamut_eval.testing._faults import (
    FAULT_KINDS,
    FaultKind,
    FaultRule,
    load_fault_rules,
    parse_fault_rules,
    serialise_fault_rules,
)
from gamut_eval.testing._policies import (
    CHECK_HEADING_RE,
    INJECTION_RE,
    RESPONSE_FENCE_RE,
    FakeServerError,
    FixedPolicy,
    InjectablePolicy,
    JudgePrompt,
    KeywordPolicy,
    MappingPolicy,
    Policy,
    PolicyFunction,
    ReplyPolicy,
    ScriptedPolicy,
    ScriptExhaustedError,
    parse_judge_prompt,
    policy_by_name,
    verdict_json,
)
from gamut_eval.testing._process import (
    READY_PREFIX,
    start_fake_server_process,
    stop_fake_server_process,
)
from gamut_eval.testing._requests import RequestContext, RequestRecord, body_hash

__all__ = [
    "CHECK_HEADING_RE",
    "DEFAULT_MODELS",
    "FAULT_KINDS",
    "HOST",
    "INJECTION_RE",
    "READY_PREFIX",
    "RESPONSE_FENCE_RE",
    "FakeAnthropicServer",
    "FakeGeminiServer",
    "FakeHubServer",
    "FakeOpenAIServer",
    "FakeServerError",
    "FaultKind",
    "FaultRule",
    "FixedPolicy",
    "InjectablePolicy",
    "JudgePrompt",
    "KeywordPolicy",
    "MappingPolicy",
    "Policy",
    "PolicyFunction",
    "ReplyPolicy",
    "RequestContext",
    "RequestRecord",
    "ScriptExhaustedError",
    "ScriptedPolicy",
    "body_hash",
    "load_fault_rules",
    "parse_fault_rules",
    "parse_judge_prompt",
    "policy_by_name",
    "serialise_fault_rules",
    "start_fake_server_process",
    "stop_fake_server_process",
    "verdict_json",
]
