"""Pure parts of the build: the public API, the pool's status, the superset rules, replies,
prices, the cache's writer lock."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from construct_helpers import provenance

from gamut_eval._usage import Usage, priced
from gamut_eval.construct import BuildSession
from gamut_eval.construct._llm import extract_json
from gamut_eval.construct._models import Candidate, CandidateReview, Decision, Invalid
from gamut_eval.construct._questions import decide
from gamut_eval.construct._rubrics import enforce_superset
from gamut_eval.construct._text import names_entity
from gamut_eval.construct._workdir import BuildCache, CacheBusyError, unit_key
from gamut_eval.errors import ValidationError
from gamut_eval.prices import PriceTable, load_prices
from gamut_eval.rubric import validate_meta_rubric


def test_importing_the_construct_package_does_not_import_inspect() -> None:
    code = "import sys, gamut_eval.construct; sys.exit('inspect_ai' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


# -- the pool ---------------------------------------------------------------------------------


def _pool(*specs: tuple[str, bool, bool]) -> tuple[list[Candidate], dict[str, CandidateReview]]:
    """(id, passes, boilerplate) per candidate."""
    candidates = [
        Candidate(
            id=cid,
            image_id="i",
            question=f"question {cid}?",
            origin="generated",
            provenance=provenance(),
        )
        for cid, _, _ in specs
    ]
    failure = [{"requirement": "stranger_test", "reason": "leading"}]
    reviews = {
        cid: CandidateReview.model_validate(
            {
                "candidate_id": cid,
                "passes": ok,
                "failures": [] if ok else failure,
                "boilerplate": bp,
            }
        )
        for cid, ok, bp in specs
    }
    return candidates, reviews


def _accept(*ids: str) -> dict[str, Decision]:
    return {cid: Decision(candidate_id=cid, decision="accept") for cid in ids}


def test_an_accepted_specific_question_wins_over_ranking_and_boilerplate() -> None:
    live, reviews = _pool(("a", True, True), ("b", True, False), ("c", True, False))
    verdict = decide(live, reviews, ["a", "c", "b"], _accept("a", "b", "c"), False)
    assert (verdict.status, verdict.chosen and verdict.chosen.id) == ("accepted", "c")


def test_accepted_boilerplate_waits_for_specific_candidates_still_with_people() -> None:
    live, reviews = _pool(("a", True, True), ("b", True, False))
    assert decide(live, reviews, ["b", "a"], _accept("a"), False).status == "awaiting_human"
    live, reviews = _pool(("a", True, True), ("b", False, False))
    verdict = decide(live, reviews, ["a"], _accept("a", "b"), False)
    assert verdict.status == "accepted"
    assert verdict.chosen == live[0]


def test_new_proposals_are_reviewed_before_anything_else_is_decided() -> None:
    live, reviews = _pool(("a", True, True))
    assert decide(live, reviews, ["a"], {}, True).status == "continue"
    assert decide(live, reviews, ["a"], {}, False).status == "awaiting_human"
    live, reviews = _pool(("a", False, False))
    assert decide(live, reviews, [], _accept("a"), False).status == "needs_candidates"


# -- the superset ------------------------------------------------------------------------------


def _rubric(options: list[str], extra: bool = False) -> Any:
    items: list[dict[str, Any]] = [
        {"id": "core", "type": "strict_list", "tier": "valuable", "name": "parts",
         "items": ["rice", "vegetables"], "cites": ["s1"]},
        {"id": "tops", "type": "flexible_list", "tier": "valuable", "name": "toppings",
         "options": options, "min_required": 1, "cites": ["s1"]},
    ]  # fmt: skip
    if extra:
        items.append({"id": "more", "type": "fact", "tier": "context", "statement": "x"})
    return validate_meta_rubric(
        {"id": "q", "question": "q?", "evidence": [{"id": "s1", "text": "t"}], "items": items}
    )


def test_the_rebuild_is_made_a_superset_and_says_what_it_restored() -> None:
    draft = _rubric(["beef", "egg", "tofu"])
    added = _rubric(["beef", "egg", "tofu", "squid"], extra=True)
    assert enforce_superset(draft, added, set(), set()) == (added, [])

    meta, restored = enforce_superset(draft, _rubric(["Beef.", "tofu", "squid"]), set(), set())
    assert [c.line() for c in restored] == [
        "q tops.options[1].text: reworded beef -> Beef.",
        "q tops.options[2]: removed egg",
        "q tops.options[3]: moved 3 -> 2",
    ]
    tops = meta.items[1]
    assert [o.text for o in tops.options] == ["beef", "egg", "tofu", "squid"]  # type: ignore[union-attr]


def test_the_audit_lets_only_its_drops_and_failed_snippets_go() -> None:
    draft = _rubric(["beef", "egg"], extra=True)
    without = _rubric(["beef", "egg"])
    assert enforce_superset(draft, without, {"more"}, set()) == (without, [])
    meta, restored = enforce_superset(draft, without, set(), set())
    assert [c.line() for c in restored] == ["q more: removed [fact, context] x"]
    assert [i.id for i in meta.items] == ["core", "tops", "more"]


# -- replies, prices, names -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ('Here you go: {"a": {"b": 2}} Hope it helps.', {"a": {"b": 2}}),
    ],
)
def test_json_is_found_in_a_reply(text: str, expected: dict[str, Any]) -> None:
    assert extract_json(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "not valid JSON"),
        ("[1, 2]", "not an object"),
        ('{"a": 1, "a": 2}', "duplicate key"),
        ('{"a": ', "not valid JSON"),
    ],
)
def test_replies_that_are_not_a_json_object_are_refused(text: str, message: str) -> None:
    with pytest.raises(Invalid) as info:
        extract_json(text)
    assert info.value.kind == "not-json"
    assert message in info.value.errors[0]


def test_costs_come_from_the_provider_or_the_price_table(tmp_path: Path) -> None:
    table = PriceTable.model_validate({"m": {"input": 2.0, "output": 10.0, "cached_input": 0.5}})
    usage = Usage(calls=1, input=1_000_000, output=100_000, cached_input=400_000)
    assert priced("m", usage, table).cost == pytest.approx(0.6 * 2.0 + 0.4 * 0.5 + 0.1 * 10.0)
    assert priced("m", usage, table).priced_as == "m"
    assert priced("other", usage, table).cost is None  # unknown, never zero
    assert priced("m", usage.model_copy(update={"cost": 0.25}), table).cost == 0.25
    prices = tmp_path / "prices.yaml"
    prices.write_text("m: {input: -1, output: 2}\n")
    with pytest.raises(ValidationError, match=r"prices.yaml:m.input"):
        load_prices(prices)


def test_the_entity_is_named_only_as_whole_words() -> None:
    assert names_entity("Is the Eiffel  tower tall?", "Eiffel Tower")
    assert not names_entity("Is this tower tall?", "Eiffel Tower")
    assert not names_entity("What is a catalogue?", "cat")


# -- the cache ---------------------------------------------------------------------------------


async def test_one_build_at_a_time_per_folder(tmp_path: Path) -> None:
    async with BuildSession(tmp_path / "b"):
        with pytest.raises(CacheBusyError, match="in use by another gamut build"):
            BuildCache(tmp_path / "b" / "cache.sqlite")
    BuildCache(tmp_path / "b" / "cache.sqlite").close()  # released


def test_cache_keys_change_with_every_input() -> None:
    base = unit_key("draft", "m", "v1", {"question": "a"}, {"k": 1})
    assert base == unit_key("draft", "m", "v1", {"question": "a"}, {"k": 1})
    others = [
        unit_key("refine", "m", "v1", {"question": "a"}, {"k": 1}),
        unit_key("draft", "m2", "v1", {"question": "a"}, {"k": 1}),
        unit_key("draft", "m", "v2", {"question": "a"}, {"k": 1}),
        unit_key("draft", "m", "v1", {"question": "b"}, {"k": 1}),
        unit_key("draft", "m", "v1", {"question": "a"}, {"k": 2}),
    ]
    assert base not in others
    assert len(set(others)) == len(others)
