"""Research shared by ``evidence`` and ``refine``: plan queries, search, keep snippets."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from gamut_eval.construct._errors import Invalid, UnitError
from gamut_eval.construct._images import data_url
from gamut_eval.construct._jsonschema import object_schema
from gamut_eval.construct._llm import Prompt
from gamut_eval.construct._prompts_rubric import QUERIES_SYSTEM, queries_user
from gamut_eval.construct._question_models import AcceptedQuestion
from gamut_eval.construct._rubric_models import Snippet
from gamut_eval.construct._search import SearchError, SearchProvider
from gamut_eval.construct._session import UnitCall
from gamut_eval.construct._text import normalise

__all__ = ["default_queries", "gather_snippets", "plan_queries"]

MAX_QUERY_CHARS = 200

_SCHEMA = object_schema({"queries": {"type": "array", "items": {"type": "string"}}})


def default_queries(question: AcceptedQuestion) -> list[str]:
    """Queries without a model: the entity with the question, and the entity alone (and,
    for an imported question with a reference answer, the entity with the answer)."""
    if not question.entity:
        queries = [question.question]
    else:
        queries = [f"{question.entity} {question.question}", question.entity]
    if question.answer:
        queries.append(f"{question.entity or question.question} {question.answer}"[:200])
    return queries


def _validator(max_queries: int) -> Callable[[Any], Awaitable[list[str]]]:
    async def validate(data: Any) -> list[str]:
        raw = data.get("queries")
        if not isinstance(raw, list) or not raw or not all(isinstance(q, str) for q in raw):
            raise Invalid(["`queries` must be a non-empty list of strings"])
        queries = list(dict.fromkeys(q.strip() for q in raw if q.strip()))[:max_queries]
        errors = [
            f"queries[{i}]: longer than {MAX_QUERY_CHARS} characters; use keywords"
            for i, q in enumerate(queries)
            if len(q) > MAX_QUERY_CHARS
        ]
        if not queries:
            errors.append("every query is empty")
        if errors:
            raise Invalid(errors)
        return queries

    return validate


async def plan_queries(
    call: UnitCall, question: AcceptedQuestion, max_queries: int, gaps: list[str] | None = None
) -> list[str]:
    """Search queries written by the model (it sees the image only when the entity is
    unknown: then the image is the only way to know what to search for)."""
    images = () if question.entity else (data_url(question.image),)
    prompt = Prompt(
        QUERIES_SYSTEM,
        queries_user(question.question, question.entity, max_queries, gaps),
        images,
    )
    queries, _ = await call.ask(prompt, _validator(max_queries), _SCHEMA)
    return queries


async def gather_snippets(
    provider: SearchProvider,
    queries: list[str],
    *,
    per_query: int,
    max_snippets: int,
    prefix: str,
    known: set[str] | None = None,
) -> list[Snippet]:
    """Hits of every query, de-duplicated by text (and against ``known`` texts), in query
    order, numbered ``<prefix>1``, ``<prefix>2``..."""
    seen = set(known or ())
    snippets: list[Snippet] = []
    for query in queries:
        try:
            hits = await provider.search(query, per_query)
        except SearchError as exc:
            raise UnitError("search", str(exc)) from exc
        for hit in hits:
            key = normalise(hit.text)
            if key in seen or len(snippets) >= max_snippets:
                continue
            seen.add(key)
            snippets.append(
                Snippet(
                    id=f"{prefix}{len(snippets) + 1}",
                    text=hit.text,
                    source=hit.source,
                    title=hit.title,
                    query=query,
                    provider=provider.name,
                )
            )
    return snippets
