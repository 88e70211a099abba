"""The fake providers' prompt caches against the providers' documented rules, request by
request (tokens are characters / 4, as the fakes count them):

- OpenAI: nothing below 1,024 tokens; the longest prefix seen before, in steps of 128
  tokens above 1,024; no writes reported.
- Anthropic: only prefixes ending at a ``cache_control`` block, only from the model's
  minimum (1,024 tokens for Sonnet 4.5, 4,096 for Haiku 4.5); a write of the marked
  prefix beyond what was read, reported apart from reads and from input.
- Gemini: the longest prefix seen before that ends at a part boundary, from the model's
  minimum (2,048 for Gemini 2.5); no implicit cache before Gemini 2.5.
- Everywhere: a prefix is readable once the request that wrote it has been answered, so
  requests that arrive together all miss.
"""

from __future__ import annotations

import asyncio
import json
import urllib.request
from typing import Any

import aiohttp

from gamut_eval.testing import FakeAnthropicServer, FakeGeminiServer, FakeOpenAIServer


def text(tokens: int, fill: str = "a") -> str:
    """``tokens`` tokens as the fakes count them (4 characters each)."""
    return fill * (4 * tokens)


def post(url: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
    data = json.dumps(body).encode()
    request = urllib.request.Request(
        url, data, {"content-type": "application/json", **(headers or {})}
    )
    with urllib.request.urlopen(request, timeout=10) as reply:
        return json.loads(reply.read())


# -- OpenAI ----------------------------------------------------------------------------------


def openai_usage(server: FakeOpenAIServer, content: str) -> tuple[int, int]:
    body = {"model": "fake-judge", "messages": [{"role": "user", "content": content}]}
    usage = post(f"{server.base_url}/chat/completions", body)["usage"]
    return usage["prompt_tokens"], usage["prompt_tokens_details"]["cached_tokens"]


def test_openai_caches_from_1024_tokens_in_steps_of_128() -> None:
    with FakeOpenAIServer() as server:
        short = text(1000)
        assert openai_usage(server, short) == (1000, 0)
        assert openai_usage(server, short) == (1000, 0)  # below 1,024: never cached
        prompt = text(1300)
        assert openai_usage(server, prompt) == (1300, 0)
        assert openai_usage(server, prompt) == (1300, 1280)  # 1,024 + 2 x 128
        # a prompt sharing its first 1,200 tokens: served up to the last step in them
        assert openai_usage(server, text(1200) + text(500, "b")) == (1700, 1152)
        # the longer prompt is cached whole now, in its own steps
        assert openai_usage(server, text(1200) + text(500, "b")) == (1700, 1664)
        # a different beginning shares no prefix
        assert openai_usage(server, "b" + prompt[1:]) == (1300, 0)
        assert server.reported_usage() == {
            "prompt": 1000 * 2 + 1300 * 2 + 1700 * 2 + 1300,
            "cached": 1280 + 1152 + 1664,
            "written": 0,
            "output": server.reported_usage()["output"],
        }


def test_requests_that_arrive_together_all_miss() -> None:
    prompt = text(2000)
    body = {"model": "fake-judge", "messages": [{"role": "user", "content": prompt}]}

    async def together(url: str, n: int) -> list[int]:
        async with aiohttp.ClientSession() as session:

            async def one() -> int:
                async with session.post(url, json=body) as reply:
                    usage = (await reply.json())["usage"]
                    return int(usage["prompt_tokens_details"]["cached_tokens"])

            return list(await asyncio.gather(*(one() for _ in range(n))))

    with FakeOpenAIServer(latency_ms=200) as server:
        url = f"{server.base_url}/chat/completions"
        assert asyncio.run(together(url, 3)) == [0, 0, 0]
        assert asyncio.run(together(url, 1)) == [1920]


# -- Anthropic -------------------------------------------------------------------------------


def anthropic_usage(
    server: FakeAnthropicServer, model: str, system: str, prefix: str, check: str
) -> dict[str, int]:
    body = {
        "model": model,
        "max_tokens": 100,
        "system": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": prefix, "cache_control": {"type": "ephemeral"}},
                    {"type": "text", "text": check},
                ],
            }
        ],
    }
    headers = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
    usage: dict[str, int] = post(f"{server.base_url}/v1/messages", body, headers)["usage"]
    return {k: usage[k] for k in ("input_tokens", "cache_creation_input_tokens",
                                  "cache_read_input_tokens")}  # fmt: skip


def usage(input_tokens: int, write: int, read: int) -> dict[str, int]:
    return {
        "input_tokens": input_tokens,
        "cache_creation_input_tokens": write,
        "cache_read_input_tokens": read,
    }


def test_anthropic_caches_marked_prefixes_from_the_models_minimum() -> None:
    sonnet = "claude-sonnet-4-5"
    with FakeAnthropicServer() as server:
        system, answer, other = text(800, "s"), text(400, "p"), text(400, "q")
        # the system block alone (800) is under 1,024; with the answer (1,200) it is not
        assert anthropic_usage(server, sonnet, system, answer, text(10)) == usage(10, 1200, 0)
        assert anthropic_usage(server, sonnet, system, answer, text(12)) == usage(12, 0, 1200)
        # another answer after the same short system: nothing of it was cached alone
        assert anthropic_usage(server, sonnet, system, other, text(10)) == usage(10, 1200, 0)
        # a system block of 1,100 tokens is cached on its own: the next answer reads it
        long_system = text(1100, "t")
        assert anthropic_usage(server, sonnet, long_system, answer, text(10)) == usage(10, 1500, 0)
        assert anthropic_usage(server, sonnet, long_system, other, text(10)) == usage(10, 400, 1100)
        # Haiku 4.5 caches nothing under 4,096 tokens
        for _ in range(2):
            assert anthropic_usage(server, "claude-haiku-4-5", long_system, answer, text(10)) == (
                usage(1510, 0, 0)
            )
        reported = server.reported_usage()
        assert (reported["written"], reported["cached"]) == (1200 + 1200 + 1500 + 400, 1200 + 1100)


# -- Gemini ----------------------------------------------------------------------------------


def gemini_usage(server: FakeGeminiServer, model: str, system: str, prefix: str) -> tuple[int, int]:
    body = {
        "systemInstruction": {"parts": [{"text": system}]},
        "contents": [{"role": "user", "parts": [{"text": prefix}, {"text": text(5, "c")}]}],
    }
    url = f"{server.base_url}/models/{model}:generateContent"
    meta = post(url, body, {"x-goog-api-key": "k"})["usageMetadata"]
    return meta["promptTokenCount"], meta.get("cachedContentTokenCount", 0)


def test_gemini_caches_prefixes_at_part_boundaries_from_the_models_minimum() -> None:
    with FakeGeminiServer() as server:
        system = text(1500, "s")
        answer, other = text(700, "p"), text(700, "q")
        flash = "gemini-2.5-flash"
        assert gemini_usage(server, flash, system, answer) == (2205, 0)
        assert gemini_usage(server, flash, system, answer) == (2205, 2200)
        # the system instruction alone (1,500) is under 2,048: another answer misses
        assert gemini_usage(server, flash, system, other) == (2205, 0)
        # no implicit cache before Gemini 2.5
        for _ in range(2):
            assert gemini_usage(server, "gemini-2.0-flash", system, answer) == (2205, 0)
