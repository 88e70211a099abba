"""Fail fast for the answering models: one tiny request per model before generation.

As for the judges (``judge/_probe.py``): a dead URL, an unknown model, a rejected key or a
refused parameter should end the command in seconds, not after an eval set has retried
every sample. Each distinct model gets one request through Inspect AI's model API (the
run's generation config, a few tokens, a short timeout, no retries), all at once. For the
multimodal setting the request carries a tiny image; a model that refuses it (and takes
the same request without the image) is named with the way out: the text-only setting or a
vision model. Any failure raises ``ProbeFailed`` (exit 2) before anything is written.
"""

from __future__ import annotations

import asyncio
import base64
import os
import struct
import zlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from gamut_eval.judge import PROBE_TIMEOUT_S, ProbeFailed

if TYPE_CHECKING:
    from inspect_ai.model import ChatMessage, Model

    from gamut_eval.generate._settings import GenerationSettings

PROBE_PROMPT = "Reply with the single word: ready."
PROBE_IMAGE_PROMPT = "What colour is this image? Reply with one word."
"""The probe's prompts (what a server's request log shows first)."""
_PROBE_MAX_TOKENS = 8
_NO_IMAGES = "run with setting text_only, or use a vision model"
_SKIP = "nothing was written (turning probe off skips this check)"


def _png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    row = b"\x00" + bytes(rgb) * width
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


def probe_image_url() -> str:
    """A 2x2 red PNG as a data URL: the image of the multimodal probe."""
    return "data:image/png;base64," + base64.b64encode(_png(2, 2, (255, 0, 0))).decode()


def _where(model: str, model_args: dict[str, Any]) -> str:
    """The base URL an ``openai-api/<service>/...`` model is sent to, else the provider."""
    if isinstance(model_args.get("base_url"), str):
        return str(model_args["base_url"])
    provider, _, rest = model.partition("/")
    if provider == "openai-api" and "/" in rest:
        service = rest.split("/", 1)[0].upper().replace("-", "_")
        url = os.environ.get(f"{service}_BASE_URL")
        if url:
            return url
        return f"provider {provider} ({service}_BASE_URL is not set)"
    return f"provider {provider}"


def _messages(image: bool) -> list[ChatMessage]:
    from inspect_ai.model import ChatMessageUser, ContentImage, ContentText

    if not image:
        return [ChatMessageUser(content=PROBE_PROMPT)]
    parts = [ContentText(text=PROBE_IMAGE_PROMPT), ContentImage(image=probe_image_url())]
    return [ChatMessageUser(content=list(parts))]


class _Refused(Exception):
    """One probe request failed; ``reason`` says why, ``final`` when no other request
    shape could help (credentials, no reply)."""

    def __init__(self, reason: str, final: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.final = final


async def _send(model: Model, name: str, image: bool) -> None:
    from gamut_eval.judge import causes, describe, is_auth_failure, key_hint

    try:
        await asyncio.wait_for(model.generate(_messages(image), cache=False), PROBE_TIMEOUT_S + 5)
    except TimeoutError:
        raise _Refused(f"no reply in {PROBE_TIMEOUT_S:.0f} s", final=True) from None
    except Exception as exc:
        chain = list(causes(exc))
        if any(is_auth_failure(e, model) for e in chain):
            reason = f"the provider rejected the credentials ({describe(chain[-1])}); "
            raise _Refused(reason + key_hint(name, model), final=True) from None
        status = getattr(chain[-1], "status_code", None)
        raise _Refused(describe(chain[-1]), final=not isinstance(status, int)) from None


async def _probe(
    name: str, image: bool, generation: GenerationSettings, no_images: str = _NO_IMAGES
) -> None:
    from inspect_ai.model import GenerateConfig, get_model

    from gamut_eval.judge import creation_reason

    args = dict(generation.model_args)
    where = _where(name, args)
    timeout = round(PROBE_TIMEOUT_S)
    config = GenerateConfig(
        **{**generation.generate_config(), "max_tokens": _PROBE_MAX_TOKENS},
        timeout=timeout,
        attempt_timeout=timeout,
        max_retries=0,
        fail_on_refusal=False,
    )
    try:
        model = get_model(name, config=config, memoize=False, **args)
    except Exception as exc:
        reason, _ = creation_reason(name, exc)
        raise ProbeFailed(f"model {name} ({where}) cannot be used: {reason}; {_SKIP}") from None
    try:
        try:
            await _send(model, name, image)
        except _Refused as refused:
            if not image or refused.final:
                raise
            try:  # the same request without the image: is the image what is refused?
                await _send(model, name, image=False)
            except _Refused:
                raise refused from None
            raise ProbeFailed(
                f"model {name} at {where} does not take images (a request with a 2x2 image "
                f"was refused: {refused.reason}): {no_images}; {_SKIP}",
                setting=("setting", "probe"),
            ) from None
    except _Refused as refused:
        raise ProbeFailed(
            f"model {name} at {where} cannot be used: {refused.reason}. Check the model "
            f"name, the URL (the provider's *_BASE_URL variable) and the key; {_SKIP}"
        ) from None
    finally:
        # Model has no aclose(); its async exit closes the API client
        await model.__aexit__(None, None, None)


def probe_models(
    models: Sequence[str],
    setting: str,
    generation: GenerationSettings | None = None,
    *,
    no_images: str = _NO_IMAGES,
) -> None:
    """One tiny request to each distinct model, concurrently (with an image unless the
    setting is ``text_only``). Raises ``ProbeFailed`` for the first that fails;
    ``no_images`` is the way out it names for a model that refuses the image."""
    from gamut_eval.generate._settings import GenerationSettings
    from gamut_eval.generate._tokens import ensure_o200k_base

    ensure_o200k_base()  # Inspect counts the probe's tokens when a provider reports none
    generation = generation or GenerationSettings()
    image = setting != "text_only"
    distinct = list(dict.fromkeys(models))
    if not distinct:
        return

    async def main() -> None:
        await asyncio.gather(*(_probe(name, image, generation, no_images) for name in distinct))

    asyncio.run(main())
