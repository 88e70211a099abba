"""Judge model names (Inspect AI's convention) -> endpoints and default backends."""

from __future__ import annotations

import pytest

from gamut_eval.errors import InputError
from gamut_eval.judge._resolve import FAST_PROVIDERS, default_backend, resolve_endpoint

ENV_VARS = [
    f"{prefix}_{suffix}"
    for prefix in (
        "OPENAI",
        "VLLM",
        "OLLAMA",
        "OPENROUTER",
        "TOGETHER",
        "GROQ",
        "FIREWORKS",
        "DEEPSEEK",
        "MY_LAB",
    )
    for suffix in ("BASE_URL", "API_KEY")
]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)


def test_openai_defaults_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    endpoint = resolve_endpoint("openai/gpt-4.1-mini")
    assert endpoint.judge_id == "openai/gpt-4.1-mini"
    assert (endpoint.provider, endpoint.model_name) == ("openai", "gpt-4.1-mini")
    assert endpoint.base_url == "https://api.openai.com/v1"
    assert (endpoint.api_key, endpoint.api_key_env) == (None, "OPENAI_API_KEY")

    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("OPENAI_BASE_URL", "https://proxy.example/v1/")
    endpoint = resolve_endpoint("openai/gpt-4.1-mini")
    assert (endpoint.base_url, endpoint.api_key) == ("https://proxy.example/v1", "sk-env")


def test_explicit_arguments_beat_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("OPENAI_BASE_URL", "https://proxy.example/v1")
    endpoint = resolve_endpoint(
        "openai/gpt-4.1", base_url="http://127.0.0.1:9/v1/chat/completions", api_key="sk-arg"
    )
    assert (endpoint.base_url, endpoint.api_key) == ("http://127.0.0.1:9/v1", "sk-arg")


def test_the_api_key_is_kept_out_of_the_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-very-secret")
    assert "sk-very-secret" not in repr(resolve_endpoint("openai/gpt-4.1"))


def test_openai_api_service_needs_its_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InputError, match="set MY_LAB_BASE_URL"):
        resolve_endpoint("openai-api/my-lab/judge-7b")
    monkeypatch.setenv("MY_LAB_BASE_URL", "https://lab.example/api/v1")
    monkeypatch.setenv("MY_LAB_API_KEY", "lab-key")
    endpoint = resolve_endpoint("openai-api/my-lab/org/judge-7b")
    assert (endpoint.provider, endpoint.model_name) == ("openai-api", "org/judge-7b")
    assert (endpoint.base_url, endpoint.api_key) == ("https://lab.example/api/v1", "lab-key")
    assert endpoint.api_key_env == "MY_LAB_API_KEY"


def test_openai_api_without_a_service_is_explained() -> None:
    with pytest.raises(InputError, match=r"openai-api/<service>/<model>"):
        resolve_endpoint("openai-api/deepseek-chat")


@pytest.mark.parametrize(
    ("model", "base_url", "model_name", "key_env"),
    [
        ("vllm/Qwen/Qwen3-8B", "http://localhost:8000/v1", "Qwen/Qwen3-8B", "VLLM_API_KEY"),
        ("ollama/llama3.1:8b", "http://localhost:11434/v1", "llama3.1:8b", "OLLAMA_API_KEY"),
        (
            "openrouter/anthropic/claude-sonnet-4",
            "https://openrouter.ai/api/v1",
            "anthropic/claude-sonnet-4",
            "OPENROUTER_API_KEY",
        ),
        (
            "together/meta-llama/Llama-3.3-70B-Instruct-Turbo",
            "https://api.together.xyz/v1",
            "meta-llama/Llama-3.3-70B-Instruct-Turbo",
            "TOGETHER_API_KEY",
        ),
        (
            "groq/llama-3.3-70b-versatile",
            "https://api.groq.com/openai/v1",
            "llama-3.3-70b-versatile",
            "GROQ_API_KEY",
        ),
        (
            "fireworks/accounts/fireworks/models/llama-v3p1-8b-instruct",
            "https://api.fireworks.ai/inference/v1",
            "accounts/fireworks/models/llama-v3p1-8b-instruct",
            "FIREWORKS_API_KEY",
        ),
    ],
)
def test_provider_defaults(model: str, base_url: str, model_name: str, key_env: str) -> None:
    endpoint = resolve_endpoint(model)
    assert (endpoint.base_url, endpoint.model_name, endpoint.api_key_env) == (
        base_url,
        model_name,
        key_env,
    )
    assert default_backend(model) == "fast"


def test_local_servers_take_their_base_url_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("VLLM_BASE_URL", "http://gpu-node:8000/v1")
    monkeypatch.setenv("VLLM_API_KEY", "token")
    endpoint = resolve_endpoint("vllm/Qwen/Qwen3-8B")
    assert (endpoint.base_url, endpoint.api_key) == ("http://gpu-node:8000/v1", "token")
    monkeypatch.setenv("OLLAMA_BASE_URL", "http://box:11434/v1")
    assert resolve_endpoint("ollama/llama3.1").base_url == "http://box:11434/v1"


def test_an_empty_variable_counts_as_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "")
    monkeypatch.setenv("OPENAI_API_KEY", "")
    endpoint = resolve_endpoint("openai/gpt-4.1")
    assert (endpoint.base_url, endpoint.api_key) == ("https://api.openai.com/v1", None)


@pytest.mark.parametrize(
    "model",
    [
        "mistral/mistral-large-latest",
        "bedrock/meta.llama3-70b",
        "azureai/Llama-3.3-70B",
        "mockllm/model",
        "openai/azure/gpt-4o",
    ],
)
def test_other_providers_go_through_inspect(model: str) -> None:
    assert default_backend(model) == "inspect"
    with pytest.raises(InputError, match="inspect judge backend"):
        resolve_endpoint(model)


@pytest.mark.parametrize("model", ["gpt-4.1-mini", "openai/", "/gpt-4.1", ""])
def test_a_name_without_a_provider_is_explained(model: str) -> None:
    with pytest.raises(InputError, match="provider/model"):
        resolve_endpoint(model)
    with pytest.raises(InputError, match="provider/model"):
        default_backend(model)


def test_fast_providers() -> None:
    assert {"openai", "openai-api", "vllm", "ollama", "openrouter"} <= FAST_PROVIDERS
    assert "anthropic" in FAST_PROVIDERS  # its Messages API, through AnthropicExecutor
    assert "google" in FAST_PROVIDERS  # Gemini's generateContent, through GeminiExecutor
