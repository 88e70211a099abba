"""Model calls for the build: Inspect AI's model API, the JSON reply format asked of a
provider, the reply schemas, and the calls with their bounded repairs.

Every call goes through ``inspect_ai.model.Model.generate`` (any provider Inspect supports;
images as ``ContentImage`` data URLs). A reply is parsed as JSON and validated by the
caller's own rules; when it fails, the reply and the errors are sent back as a new turn, at
most ``max_repairs`` times, and then the unit ends with a ``UnitError`` carrying the last
errors (``UnitCall.ask`` in ``_session``). A call that still fails after Inspect's own
retries ends only its unit; rejected credentials end the whole run (every other unit would
fail the same way).

How a provider is asked for a JSON reply follows the judge's ladder
(``judge/backends/_shape.py``): ``json_schema`` -> ``json_object`` -> ``none``, each step
taken once, when the provider refuses the one before, and kept for every later call of the
run.

- ``json_schema``: Inspect's ``ResponseSchema`` (OpenAI ``response_format`` of type
  ``json_schema``; Anthropic ``output_format``; Gemini ``responseSchema``).
- ``json_object``: on OpenAI-compatible servers, ``response_format`` of type
  ``json_object`` with the schema beside it (llama.cpp's server takes this and constrains
  the reply by the schema; others take JSON mode and ignore the schema). On Anthropic, a
  forced tool call whose input schema is the reply's schema (the Messages API's own way to
  a JSON reply); the reply is the tool call's arguments.
- ``none``: no format at all; the prompt asks for the same JSON.

Inspect's ``JSONSchema`` has no ``$ref``/``$defs``, ``oneOf`` or ``const``: a Pydantic schema
handed over as is loses every referenced definition (the meta-rubric's items would become
``{}``). ``inline_schema`` resolves references and rewrites ``oneOf`` as ``anyOf`` and
``const`` as a one-value ``enum``, so the provider sees the real structure. Whatever the
step, the reply is still validated by our own models: the schema only helps the model.

``inspect_ai`` is imported lazily: it is heavy, and ``gamut --help`` must stay fast.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gamut_eval._files import parse_json
from gamut_eval._usage import Usage
from gamut_eval.construct._models import BuildError, Invalid, UnitError
from gamut_eval.construct._settings import ModelSettings
from gamut_eval.judge import Structured, causes, next_structured, refuses_structured_output
from gamut_eval.rubric import meta_rubric_json_schema

if TYPE_CHECKING:
    from inspect_ai.model import ChatMessage, GenerateConfig, Model, ModelOutput
    from inspect_ai.tool import ToolInfo

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
    return any(refuses_structured_output(s, m) for s, m in _failures(exc, error))


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


_MAX_DEPTH = 32


def inline_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with every local ``$ref`` replaced by its definition (no recursion)."""
    defs = schema.get("$defs", {})
    top = {k: v for k, v in schema.items() if k not in ("$defs", "$schema", "$id")}
    resolved: dict[str, Any] = _resolve(top, defs)
    return resolved


def _resolve(node: Any, defs: dict[str, Any], depth: int = 0) -> Any:
    if depth > _MAX_DEPTH:
        raise ValueError("schema nests too deeply (a recursive $ref?)")
    if isinstance(node, list):
        return [_resolve(n, defs, depth + 1) for n in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        merged = {
            **defs[ref.removeprefix("#/$defs/")],
            **{k: v for k, v in node.items() if k != "$ref"},
        }
        return _resolve(merged, defs, depth + 1)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "oneOf":
            out["anyOf"] = _resolve(value, defs, depth + 1)
        elif key == "const":
            out["enum"] = [value]
        elif key in ("discriminator", "title"):
            continue
        else:
            out[key] = _resolve(value, defs, depth + 1)
    return out


def object_schema(properties: dict[str, Any]) -> dict[str, Any]:
    """A closed JSON object schema."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def rubric_items_schema() -> dict[str, Any]:
    """``{"items": [...]}``: the items of a meta-rubric, as the draft writes them."""
    schema = inline_schema(meta_rubric_json_schema())
    return object_schema({"items": schema["properties"]["items"]})


def rebuild_reply_schema() -> dict[str, Any]:
    """The rebuild's reply: the refined items and the drops with their reasons."""
    drop = object_schema({"item": {"type": "string"}, "reason": {"type": "string"}})
    items = rubric_items_schema()["properties"]["items"]
    return object_schema({"items": items, "dropped": {"type": "array", "items": drop}})


logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Prompt:
    """One request: static instructions, the user turn, and images as data URLs."""

    system: str
    user: str
    images: tuple[str, ...] = ()


@dataclass
class UsageMeter:
    """Tokens spent by the calls of one unit of work."""

    usage: Usage = field(default_factory=lambda: Usage(calls=0))

    def add(self, output: ModelOutput) -> None:
        u = output.usage
        if u is None:
            self.usage = self.usage + Usage(calls=1)
            return
        cached = u.input_tokens_cache_read or 0
        spent = Usage(
            calls=1,
            # Inspect counts cache reads and writes apart from input_tokens
            input=u.input_tokens + cached + (u.input_tokens_cache_write or 0),
            cached_input=cached,
            output=u.output_tokens,
            reasoning=u.reasoning_tokens or 0,
            cost=u.total_cost,
        )
        self.usage = self.usage + spent


_AUTH_NAMES = frozenset({"AuthenticationError", "PermissionDeniedError"})


class BuildModel:
    """An Inspect model used by the stages; ``model`` is a model string or a ``Model``.

    A model string is turned into a ``Model`` lazily, inside the running event loop (provider
    clients bind to the loop they first run in), and closed by ``aclose``. A ``Model``
    passed in (tests, custom providers) is used as is and not closed.
    """

    def __init__(self, model: str | Model, settings: ModelSettings | None = None) -> None:
        self.settings = settings or ModelSettings()
        self._model: Model | None = None if isinstance(model, str) else model
        self._owns = isinstance(model, str)
        self.name = model if isinstance(model, str) else str(model)
        self._wire = wire_of(self.name)
        self.structured: Structured = "json_schema"
        """The structured-output step in force (lowered when the provider refuses one)."""
        self.corrections: list[str] = []
        """Each step the provider refused, in order, and what was asked instead."""
        self._confirmed = False
        """A structured reply came back: later failures are not format refusals."""

    def _get(self) -> Model:
        if self._model is None:
            from inspect_ai.model import get_model

            try:
                # the SDKs' own retries off (openai and anthropic retry 5xx twice each):
                # Inspect retries transient failures, and a refused format is not retried
                sdk = {"max_retries": 0} if self._wire in ("openai", "anthropic") else {}
                self._model = get_model(self.name, config=self._config(), memoize=False, **sdk)
            except Exception as exc:
                raise BuildError(f"model {self.name}: cannot be created: {exc}") from exc
        return self._model

    def _config(
        self, schema: dict[str, Any] | None = None, mode: Structured = "none", probe: bool = False
    ) -> GenerateConfig:
        from inspect_ai.model import GenerateConfig, ResponseSchema
        from inspect_ai.util import JSONSchema

        s = self.settings
        config = GenerateConfig(
            max_tokens=s.max_tokens,
            temperature=s.temperature,
            attempt_timeout=s.timeout_s,
            # a first structured request is sent once: a refused format must not be retried
            max_retries=0 if probe else s.max_retries,
        )
        if mode == "json_schema":
            config.response_schema = ResponseSchema(
                name="reply", json_schema=JSONSchema.model_validate(schema), strict=False
            )
        elif mode == "json_object" and self._wire == "openai":
            # the json_object step's response_format, as the judge sends it
            config.extra_body = {"response_format": {"type": "json_object", "schema": schema}}
        return config

    def _mode(self) -> Structured:
        if not self.settings.structured_output:
            return "none"
        if self.structured == "json_object" and self._wire == "other":
            return "none"
        return self.structured

    async def generate(
        self, messages: list[ChatMessage], schema: dict[str, Any], meter: UsageMeter
    ) -> str:
        """The reply text of one call; ``UnitError`` when the call fails for good.

        A structured-output step the provider refuses is dropped for the next one (once per
        run, see ``refused_format``) and the call is sent again at once.
        """
        from inspect_ai.tool import ToolFunction

        model = self._get()
        retried = False
        while True:
            mode, version = self._mode(), len(self.corrections)
            probe = mode != "none" and not self._confirmed and not retried
            forced = mode == "json_object" and self._wire == "anthropic"
            tools = [reply_tool(schema)] if forced else []
            config = self._config(schema, mode, probe)
            try:
                # cache=False: the build cache is the only cache, and it never keeps failures
                output = await model.generate(
                    messages,
                    tools=tools,
                    tool_choice=ToolFunction(name=TOOL_NAME) if tools else None,
                    config=config,
                    cache=False,
                )
            except Exception as exc:
                status = getattr(exc, "status_code", None)
                if type(exc).__name__ in _AUTH_NAMES or status in (401, 403):
                    message = f"model {self.name}: credentials rejected: {_describe(exc)}"
                    raise BuildError(message) from exc
                if self._degrade(mode, version, exc, None):
                    continue
                if probe and _transient(model, exc):  # send it again with Inspect's retries
                    retried = True
                    continue
                raise UnitError("model-call", f"model call failed: {_describe(exc)}") from exc
            meter.add(output)
            if output.error and self._degrade(mode, version, None, str(output.error)):
                continue
            break
        reply = None if output.empty else reply_text(output)
        if output.error:
            raise UnitError(
                "model-call", f"model call failed: {str(output.error)[:300]}", reply=reply
            )
        if mode != "none":
            self._confirmed = True
        refusal = refusal_of(output)
        if refusal is not None:
            # a refusal is the model's answer: re-asking would argue with it; people decide
            raise UnitError(
                "refused", f"the model declined to answer: {refusal[:300]}", reply=reply
            )
        if not output.empty and output.stop_reason == "model_length":
            raise UnitError(
                "too-long",
                "the request and reply exceed the model's context window; use fewer snippets "
                "(max_snippets) or a model with a longer context",
                setting="max_snippets",
                reply=reply,
            )
        if not output.empty and output.stop_reason == "max_tokens":
            # a repair would be cut off the same way
            raise UnitError(
                "truncated",
                f"the reply was cut off at {self.settings.max_tokens} tokens; raise max_tokens",
                setting="max_tokens",
                reply=reply,
            )
        return reply_text(output)

    def _degrade(
        self, mode: Structured, version: int, exc: BaseException | None, error: str | None
    ) -> bool:
        """Whether to send again in another structured-output step (taken now, or by a
        concurrent call since this one was sent)."""
        if mode == "none":
            return False
        if len(self.corrections) != version:
            return True
        if not refused_format(exc, error, mode):
            return False
        lower = next_structured(mode)
        if lower is None:
            return False
        self.structured = lower
        said = (_describe(exc) if exc is not None else str(error)).split("\n", 1)[0][:160]
        self.corrections.append(f"{self.name} refused {mode} ({said}); asking with {lower}")
        logger.warning("%s", self.corrections[-1])
        return True

    async def aclose(self) -> None:
        """Close a model this object created."""
        model, self._model = self._model, None
        if model is not None and self._owns:
            await model.__aexit__(None, None, None)


def _transient(model: Model, exc: BaseException) -> bool:
    """Whether the provider would have retried the failure (``Model.api.should_retry``)."""
    for cause in causes(exc):
        try:
            if model.api.should_retry(cause):
                return True
        except Exception:  # a provider's classifier that cannot read a foreign exception
            continue
    return False


def _describe(exc: BaseException) -> str:
    # never the whole str() of Inspect's ModelGenerateError: it embeds the request, images
    # included; provider_message is the provider's own words
    # (the last of a RetryError's attempts and of the explicit causes is the provider's)
    exc = list(causes(exc))[-1]
    message = str(getattr(exc, "provider_message", None) or exc).strip()
    return f"{type(exc).__name__}: {message[:300]}"


_FENCED = re.compile(r"^```[A-Za-z0-9_-]*\s*\n(.*?)\n?```\s*$", re.DOTALL)


def extract_json(text: str) -> Any:
    """The JSON object in a reply: the whole text, a fenced block, or the outermost braces.

    Duplicate keys are refused (a model repeating a key is as wrong as a person doing so).
    """
    stripped = text.strip()
    fenced = _FENCED.match(stripped)
    candidates = [fenced.group(1)] if fenced else [stripped]
    start, end = stripped.find("{"), stripped.rfind("}")
    if start != -1 and end > start:
        candidates.append(stripped[start : end + 1])
    error = "the reply is empty"
    for candidate in candidates:
        try:
            value = parse_json(candidate)
        except ValueError as exc:
            error = f"the reply is not valid JSON ({exc})"
            continue
        if isinstance(value, dict):
            return value
        error = f"the reply is JSON but not an object (found {type(value).__name__})"
    raise Invalid([error], kind="not-json")


def repair_message(errors: list[str]) -> str:
    """The turn that feeds validation errors back to the model."""
    listed = "\n".join(f"- {e}" for e in errors)
    return (
        "Your reply could not be used. These problems were found:\n"
        f"{listed}\n\n"
        "Fix every one of them and reply again with the complete corrected JSON object only."
    )


def chat_messages(prompt: Prompt) -> list[ChatMessage]:
    """The conversation of a request: the instructions, then the user turn with its images."""
    from inspect_ai.model import (
        ChatMessageSystem,
        ChatMessageUser,
        Content,
        ContentImage,
        ContentText,
    )

    if not prompt.images:
        # plain text, not a list of parts: text-only servers (llama.cpp's chat templates)
        # take a message's content only as a string
        return [ChatMessageSystem(content=prompt.system), ChatMessageUser(content=prompt.user)]
    content: list[Content] = [ContentText(text=prompt.user)]
    content += [ContentImage(image=url) for url in prompt.images]
    return [ChatMessageSystem(content=prompt.system), ChatMessageUser(content=content)]
