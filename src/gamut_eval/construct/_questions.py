"""Stage ``questions``: a multimodal model proposes candidate questions for each image."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from gamut_eval.construct._cache import content_hash
from gamut_eval.construct._errors import Invalid
from gamut_eval.construct._images import data_url, load_images
from gamut_eval.construct._jsonschema import object_schema
from gamut_eval.construct._llm import Prompt
from gamut_eval.construct._models import FROZEN, ImageRecord, Provenance, StageReport
from gamut_eval.construct._prompts_questions import (
    QUESTIONS_SYSTEM,
    QUESTIONS_VERSION,
    questions_user,
)
from gamut_eval.construct._question_models import Candidate
from gamut_eval.construct._session import BuildSession, UnitCall
from gamut_eval.construct._text import names_entity, normalise
from gamut_eval.errors import InputError

__all__ = ["ImageCandidates", "image_inputs", "run_questions"]

MAX_QUESTION_CHARS = 300
"""A question longer than this is not "concise and natural" (docs/method.md [B2])."""

_SCHEMA = object_schema(
    {
        "candidates": {
            "type": "array",
            "items": object_schema({"question": {"type": "string"}, "aspect": {"type": "string"}}),
        }
    }
)


class ImageCandidates(BaseModel):
    """The candidates written for one image (a cached unit)."""

    model_config = FROZEN

    image_id: str
    candidates: tuple[Candidate, ...]
    provenance: Provenance


def image_inputs(image: ImageRecord) -> dict[str, str]:
    """Content hashes of what a model sees of an image: the bytes and the manifest facts."""
    facts = {"entity": image.entity, "domain": image.domain}
    return {"image": image.sha256, "facts": content_hash(facts)}


def question_errors(questions: list[str], entity: str | None, where: str) -> list[str]:
    """Problems of a list of questions that code can see: empty, long, repeated, naming the
    entity (the plainest failure of the stranger test)."""
    errors = []
    seen: set[str] = set()
    for i, question in enumerate(questions):
        label = f"{where}[{i}]"
        if not question.strip():
            errors.append(f"{label}: the question is empty")
        elif len(question) > MAX_QUESTION_CHARS:
            errors.append(f"{label}: longer than {MAX_QUESTION_CHARS} characters; be concise")
        if normalise(question) in seen:
            errors.append(f"{label}: repeats an earlier candidate")
        seen.add(normalise(question))
        if entity and names_entity(question, entity):
            errors.append(
                f"{label}: names the entity ({entity!r}); refer to it only through what the "
                "photo shows (stranger test)"
            )
    return errors


def _validator(
    image: ImageRecord, count: int
) -> Callable[[Any], Awaitable[list[tuple[str, str | None]]]]:
    async def validate(data: Any) -> list[tuple[str, str | None]]:
        raw = data.get("candidates")
        if not isinstance(raw, list) or not all(
            isinstance(c, dict) and isinstance(c.get("question"), str) for c in raw
        ):
            raise Invalid(['`candidates` must be a list of {"question": ..., "aspect": ...}'])
        questions = [c["question"].strip() for c in raw]
        errors = question_errors(questions, image.entity, "candidates")
        if len(raw) != count:
            errors.append(f"expected exactly {count} candidates, found {len(raw)}")
        if errors:
            raise Invalid(errors)
        aspects = [c.get("aspect") if isinstance(c.get("aspect"), str) else None for c in raw]
        return list(zip(questions, aspects, strict=True))

    return validate


async def _write_candidates(call: UnitCall, image: ImageRecord, count: int) -> ImageCandidates:
    prompt = Prompt(
        QUESTIONS_SYSTEM,
        questions_user(count, image.entity, image.domain),
        (data_url(image.image),),
    )
    pairs, _ = await call.ask(prompt, _validator(image, count), _SCHEMA)
    provenance = call.provenance()
    candidates = tuple(
        Candidate(
            id=f"{image.id}-c{i}",
            image_id=image.id,
            question=question,
            origin="generated",
            aspect=aspect,
            provenance=provenance,
        )
        for i, (question, aspect) in enumerate(pairs, start=1)
    )
    return ImageCandidates(image_id=image.id, candidates=candidates, provenance=provenance)


async def run_questions(
    session: BuildSession, images: str | Path, per_image: int = 5
) -> StageReport:
    """Write ``questions/images.jsonl`` and ``questions/candidates.jsonl``."""
    if per_image < 1:
        raise InputError(f"--per-image must be at least 1 (found: {per_image})")
    records = load_images(images)
    session.require_model("questions")
    run = session.stage("questions", QUESTIONS_VERSION, {"per_image": per_image})

    async def one(image: ImageRecord) -> ImageCandidates | None:
        async def work(call: UnitCall) -> ImageCandidates:
            return await _write_candidates(call, image, per_image)

        return await run.unit(image.id, image_inputs(image), work, ImageCandidates)

    results = await asyncio.gather(*(one(r) for r in records))
    workdir = session.workdir
    images_path = workdir.write("images", records)
    candidates = [c for r in results if r is not None for c in r.candidates]
    candidates_path = workdir.write("candidates", candidates)
    notes = (f"{len(candidates)} candidate questions for {len(records)} image(s)",)
    return run.finish(
        units=len(records),
        outputs={"images": images_path, "candidates": candidates_path},
        notes=notes,
    )
