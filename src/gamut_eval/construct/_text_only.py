"""Stage ``text-only``: each question with the entity named in text (docs/method.md [B10]).

The rewrite must name the entity and ask the same thing; code checks the first, a second
call (a checker with its own prompt) the second. A failed check is fed back like a
validation error, for a bounded number of repairs. The stage ends by assembling
``dataset.jsonl`` from the accepted questions, refined rubrics and text-only versions.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from gamut_eval.construct._dataset import assemble_dataset
from gamut_eval.construct._errors import Invalid
from gamut_eval.construct._evidence import ACCEPTED_HINT, question_inputs
from gamut_eval.construct._jsonschema import object_schema
from gamut_eval.construct._llm import Prompt
from gamut_eval.construct._models import StageReport
from gamut_eval.construct._prompts_questions import (
    SAME_QUESTION_SYSTEM,
    TEXT_ONLY_SYSTEM,
    TEXT_ONLY_VERSION,
    same_question_user,
    text_only_user,
)
from gamut_eval.construct._question_models import AcceptedQuestion, TextOnlyRecord
from gamut_eval.construct._questions import MAX_QUESTION_CHARS
from gamut_eval.construct._session import BuildSession, StageRun, UnitCall
from gamut_eval.construct._text import names_entity, normalise

__all__ = ["run_text_only", "text_only_unit"]

_REWRITE_SCHEMA = object_schema({"question_text_only": {"type": "string"}})
_SAME_SCHEMA = object_schema({"same": {"type": "boolean"}, "reason": {"type": "string"}})


async def _same(data: Any) -> tuple[bool, str]:
    same, reason = data.get("same"), data.get("reason")
    if not isinstance(same, bool) or not isinstance(reason, str) or not reason.strip():
        raise Invalid(['reply {"same": true or false, "reason": "<one sentence>"}'])
    return same, reason.strip()


def _validator(
    call: UnitCall, question: AcceptedQuestion, entity: str
) -> Callable[[Any], Awaitable[tuple[str, str]]]:
    async def validate(data: Any) -> tuple[str, str]:
        text = data.get("question_text_only")
        if not isinstance(text, str) or not text.strip():
            raise Invalid(["`question_text_only` must be a non-empty string"])
        text = text.strip()
        errors = []
        if not names_entity(text, entity):
            errors.append(f"the question must name the entity ({entity!r}) in its text")
        if len(text) > MAX_QUESTION_CHARS + len(entity):
            errors.append("the question is much longer than the original; keep it as concise")
        if normalise(text) == normalise(question.question):
            errors.append("the question is unchanged; name the entity instead of the photo")
        if errors:
            raise Invalid(errors)
        check = Prompt(SAME_QUESTION_SYSTEM, same_question_user(question.question, text, entity))
        (same, reason), _ = await call.ask(check, _same, _SAME_SCHEMA)
        if not same:
            raise Invalid(
                [f"a check found that it does not ask the same thing as the original: {reason}"]
            )
        return text, reason

    return validate


async def text_only_unit(run: StageRun, question: AcceptedQuestion) -> TextOnlyRecord | None:
    """One question's text-only version (None when it failed; the failure is recorded)."""
    entity = question.entity
    if not entity:
        run.fail(question.id, "no-entity", "no ground-truth entity (give it in the manifest)")
        return None

    async def work(call: UnitCall) -> TextOnlyRecord:
        prompt = Prompt(TEXT_ONLY_SYSTEM, text_only_user(question.question, entity))
        (text, reason), repairs = await call.ask(
            prompt, _validator(call, question, entity), _REWRITE_SCHEMA
        )
        return TextOnlyRecord(
            question_id=question.id,
            question=question.question,
            question_text_only=text,
            entity=entity,
            check=reason,
            repairs=repairs,
            provenance=call.provenance(),
        )

    return await run.unit(question.id, question_inputs(question), work, TextOnlyRecord)


async def run_text_only(session: BuildSession) -> StageReport:
    """Write ``text-only/text_only.jsonl``, then assemble ``dataset.jsonl``."""
    workdir = session.workdir
    questions = workdir.read("accepted", AcceptedQuestion, missing_hint=ACCEPTED_HINT)
    session.require_model("text-only")
    run = session.stage("text-only", TEXT_ONLY_VERSION)
    results = await asyncio.gather(*(text_only_unit(run, q) for q in questions))
    records = [r for r in results if r is not None]
    path = workdir.write("text_only", records)
    dataset = assemble_dataset(workdir)
    outputs = {"text_only": path}
    if dataset.path is not None:
        outputs["dataset"] = dataset.path
    notes = (f"{len(records)} text-only question(s)", dataset.summary())
    return run.finish(units=len(questions), outputs=outputs, notes=notes)
