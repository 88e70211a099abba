"""Stage ``refine``: the audit, the independent search, the verified superset, the diff."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from construct_helpers import Call, Responder, accepted, read_jsonl, seed

from gamut_eval.construct import (
    BuildSession,
    DraftRecord,
    LocalSearch,
    RefinedRecord,
    ResearchSettings,
    run_refine,
)
from gamut_eval.construct._rubrics import element_texts
from gamut_eval.rubric import MetaRubric, compile_rubric, validate_meta_rubric

RICE = (
    'Bibimbap is a Korean rice dish. The name means "mixed rice". It is served as a bowl of warm '
    "white rice topped with seasoned vegetables, chili pepper paste (gochujang) and usually a "
    "fried egg."
)
TOPPINGS = "Common toppings include beef, a fried egg, tofu and chicken."
JEONJU = "Jeonju, in North Jeolla Province, is famous for its bibimbap."
ITEMS: list[dict[str, Any]] = [
    {
        "id": "identity",
        "type": "fact",
        "tier": "answer_critical",
        "statement": "Identifies the dish as bibimbap.",
        "cites": ["s1"],
    },
    {
        "id": "toppings",
        "type": "flexible_list",
        "tier": "valuable",
        "name": "common toppings",
        "options": ["beef", "fried egg", "tofu"],
        "min_required": 1,
        "cites": ["s2"],
    },
    {
        "id": "jeonju",
        "type": "fact",
        "tier": "context",
        "statement": "Mentions that Jeonju is famous for its bibimbap.",
        "cites": ["s3"],
    },
]
SQUID = {"text": "squid", "cites": ["r1"]}


def _draft(
    workdir: Path, corpus: Path, image: Path, items: list[dict[str, Any]] | None = None
) -> MetaRubric:
    source = (corpus / "bibimbap.md").resolve().as_uri()
    evidence = [
        {"id": f"s{i}", "text": text, "source": source, "title": "Bibimbap"}
        for i, text in enumerate((RICE, TOPPINGS, JEONJU), start=1)
    ]
    question = accepted(image)
    meta = validate_meta_rubric(
        {
            "id": question.id,
            "question": question.question,
            "entity": "Bibimbap",
            "evidence": evidence,
            "items": items or ITEMS,
        }
    )
    draft = DraftRecord(
        question_id=question.id,
        meta_rubric=meta,
        checklist=compile_rubric(meta),
        provenance=question.provenance,
    )
    seed(workdir, "accepted", [question])
    seed(workdir, "drafts", [draft])
    return meta


def _queries(call: Call) -> str:
    return json.dumps({"queries": ["seafood bibimbap squid octopus"]})


def _with_squid(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = json.loads(json.dumps(items))
    for item in out:
        if item["id"] == "toppings":
            item["options"].append(SQUID)
    return out


def _refined(workdir: Path) -> RefinedRecord:
    [row] = read_jsonl(workdir / "refine" / "refined.jsonl")
    return RefinedRecord.model_validate(row)


def assert_superset(draft: MetaRubric, refined: RefinedRecord) -> None:
    """Every draft item kept (or dropped with a recorded reason), every element kept."""
    after = {item.id: item for item in refined.meta_rubric.items}
    dropped = {d.item: d.reason for d in refined.dropped}
    elements = {t for item in after.values() for t in element_texts(item)}
    for item in draft.items:
        if item.id in dropped:
            assert dropped[item.id]
            assert item.id not in after
            assert item.id in {d.item for d in refined.audit.drops_allowed}
            continue
        assert item.id in after
        assert set(element_texts(item)) <= elements


async def _run(workdir: Path, corpus: Path, responder: Responder) -> Any:
    async with BuildSession(workdir, responder.model()) as session:
        return await run_refine(session, LocalSearch(corpus), research=ResearchSettings(1, 3, 2))


async def test_refinement_adds_a_list_option_and_keeps_every_draft_item(
    manifest: Path, workdir: Path, corpus: Path
) -> None:
    draft = _draft(workdir, corpus, manifest.parent / "bowl.png")
    audit = {"partial": [{"item": "toppings", "missing": "regional, seafood toppings"}], "drop": []}

    def rebuild(call: Call) -> str:
        return json.dumps({"items": _with_squid(call.data("Draft items")), "dropped": []})

    responder = Responder({"audit": [json.dumps(audit)], "queries": _queries, "rebuild": rebuild})
    report = await _run(workdir, corpus, responder)

    assert report.failed == 0
    refined = _refined(workdir)
    assert_superset(draft, refined)
    assert [s.status for s in refined.audit.snippets] == ["verbatim"] * 3
    assert refined.audit.partial[0].item == "toppings"
    # the independent search starts from the question and the gaps, not from the draft
    [search] = responder.of("queries")
    assert "common toppings: regional, seafood toppings" in search.user
    assert "Identifies the dish as bibimbap" not in search.user
    [new] = refined.new_snippets
    assert new.id == "r1"
    assert "squid" in new.text
    assert str(new.source).endswith("seafood-bibimbap.md")
    assert [e.id for e in refined.meta_rubric.evidence] == ["s1", "s2", "s3", "r1"]
    [change] = refined.diff.items
    assert (change.item, change.change, change.elements_added) == (
        "toppings",
        "changed",
        ("squid",),
    )
    checks = {c.check: c for c in refined.diff.checks}
    assert checks["toppings/option-4"].change == "added"
    assert checks["toppings/option-4"].after == "[C] Mentions squid among the common toppings."
    assert checks["toppings/min-1"].change == "changed"  # its text enumerates every option
    assert refined.checklist == compile_rubric(refined.meta_rubric)


async def test_a_snippet_gone_from_its_source_is_flagged_by_the_audit(
    manifest: Path, workdir: Path, corpus: Path
) -> None:
    _draft(workdir, corpus, manifest.parent / "bowl.png")
    page = corpus / "bibimbap.md"
    page.write_text(page.read_text().replace(JEONJU, "Jeonju is a city in Korea."))

    def rebuild(call: Call) -> str:
        items = [i for i in call.data("Draft items") if i["id"] != "jeonju"]
        dropped = [{"item": "jeonju", "reason": "its only snippet is gone from its source"}]
        return json.dumps({"items": items, "dropped": dropped})

    responder = Responder({"queries": _queries, "rebuild": rebuild})
    await _run(workdir, corpus, responder)

    refined = _refined(workdir)
    checks = {c.snippet_id: c for c in refined.audit.snippets}
    assert (checks["s1"].status, checks["s2"].status) == ("verbatim", "verbatim")
    assert checks["s3"].status == "not_found"
    assert "word trigrams occur in the source" in str(checks["s3"].detail)
    # the audit model and the rebuild were told; the flagged snippet is no evidence any more
    [audit_call] = responder.of("audit")
    shown = {s["id"]: s["verification"] for s in audit_call.data("Evidence snippets")}
    assert shown == {"s1": "verbatim", "s2": "verbatim", "s3": "not_found"}
    [rebuild_call] = responder.of("rebuild")
    assert "s3" not in {s["id"] for s in rebuild_call.data("Evidence snippets")}
    assert rebuild_call.data("Audit")["snippets_failed_verification"][0]["id"] == "s3"
    assert "s3" not in {e.id for e in refined.meta_rubric.evidence}
    [drop] = refined.dropped
    assert (drop.item, drop.origin) == ("jeonju", "verification")
    assert "failed re-verification" in drop.reason
    assert refined.diff.count("dropped") == (1, 1)


INSIGHT = {"statement": "Toppings vary by region.", "cites": ["s2"]}


def _weakened(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What a careless rebuild does: demote the identity, raise a threshold, drop a nested
    meta-insight, an option and a whole item, add a topping in front."""
    out: list[dict[str, Any]] = json.loads(json.dumps(items))
    out[0]["tier"] = "context"
    out[1]["min_required"] = 2
    out[1]["meta_insights"] = []
    out[1]["options"] = [SQUID, "beef", "tofu"]
    return [i for i in out if i["id"] != "jeonju"]


async def test_an_item_whose_every_snippet_failed_goes_even_if_the_rebuild_forgets_to_say(
    manifest: Path, workdir: Path, corpus: Path
) -> None:
    _draft(workdir, corpus, manifest.parent / "bowl.png")
    page = corpus / "bibimbap.md"
    page.write_text(page.read_text().replace(JEONJU, "Jeonju is a city in Korea."))

    def rebuild(call: Call) -> str:
        items = [i for i in call.data("Draft items") if i["id"] != "jeonju"]
        return json.dumps({"items": items, "dropped": []})

    report = await _run(workdir, corpus, Responder({"queries": _queries, "rebuild": rebuild}))

    assert report.failed == 0
    refined = _refined(workdir)
    assert [(d.item, d.origin) for d in refined.dropped] == [("jeonju", "verification")]
    assert refined.restored == ()
    assert [(c.path, c.kind) for c in refined.changes] == [
        ("evidence[s3]", "removed"),
        ("evidence[r1]", "added"),
        ("jeonju", "removed"),
    ]


async def test_a_weakening_rebuild_is_restored_and_what_it_tried_is_recorded(
    manifest: Path, workdir: Path, corpus: Path
) -> None:
    items = json.loads(json.dumps(ITEMS))
    items[1]["meta_insights"] = [INSIGHT]
    draft = _draft(workdir, corpus, manifest.parent / "bowl.png", items)

    def rebuild(call: Call) -> str:
        dropped = [{"item": "jeonju", "reason": "trivia"}]
        return json.dumps({"items": _weakened(call.data("Draft items")), "dropped": dropped})

    responder = Responder({"queries": _queries, "rebuild": rebuild})
    report = await _run(workdir, corpus, responder)

    assert report.failed == 0
    assert len(responder.of("rebuild")) == 1  # restored, not argued with
    refined = _refined(workdir)
    assert [c.line() for c in refined.restored] == [
        "bowl identity.tier: changed answer_critical -> context",
        "bowl toppings.meta_insights[1]: removed Toppings vary by region.",
        "bowl toppings.min_required: changed [1] -> [2]",
        "bowl toppings.options[1]: moved 1 -> 2",
        "bowl toppings.options[2]: removed fried egg",
        "bowl jeonju: removed [fact, context] Mentions that Jeonju is famous for its bibimbap.",
    ]
    assert refined.dropped == ()
    after = {i.id: i for i in refined.meta_rubric.items}
    assert [i.id for i in refined.meta_rubric.items] == ["identity", "toppings", "jeonju"]
    assert after["identity"].tier == "answer_critical"
    toppings = after["toppings"]
    assert [o.text for o in toppings.options] == ["beef", "fried egg", "tofu", "squid"]  # type: ignore[union-attr]
    assert toppings.min_required == (1,)  # type: ignore[union-attr]
    assert [m.statement for m in toppings.meta_insights] == [INSIGHT["statement"]]  # type: ignore[union-attr]
    assert [(c.path, c.kind) for c in refined.changes] == [
        ("evidence[r1]", "added"),
        ("toppings.options[4]", "added"),
    ]
    assert_superset(draft, refined)
    note = "\n".join(report.notes)
    assert "6 removal(s) or change(s) by the rebuild restored" in note
    assert "bowl toppings.meta_insights[1]: removed Toppings vary by region." in note


async def test_dropping_an_item_that_is_not_in_the_draft_is_sent_back(
    manifest: Path, workdir: Path, corpus: Path
) -> None:
    _draft(workdir, corpus, manifest.parent / "bowl.png")
    replies = [
        json.dumps({"items": ITEMS, "dropped": [{"item": "ghost", "reason": "x"}]}),
        json.dumps({"items": ITEMS, "dropped": []}),
    ]
    responder = Responder({"queries": _queries, "rebuild": replies})
    report = await _run(workdir, corpus, responder)

    assert report.failed == 0
    last = responder.of("rebuild")[-1].turns[-1]
    assert "`dropped` lists 'ghost', which is not a draft item" in last
    assert _refined(workdir).repairs == 1


async def test_an_item_may_be_dropped_for_a_reason_the_audit_recorded(
    manifest: Path, workdir: Path, corpus: Path
) -> None:
    _draft(workdir, corpus, manifest.parent / "bowl.png")
    audit = {"partial": [], "drop": [{"item": "jeonju", "reason": "off the question's topic"}]}

    def rebuild(call: Call) -> str:
        items = [i for i in call.data("Draft items") if i["id"] != "jeonju"]
        return json.dumps({"items": items, "dropped": [{"item": "jeonju", "reason": "off topic"}]})

    responder = Responder({"audit": [json.dumps(audit)], "queries": _queries, "rebuild": rebuild})
    await _run(workdir, corpus, responder)

    [drop] = _refined(workdir).dropped
    assert drop.origin == "audit"
    assert drop.reason == "off the question's topic (rebuild: off topic)"
