"""Prompts of the rubric stages: search queries, the draft, the audit, the rebuild.

Threat model: the snippets are web text, the least trusted input of the build; a page can
carry instructions aimed at whatever model reads it. They reach the model only as fenced
JSON data (``_fence.py``); the model's reply is parsed as JSON and validated against the
meta-rubric rules, each item must cite snippet ids that exist, and the audit re-verifies
every snippet against its source before refinement trusts it. A rubric is reviewed by
people before it is used (docs/method.md [B8]). Versions change with the wording.
"""

from __future__ import annotations

from typing import Any

from gamut_eval.construct._fence import DATA_RULE, fence

__all__ = [
    "AUDIT_SYSTEM",
    "DRAFT_SYSTEM",
    "DRAFT_VERSION",
    "EVIDENCE_VERSION",
    "QUERIES_SYSTEM",
    "REBUILD_SYSTEM",
    "REFINE_VERSION",
    "audit_user",
    "draft_user",
    "queries_user",
    "rebuild_user",
]

EVIDENCE_VERSION = "gamut-build-evidence-v1"
DRAFT_VERSION = "gamut-build-draft-v1"
REFINE_VERSION = "gamut-build-refine-v2"
"""Covers the audit, the independent search's queries and the rebuild."""

QUERIES_SYSTEM = f"""\
You plan web searches that gather the evidence for a complete answer to a question about an \
entity. Write short keyword queries (3 to 8 words), each naming the entity, that together \
cover every part of a complete multi-paragraph answer: identity, history, how it works or is \
made, lists of kinds, variants or components, processes, comparisons.
{DATA_RULE}

Reply with only a JSON object, no other text: {{"queries": ["...", "..."]}}"""


def queries_user(
    question: str, entity: str | None, max_queries: int, gaps: list[str] | None = None
) -> str:
    payload: dict[str, Any] = {"question": question, "entity": entity}
    text = fence("Question", payload)
    if gaps:
        text += "\n\n" + fence("An audit found that the evidence so far misses", gaps)
        text += "\n\nResearch the question from scratch; make sure these gaps are covered."
    return f"{text}\n\nWrite between 2 and {max_queries} queries."


_AUTHORING = """\
A meta-rubric is the structured answer key used to grade answers for factual completeness. \
Its items, with their exact field names:
- fact: {"id", "type": "fact", "tier", "statement", "cites"}: one discrete fact, such as the \
identity of the entity or a date.
- strict_list: {"id", "type": "strict_list", "tier", "name", "items": [...], "cites"}: a \
finite set in which every element is required, such as the core ingredients.
- flexible_list: {"id", "type": "flexible_list", "tier", "name", "options": [...], \
"min_required": N, "cites"}: a pool of valid options of which enough must be named (at least \
2 options; 1 <= min_required <= number of options). Split a concept with a required core and \
an optional remainder into a strict_list and a flexible_list.
- process: {"id", "type": "process", "tier", "name", "steps": [{"text", "required": true}], \
"cites"}: ordered steps where the order carries meaning (at least 2 steps).
- relationship: {"id", "type": "relationship", "tier", "entity", "relation", "aspects": \
[...], "cites"}: a connection or contrast with another entity.
- meta_insight: {"id", "type": "meta_insight", "tier", "statement", "about": "<id of a list \
or process>", "cites"}: a synthesis across the elements of a list or process.
Lists and processes may carry "meta_insights": [{"statement": "...", "tier": "..."}].
A list element is a string or {"text": "...", "cites": [...]}; elements are unique.
Tiers: "answer_critical" (what any acceptable answer must contain, starting with the \
identity of the entity), "valuable" (what a good answer adds), "context" (background).
Ids: short, unique, letters, digits, "_" and "-". Statements say what the answer must state.
Ground every item in the evidence snippets, never in your own memory: an item states only \
what the snippets support, and cites the ids of the snippets that support it (on the item, \
or on each of its elements). Every item cites at least one snippet."""

DRAFT_SYSTEM = f"""\
You write the meta-rubric for one question.

{_AUTHORING}
{DATA_RULE}

Reply with only a JSON object, no other text: {{"items": [...]}}"""


def _snippets(snippets: list[dict[str, Any]]) -> str:
    return fence("Evidence snippets (cite them by id)", snippets)


def draft_user(
    question: str, entity: str | None, snippets: list[dict[str, Any]], answer: str | None = None
) -> str:
    if answer is None:
        head = fence("Question", {"question": question, "entity": entity})
        return f"{head}\n\n{_snippets(snippets)}"
    facts = {"question": question, "entity": entity, "reference_answer": answer}
    lead = (
        "The question set this question comes from gives a reference answer. It is a lead, "
        "not evidence: an item may say only what the snippets support, and cites them."
    )
    return f"{lead}\n\n{fence('Question', facts)}\n\n{_snippets(snippets)}"


AUDIT_SYSTEM = f"""\
You audit a draft meta-rubric against its evidence. Each snippet comes with the result of \
re-verifying it against its source ("verbatim", "fuzzy": found; anything else: not found). \
Report:
- partial: lists and processes (by item id) that the evidence covers only partly: an element \
no snippet supports, a list the snippets show to be longer, a process with missing steps; say \
what evidence is missing;
- drop: items that should be removed, each with a reason grounded in the evidence (a verified \
snippet contradicts it, or it rests only on snippets that failed verification). Keep every \
item that is supported: refinement adds, and removes only for a recorded reason.
{DATA_RULE}

Reply with only a JSON object, no other text:
{{"partial": [{{"item": "<id>", "missing": "..."}}], \
"drop": [{{"item": "<id>", "reason": "..."}}]}}"""


def audit_user(question: str, items: list[dict[str, Any]], snippets: list[dict[str, Any]]) -> str:
    head = fence("Question", {"question": question})
    return f"{head}\n\n{fence('Draft items', items)}\n\n{_snippets(snippets)}"


REBUILD_SYSTEM = f"""\
You rebuild a draft meta-rubric as a verified superset of the draft, using the audit and new \
evidence from an independent search.
- Keep every draft item, with its id, type, tier, wording, citations and thresholds \
(min_required, coverage_thresholds), every element of its lists, steps and aspects in its \
position (with each step's required flag) and every nested meta-insight. The only exception: \
an item the audit allows to be dropped, and then you record it in "dropped" with the reason.
- Add what the evidence supports and the draft lacks: options, list elements, steps and \
aspects after the existing ones, nested meta-insights, citations, whole items.
- Cite only the snippet ids given here; snippets that failed verification are gone, so \
re-ground their items on the remaining and new snippets.
- Anything of the draft you remove or change is put back as it was: the rebuild may only add.

{_AUTHORING}
{DATA_RULE}

Reply with only a JSON object, no other text:
{{"items": [...], "dropped": [{{"item": "<id>", "reason": "..."}}]}}"""


def rebuild_user(
    question: str,
    entity: str | None,
    draft_items: list[dict[str, Any]],
    audit: dict[str, Any],
    snippets: list[dict[str, Any]],
) -> str:
    parts = [
        fence("Question", {"question": question, "entity": entity}),
        fence("Draft items", draft_items),
        fence("Audit", audit),
        _snippets(snippets),
    ]
    return "\n\n".join(parts)
