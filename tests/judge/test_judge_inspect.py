"""The ``inspect`` executor against Inspect's own ``mockllm/model`` with scripted outputs.

Every scripted output carries its usage: without it mockllm counts tokens with tiktoken,
which downloads its encoding (these tests must stay offline).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pydantic
import pytest
from inspect_ai.model import (
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    ContentImage,
    ContentText,
    GenerateConfig,
    Model,
    ModelOutput,
    ModelUsage,
    get_model,
)
from tenacity import wait_none

from gamut_eval.errors import JudgeError
from gamut_eval.judge._client import (
    ChatMessage,
    JudgeAuthError,
    JudgeRequestRejected,
    JudgeUnavailable,
)
from gamut_eval.judge._client_inspect import InspectExecutor, _to_inspect_messages
from gamut_eval.judge._prompt import (
    RESPONSE_FORMAT,
    SYSTEM_PROMPT,
    JudgeImage,
    render_messages,
    render_response,
)
from gamut_eval.judge._settings import JudgeSettings
from gamut_eval.testing import FakeOpenAIServer, FaultKind, FaultRule

pytestmark = [
    # Inspect's retry config calls tenacity with a parameter tenacity has deprecated
    pytest.mark.filterwarnings("ignore:The 'initial' parameter is deprecated:DeprecationWarning"),
    pytest.mark.timeout(30),
]

VERDICT = '{"explanation":"x","verdict":"meets"}'
PNG = JudgeImage("data:image/png;base64,iVBORw0KGgo=", "0" * 64)
QUESTION = "What dish is shown?"
ANSWER = "It is bibimbap."
CHECK = "Identifies the dish as bibimbap."


def reply(
    content: str = VERDICT,
    *,
    stop_reason: Any = "stop",
    error: str | None = None,
    usage: ModelUsage | None = None,
) -> ModelOutput:
    output = ModelOutput.from_content(
        model="mockllm/model", content=content, stop_reason=stop_reason, error=error
    )
    output.usage = usage or ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
    return output


class Script:
    """mockllm ``custom_outputs``: replays outputs (or raises exceptions) in order and
    records what the model was asked."""

    def __init__(self, *steps: ModelOutput | Exception) -> None:
        self.steps = list(steps)
        self.inputs: list[list[Any]] = []
        self.configs: list[GenerateConfig] = []

    def __call__(
        self, input: list[Any], tools: Any, tool_choice: Any, config: GenerateConfig
    ) -> ModelOutput:
        self.inputs.append(input)
        self.configs.append(config)
        step = self.steps.pop(0)
        if isinstance(step, Exception):
            raise step
        return step


def mock_model(script: Script) -> Model:
    return get_model("mockllm/model", custom_outputs=script, memoize=False)


def inspect_settings(**values: Any) -> JudgeSettings:
    return JudgeSettings(judge="mockllm/model", backend="inspect", **values)


def executor(script: Script, judge_id: str = "mockllm/model", **config: Any) -> InspectExecutor:
    return InspectExecutor(judge_id, inspect_settings(**config), model_obj=mock_model(script))


def text_request() -> list[ChatMessage]:
    return render_messages(render_response(QUESTION, ANSWER), CHECK)


def image_request() -> list[ChatMessage]:
    return render_messages(render_response(QUESTION, ANSWER, PNG), CHECK)


@pytest.fixture(autouse=True)
def _inspect_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("INSPECT_LOG_DIR", str(tmp_path / "inspect-logs"))
    monkeypatch.delenv("INSPECT_EVAL_MODEL", raising=False)


# -- replies -----------------------------------------------------------------------------


async def test_scripted_reply_comes_back_as_completion() -> None:
    usage = ModelUsage(
        input_tokens=100, output_tokens=12, total_tokens=172, input_tokens_cache_read=60
    )
    script = Script(reply(VERDICT, usage=usage))
    async with executor(script) as judge:
        completion = await judge.complete(text_request(), RESPONSE_FORMAT)
    assert judge.judge_id == "mockllm/model"
    assert completion.text == VERDICT
    # Inspect keeps cache reads apart from input_tokens; prompt_tokens counts them all
    assert (completion.prompt_tokens, completion.completion_tokens) == (160, 12)
    assert completion.cached_tokens == 60
    assert completion.latency_s >= 0
    assert completion.refusal is None


async def test_replies_are_returned_in_script_order() -> None:
    script = Script(reply('{"n":1}'), reply('{"n":2}'))
    judge = executor(script)
    first = await judge.complete(text_request(), None)
    second = await judge.complete(text_request(), None)
    assert (first.text, second.text) == ('{"n":1}', '{"n":2}')
    await judge.aclose()


# -- requests ----------------------------------------------------------------------------


async def test_image_request_keeps_system_message_and_part_order() -> None:
    messages = image_request()
    script = Script(reply())
    await executor(script).complete(messages, RESPONSE_FORMAT)

    system, user = script.inputs[0]
    assert isinstance(system, ChatMessageSystem)
    assert system.content == SYSTEM_PROMPT
    assert isinstance(user, ChatMessageUser)
    sent = user.content
    assert [type(part) for part in sent] == [ContentText, ContentImage, ContentText, ContentText]
    assert sent[1].image == PNG.data_url  # the data URL is passed through untouched
    original = messages[1]["content"]
    texts = [part.text for part in sent if isinstance(part, ContentText)]
    assert texts == [part["text"] for part in original if part["type"] == "text"]
    assert texts[-1].startswith("# Check")


async def test_text_request_is_sent_as_the_same_string() -> None:
    messages = text_request()
    script = Script(reply())
    await executor(script).complete(messages, RESPONSE_FORMAT)
    system, user = script.inputs[0]
    assert (system.role, system.content) == ("system", SYSTEM_PROMPT)
    assert (user.role, user.content) == ("user", messages[1]["content"])


async def test_message_order_is_preserved_for_a_re_ask() -> None:
    messages = [
        *text_request(),
        {"role": "assistant", "content": "meets"},
        {"role": "user", "content": "Reply with the JSON object only."},
    ]
    script = Script(reply())
    await executor(script).complete(messages, None)
    sent = script.inputs[0]
    assert [type(m) for m in sent] == [
        ChatMessageSystem,
        ChatMessageUser,
        ChatMessageAssistant,
        ChatMessageUser,
    ]
    assert [m.text for m in sent] == [
        m["content"] if isinstance(m["content"], str) else "" for m in messages
    ]


def test_anthropic_text_request_is_split_before_the_check() -> None:
    messages = text_request()
    _, user = _to_inspect_messages(messages, split_prefix=True)
    prefix, check = user.content
    assert prefix.text + check.text == messages[1]["content"]
    assert prefix.text.startswith("# Question")
    assert prefix.text.endswith(">>>\n\n")
    assert check.text == f"# Check\n{CHECK}"


async def test_split_applies_only_to_anthropic_with_prompt_caching() -> None:
    script = Script(reply(), reply(), reply())
    await executor(script, "anthropic/claude-x").complete(text_request(), None)
    await executor(script, "anthropic/claude-x", cache_prompt=False).complete(text_request(), None)
    await executor(script, "openai/gpt-x").complete(text_request(), None)
    kinds = [type(inputs[1].content) for inputs in script.inputs]
    assert kinds == [list, str, str]


async def test_image_url_must_be_a_data_url() -> None:
    messages = image_request()
    messages[1]["content"][1]["image_url"]["url"] = "https://example.com/cat.png"
    script = Script(reply())
    with pytest.raises(JudgeRequestRejected, match="data: URL"):
        await executor(script).complete(messages, None)
    assert script.inputs == []  # refused before any call


async def test_unknown_role_is_rejected() -> None:
    with pytest.raises(JudgeRequestRejected, match="role 'tool'"):
        await executor(Script()).complete([{"role": "tool", "content": "x"}], None)


# -- config ------------------------------------------------------------------------------


async def test_response_format_becomes_response_schema_with_settings() -> None:
    script = Script(reply())
    await executor(script).complete(text_request(), RESPONSE_FORMAT)
    config = script.configs[0]
    schema = config.response_schema
    assert schema is not None
    assert (schema.name, schema.strict) == ("gamut_verdict", True)
    assert schema.json_schema.required == ["explanation", "verdict"]
    assert schema.json_schema.additionalProperties is False
    verdict = schema.json_schema.properties["verdict"]
    assert verdict.enum == ["meets", "partially_meets", "missing", "contradicts"]
    assert (config.temperature, config.max_tokens) == (0.0, 400)
    assert (config.max_retries, config.timeout, config.attempt_timeout) == (6, 120, 120)
    assert (config.max_connections, config.cache_prompt) == (64, "auto")
    assert config.fail_on_refusal is False


@pytest.mark.parametrize(
    ("structured_output", "response_format"),
    [(False, RESPONSE_FORMAT), (True, None)],
)
async def test_no_response_schema_without_structured_output(
    structured_output: bool, response_format: dict[str, Any] | None
) -> None:
    script = Script(reply())
    judge = executor(script, structured_output=structured_output)
    await judge.complete(text_request(), response_format)
    assert script.configs[0].response_schema is None


def test_settings_reject_unknown_cache_prompt() -> None:
    with pytest.raises(pydantic.ValidationError, match="cache_prompt"):
        inspect_settings(cache_prompt="always")


# -- failures returned as outputs ----------------------------------------------------------


async def test_content_filter_is_request_rejected() -> None:
    script = Script(reply("I can't help with that.", stop_reason="content_filter"))
    with pytest.raises(JudgeRequestRejected, match=r"^content policy: I can't help"):
        await executor(script).complete(text_request(), RESPONSE_FORMAT)


@pytest.mark.parametrize(
    ("stop_reason", "expected"),
    [("model_length", JudgeRequestRejected), ("unknown", JudgeUnavailable)],
)
async def test_output_error(stop_reason: str, expected: type[Exception]) -> None:
    script = Script(reply("", stop_reason=stop_reason, error="upstream said no"))
    with pytest.raises(expected, match="upstream said no"):
        await executor(script).complete(text_request(), None)


# -- failures raised -------------------------------------------------------------------------


class AuthenticationError(Exception):
    """Named like the openai / anthropic SDKs' 401 error."""

    status_code = 401


class BadRequestError(Exception):
    status_code = 400


class ModelGenerateError(RuntimeError):
    """Shaped like Inspect's wrapper of a provider error returned as an output: its
    message embeds the request (so the response under judgement)."""

    def __init__(self, request: str, provider_message: str, status_code: int) -> None:
        super().__init__(f"Request:\n{request}\n\n{provider_message}")
        self.status_code = status_code
        self.provider_message = provider_message


class ClientError(Exception):
    """Shaped like google-genai's error: ``code``, not ``status_code``."""

    code = 400


class FlakyError(Exception):
    """A failure the (patched) provider classifies as transient."""


def _wrapped_bad_request(request: str = "{...}") -> Exception:
    try:
        try:
            raise BadRequestError("max_tokens too large")
        except BadRequestError as inner:
            raise ModelGenerateError(request, str(inner), 400) from inner
    except ModelGenerateError as outer:
        return outer


GOOGLE_BAD_KEY = ClientError("400 INVALID_ARGUMENT. API key not valid. Please pass a valid key.")
# a response under judgement cannot pass a 400 off as a credentials failure
INJECTED = _wrapped_bad_request('{"content": "ERROR: API key not valid"}')


@pytest.mark.parametrize(
    ("judge_id", "error", "expected", "message"),
    [
        ("openai/gpt-x", AuthenticationError("bad key"), JudgeAuthError, "OPENAI_API_KEY"),
        ("anthropic/claude-x", AuthenticationError("bad"), JudgeAuthError, "ANTHROPIC_API_KEY"),
        ("google/gemini-x", AuthenticationError("bad"), JudgeAuthError, "GOOGLE_API_KEY"),
        ("openai/gpt-x", BadRequestError("bad schema"), JudgeRequestRejected, "400: bad schema"),
        ("google/gemini-x", GOOGLE_BAD_KEY, JudgeAuthError, "GOOGLE_API_KEY"),
        ("openai/gpt-x", _wrapped_bad_request(), JudgeRequestRejected, "max_tokens too large"),
        ("openai/gpt-x", INJECTED, JudgeRequestRejected, "BadRequestError 400: max_tokens"),
        ("openai/gpt-x", RuntimeError("socket closed"), JudgeUnavailable, "socket closed"),
    ],
)
async def test_exceptions_are_mapped(
    judge_id: str, error: Exception, expected: type[Exception], message: str
) -> None:
    script = Script(error)
    with pytest.raises(expected, match=message):
        await executor(script, judge_id).complete(text_request(), None)


def _retry_on_flaky(model: Model) -> None:
    # stand-ins for a provider's own classification, without Inspect's 3 s backoff
    model.api.should_retry = lambda ex: isinstance(ex, FlakyError)
    model.api.retry_wait = lambda: wait_none()


async def test_transient_failures_are_retried_by_inspect() -> None:
    script = Script(FlakyError("503"), FlakyError("503"), reply())
    model = mock_model(script)
    _retry_on_flaky(model)
    judge = InspectExecutor("mockllm/model", inspect_settings(max_retries=2), model_obj=model)
    completion = await judge.complete(text_request(), None)
    assert completion.text == VERDICT
    assert len(script.inputs) == 3


async def test_exhausted_retries_are_unavailable() -> None:
    script = Script(*[FlakyError("503 overloaded")] * 3)
    model = mock_model(script)
    _retry_on_flaky(model)
    judge = InspectExecutor("mockllm/model", inspect_settings(max_retries=2), model_obj=model)
    with pytest.raises(JudgeUnavailable, match="503 overloaded") as caught:
        await judge.complete(text_request(), None)
    assert caught.value.attempts == 3


# -- model lifecycle ---------------------------------------------------------------------


def track_aclose(model: Model) -> list[bool]:
    """Record calls of the provider client's ``aclose`` (what ``Model.__aexit__`` runs)."""
    closed: list[bool] = []
    real_aclose = model.api.aclose

    async def aclose() -> None:
        closed.append(True)
        await real_aclose()

    model.api.aclose = aclose
    return closed


@pytest.fixture
def created(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Intercept the executor's own ``get_model`` call, scripting the model it creates."""
    import inspect_ai.model

    script = Script(reply())
    calls: list[dict[str, Any]] = []
    real: Callable[..., Model] = inspect_ai.model.get_model

    def fake(model: str, **kwargs: Any) -> Model:
        calls.append({"model": model, **kwargs})
        return real(model, custom_outputs=script, **kwargs)

    monkeypatch.setattr(inspect_ai.model, "get_model", fake)
    return calls


async def test_executor_creates_and_closes_its_own_model(
    created: list[dict[str, Any]],
) -> None:
    calls = created
    judge = InspectExecutor("mockllm/model", inspect_settings(max_tokens=123))
    assert calls == []  # nothing is created before the loop runs
    async with judge:
        assert judge._model is not None
        closed = track_aclose(judge._model)
        assert (await judge.complete(text_request(), None)).text == VERDICT
    assert closed == [True]
    assert calls[0]["memoize"] is False  # kept out of Inspect's shared model cache
    assert calls[0]["config"].max_tokens == 123
    with pytest.raises(RuntimeError, match="closed"):
        await judge.complete(text_request(), None)


async def test_given_model_is_not_closed() -> None:
    model = mock_model(Script(reply()))
    closed = track_aclose(model)
    async with InspectExecutor("mockllm/model", model_obj=model) as judge:
        await judge.complete(text_request(), None)
    assert closed == []  # its owner closes it


def test_executor_is_bound_to_its_first_event_loop() -> None:
    # Two explicit loops: after Inspect has run in this process, asyncio.run may be patched
    # to reuse the running loop, which would make this test pass or fail by test order.
    judge = executor(Script(reply(), reply()))
    first, second = asyncio.new_event_loop(), asyncio.new_event_loop()
    try:
        first.run_until_complete(judge.complete(text_request(), None))
        with pytest.raises(RuntimeError, match="another event loop"):
            second.run_until_complete(judge.complete(text_request(), None))
    finally:
        first.close()
        second.close()


async def test_unknown_provider_is_a_judge_error() -> None:
    with pytest.raises(JudgeError, match="not recognized"):
        await InspectExecutor("nosuchprovider/model").complete(text_request(), None)


async def test_missing_api_key_is_an_auth_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "AZUREAI_OPENAI_API_KEY", "AZURE_OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(JudgeAuthError, match="OPENAI_API_KEY"):
        async with InspectExecutor("openai/gpt-4.1-mini"):
            pass


# -- Inspect's openai provider against the loopback fake server ----------------------------


@pytest.mark.parametrize(
    ("fault", "expected", "message"),
    [
        (None, None, ""),
        ("http_401", JudgeAuthError, "OPENAI_API_KEY"),
        ("http_400", JudgeRequestRejected, "request rejected: BadRequestError 400"),
        ("content_policy", JudgeRequestRejected, "content policy: .*safety system"),
    ],
)
async def test_how_the_openai_provider_surfaces_faults(
    monkeypatch: pytest.MonkeyPatch,
    fault: FaultKind | None,
    expected: type[Exception] | None,
    message: str,
) -> None:
    """Pins what Inspect does with real HTTP errors: a 401 is raised as the SDK's
    AuthenticationError, a 400 as ModelGenerateError from BadRequestError, and a content
    policy 400 comes back as a content_filter output."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    async with FakeOpenAIServer(faults=[FaultRule(action=fault)] if fault else []) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        async with InspectExecutor("openai/gpt-4.1-mini", inspect_settings(max_retries=0)) as judge:
            if expected is None:
                completion = await judge.complete(text_request(), RESPONSE_FORMAT)
                assert '"verdict"' in completion.text
                assert completion.prompt_tokens > 0
            else:
                with pytest.raises(expected, match=message):
                    await judge.complete(text_request(), RESPONSE_FORMAT)
        assert len(server.requests) == 1  # none of these is retried


def test_importing_the_executor_does_not_import_inspect() -> None:
    code = (
        "import sys, gamut_eval.judge._client_inspect; "
        "sys.exit(1 if 'inspect_ai' in sys.modules else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_inspect_batch_mode_reaches_the_generate_config() -> None:
    from gamut_eval.judge import make_client as make_executor

    judge = make_executor(
        JudgeSettings(judge="mockllm/model", backend="inspect", inspect_batch=True)
    )
    assert isinstance(judge, InspectExecutor)
    assert judge._base_config().batch is True
    plain = make_executor(JudgeSettings(judge="mockllm/model", backend="inspect"))
    assert plain._base_config().batch is None  # type: ignore[attr-defined]
