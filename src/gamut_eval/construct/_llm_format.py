"""How the build asks a provider for a JSON reply, and what it learns when refused.

The ladder is the judge's (``judge/_wire_openai.py``): ``json_schema`` -> ``json_object``
-> ``none``, each step taken once, when the provider refuses the one before, and kept for
every later call of the run.

- ``json_schema``: Inspect's ``ResponseSchema`` (OpenAI ``response_format`` of type
  ``json_schema``; Anthropic ``output_format``; Gemini ``responseSchema``).
- ``json_object``: on OpenAI-compatible servers, ``response_format`` of type
  ``json_object`` with the schema beside it (llama.cpp's server takes this and constrains
  the reply by the schema; others take JSON mode and ignore the schema). On Anthropic, a
  forced tool call whose input schema is the reply's schema (the Messages API's own way to
  a JSON reply); the reply is the tool call's arguments.
- ``none``: no format at all; the prompt asks for the same JSON.

Whatever the step, the reply is parsed strictly and validated by the stage's own rules.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from gamut_eval.judge import Structured, causes, refuses_structured_output

if TYPE_CHECKING:
    from inspect_ai.model import ModelOutput
    from inspect_ai.tool import ToolInfo

__all__ = [
    "TOOL_NAME",
    "json_object_format",
    "refusal_of",
    "refused_format",
    "reply_text",
    "reply_tool",
    "wire_of",
]

TOOL_NAME = "reply"
"""The one tool an Anthropic model is made to call when it takes no ``output_format``."""

_OPENAI_WIRE = frozenset({
    "openai", "openai-api", "vllm", "sglang", "llama-cpp-python", "ollama", "together",
    "groq", "fireworks", "openrouter", "deepseek", "grok", "azureai", "perplexity",
    "sambanova", "moonshot", "litellm-proxy", "cloudflare", "hf-inference-providers",
})  # fmt: skip


def wire_of(model_name: str) -> str:
    """``openai``, ``anthropic`` or ``other``: how a ``json_object`` step is written."""
    provider = model_name.split("/", 1)[0]
    if provider in _OPENAI_WIRE:
        return "openai"
    return "anthropic" if provider == "anthropic" else "other"


def json_object_format(schema: dict[str, Any]) -> dict[str, Any]:
    """The ``response_format`` of the ``json_object`` step (as the judge sends it)."""
    return {"type": "json_object", "schema": schema}


def reply_tool(schema: dict[str, Any]) -> ToolInfo:
    """The tool whose input is the reply (Anthropic's ``json_object`` step)."""
    from inspect_ai.tool import ToolInfo, ToolParams

    return ToolInfo(
        name=TOOL_NAME,
        description="Give your complete reply as this tool's input.",
        parameters=ToolParams.model_validate(schema),
    )


def refused_format(exc: BaseException | None, error: str | None, mode: Structured) -> bool:
    """Whether a failed call (an exception, or an output's error text) refused the
    structured-output step ``mode`` (HTTP status and the provider's words)."""
    if mode == "none":
        return False
    for status, message in _failures(exc, error):
        if refuses_structured_output(status, message):
            return True
    return False


def _failures(exc: BaseException | None, error: str | None) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    if error:
        found.append((400, error))
    if exc is not None:
        for cause in causes(exc):
            status = getattr(cause, "status_code", None)
            message = str(getattr(cause, "provider_message", None) or cause)
            body = getattr(cause, "body", None)
            if body is not None:
                message += f" {body}"
            found.append((status if isinstance(status, int) else 0, message))
    return found


def refusal_of(output: ModelOutput) -> str | None:
    """The model's refusal, when it declined to answer (OpenAI ``message.refusal``, a
    ``refusal`` stop reason, or a content filter)."""
    if output.empty:
        return None
    choice = output.choices[0]
    content = choice.message.content
    if not isinstance(content, str):
        refused = [c.text for c in content if getattr(c, "refusal", None) and hasattr(c, "text")]
        if refused:
            return " ".join(refused)
    if choice.stop_reason == "content_filter":
        details = choice.stop_details
        return str(getattr(details, "explanation", None) or output.completion or "filtered")
    return None


def reply_text(output: ModelOutput) -> str:
    """The reply's text: the arguments of a ``reply`` tool call when there is one."""
    if not output.empty:
        for call in output.choices[0].message.tool_calls or ():
            if call.function == TOOL_NAME:
                return json.dumps(call.arguments, ensure_ascii=False)
    return str(output.completion)
