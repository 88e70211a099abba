"""Every stage over real wire formats: recorded provider replies, replayed.

The whole pipeline runs against a replayed OpenAI-compatible or Anthropic endpoint (through
Inspect's own providers, as a user's build would) and replayed search APIs. Each failure a
provider documents (a refusal, a reply cut at ``length``, valid JSON that drifts from the
schema, a refused structured-output format) is injected at every kind of call; the stage
must retry, re-ask or record the item as an error (for people to look at), and no broken
rubric may be stored.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from construct_helpers import accepted, read_jsonl, seed, write_jsonl
from wire_helpers import Call, Wire, drifted, recording

from gamut_eval.construct import (
    BraveSearch,
    BuildSession,
    BuildSettings,
    LocalSearch,
    ModelSettings,
    PipelineOptions,
    TavilySearch,
    run_all,
    run_draft,
    run_evidence,
)
from gamut_eval.dataset import load_dataset
from gamut_eval.rubric import compile_rubric, validate_meta_rubric
from gamut_eval.testing import Recorded, ReplayServer

STAGE_OF = {
    "questions": "questions",
    "review": "review",
    "queries": "evidence",
    "draft": "draft",
    "audit": "refine",
    "rebuild": "refine",
    "text_only": "text-only",
    "same": "text-only",
}
IMAGES = ("bowl", "tower")


@pytest.fixture
def openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPLAY_API_KEY", "sk-replay")


async def _pipeline(
    server: ReplayServer, model: str, manifest: Path, workdir: Path, corpus: Path
) -> Any:
    decisions = write_jsonl(
        workdir.parent / "decisions.jsonl",
        [{"candidate_id": f"{i}-c1", "decision": "accept"} for i in IMAGES],
    )
    settings = BuildSettings(max_repairs=1, model=ModelSettings(max_tokens=2000, max_retries=1))
    options = PipelineOptions(per_image=2, decisions=(decisions,))
    async with BuildSession(workdir, model, settings) as session:
        return await run_all(session, manifest, LocalSearch(corpus), options)


def _errors(workdir: Path) -> dict[str, list[dict[str, Any]]]:
    """Recorded errors (items marked for people to look at), by stage."""
    found: dict[str, list[dict[str, Any]]] = {}
    for stage in STAGE_OF.values():
        path = workdir / stage / "errors.jsonl"
        if path.is_file():
            found[stage] = read_jsonl(path)
    return found


def assert_nothing_broken(workdir: Path) -> None:
    """Every stored rubric validates and compiles to its stored checklist, the dataset
    loads, and every image is in the dataset or has a recorded error."""
    for name in ("draft/drafts.jsonl", "refine/refined.jsonl"):
        path = workdir / name
        for row in read_jsonl(path) if path.is_file() else []:
            meta = validate_meta_rubric(row["meta_rubric"])
            assert compile_rubric(meta).model_dump(mode="json") == row["checklist"]
    built: set[str] = set()
    if (workdir / "dataset.jsonl").is_file():
        built = {r.id for r in load_dataset(workdir / "dataset.jsonl").records}
    marked = {e["id"].split("-")[0] for rows in _errors(workdir).values() for e in rows}
    for image in IMAGES:
        assert image in built or image in marked, f"{image}: neither built nor marked"


def _always(name: str) -> Any:
    return lambda call, answer: recording(name)


@pytest.mark.parametrize("kind", list(STAGE_OF))
@pytest.mark.parametrize(
    ("fixture", "error_kind"), [("openai/refusal", "refused"), ("openai/length", "truncated")]
)
async def test_a_refusal_or_a_cut_reply_at_any_call_is_recorded_never_stored(
    kind: str, fixture: str, error_kind: str, manifest: Path, workdir: Path, corpus: Path,
    openai_env: None, monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    wire = Wire("openai/ok", {kind: _always(fixture)})
    async with ReplayServer({"POST /v1/chat/completions": wire}) as server:
        monkeypatch.setenv("REPLAY_BASE_URL", f"{server.base_url}/v1")
        await _pipeline(server, "openai-api/replay/gpt-4o", manifest, workdir, corpus)

    stage = STAGE_OF[kind]
    errors = _errors(workdir)[stage]
    assert errors
    assert {e["kind"] for e in errors} == {error_kind}
    # neither is re-asked: a repair would be refused or cut off the same way
    assert all(call.repairs == 0 for call, _ in wire.of(kind))
    assert_nothing_broken(workdir)
    if kind in ("draft", "audit", "rebuild"):  # no rubric got past the failed stage
        assert not (workdir / "dataset.jsonl").is_file() or not read_jsonl(
            workdir / "dataset.jsonl"
        )


@pytest.mark.parametrize("kind", list(STAGE_OF))
@pytest.mark.parametrize("how", ["missing", "extra", "wrong"])
async def test_schema_drift_at_any_call_is_re_asked_and_never_stored_broken(
    kind: str, how: str, manifest: Path, workdir: Path, corpus: Path,
    openai_env: None, monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    wire = Wire("openai/ok", {kind: lambda call, answer: drifted(answer, how)})
    async with ReplayServer({"POST /v1/chat/completions": wire}) as server:
        monkeypatch.setenv("REPLAY_BASE_URL", f"{server.base_url}/v1")
        await _pipeline(server, "openai-api/replay/gpt-4o", manifest, workdir, corpus)

    stage = STAGE_OF[kind]
    errors = _errors(workdir).get(stage, [])
    calls = wire.of(kind)
    assert calls
    if how != "extra":  # a missing or wrong-typed field is sent back, then recorded
        assert errors
        assert {e["kind"] for e in errors} <= {"invalid", "not-json"}
        assert any(call.repairs == 1 for call, _ in calls)
        assert all("could not be used" in call.turns[-1] for call, _ in calls if call.repairs)
    assert_nothing_broken(workdir)


@pytest.mark.parametrize("name", ["drift_missing", "drift_extra", "drift_type"])
async def test_a_drifted_rubric_is_repaired_and_the_repaired_one_is_stored(
    name: str, manifest: Path, workdir: Path, corpus: Path,
    openai_env: None, monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    def once(call: Call, answer: str) -> Recorded | None:
        return recording(f"openai/{name}") if call.repairs == 0 else None

    wire = Wire("openai/ok", {"draft": once})
    async with ReplayServer({"POST /v1/chat/completions": wire}) as server:
        monkeypatch.setenv("REPLAY_BASE_URL", f"{server.base_url}/v1")
        report = await _pipeline(server, "openai-api/replay/gpt-4o", manifest, workdir, corpus)

    assert report.failed == 0
    drafts = read_jsonl(workdir / "draft" / "drafts.jsonl")
    assert len(drafts) == 2
    if name != "drift_extra":  # extra fields are refused by the item models, then repaired
        assert {d["repairs"] for d in drafts} == {1}
    assert_nothing_broken(workdir)
    assert {r.id for r in load_dataset(workdir / "dataset.jsonl").records} == set(IMAGES)


async def test_llama_cpp_refusing_json_schema_is_asked_with_json_object_once(
    manifest: Path, workdir: Path, corpus: Path, openai_env: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    wire = Wire("openai/ok")

    def server_side(request: Any) -> Recorded:
        kind = request.body.get("response_format", {}).get("type")
        if kind == "json_schema":
            return recording("openai/json_schema_refused_llama_cpp")
        return wire(request)

    async with ReplayServer({"POST /v1/chat/completions": server_side}) as server:
        monkeypatch.setenv("REPLAY_BASE_URL", f"{server.base_url}/v1")
        report = await _pipeline(server, "openai-api/replay/smollm2", manifest, workdir, corpus)
        sent = [r.body.get("response_format") for r in server.requests]

    assert report.failed == 0
    # the stage that learned it says so, once
    said = [n for r in report.reports for n in r.notes if "refused json_schema" in n]
    assert len(said) >= 1
    assert "asking with json_object" in said[0]
    assert [n for n in report.reports[0].notes if "refused" in n] == said
    # the first requests (one per image, in flight at once) are refused and not retried;
    # every later one asks with json_object and the schema
    refused = [f["type"] for f in sent].count("json_schema")
    assert 1 <= refused <= len(IMAGES)
    assert {f["type"] for f in sent[:refused]} == {"json_schema"}
    rest = sent[refused:]
    assert all(f["type"] == "json_object" and f["schema"]["type"] == "object" for f in rest)
    assert_nothing_broken(workdir)
    assert len(load_dataset(workdir / "dataset.jsonl").records) == 2


# -- Anthropic: output_format refused -> forced tool use ---------------------------------


async def _anthropic_draft(
    monkeypatch: pytest.MonkeyPatch, workdir: Path, corpus: Path, image: Path, script: Any
) -> tuple[Any, list[Any]]:
    questions = [accepted(image, q, question=f"What is this dish ({q})?") for q in ("a", "b")]
    seed(workdir, "accepted", questions)
    async with BuildSession(workdir) as session:
        await run_evidence(session, LocalSearch(corpus))
    async with ReplayServer({"POST /v1/messages": script}) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-replay")
        settings = BuildSettings(max_repairs=1, model=ModelSettings(max_tokens=2000))
        async with BuildSession(workdir, "anthropic/claude-sonnet-4-5", settings) as session:
            report = await run_draft(session)
        return report, [r.body for r in server.requests]


async def test_anthropic_without_output_format_answers_through_a_forced_tool_call(
    manifest: Path, workdir: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool = Wire("anthropic/tool_use")

    def script(request: Any) -> Recorded:
        if "output_format" in request.body:
            return recording("anthropic/output_format_refused")
        return tool(request)

    report, bodies = await _anthropic_draft(
        monkeypatch, workdir, corpus, manifest.parent / "bowl.png", script
    )
    assert report.failed == 0, report.errors
    # the first requests (both questions in flight at once) are refused, not retried
    refused = sum(1 for b in bodies if "output_format" in b)
    assert 1 <= refused <= 2
    assert all("output_format" in b for b in bodies[:refused])
    later = bodies[refused:]
    assert len(later) == 2
    assert all(b["tool_choice"] == {"type": "tool", "name": "reply"} for b in later)
    assert all(b["tools"][0]["input_schema"]["properties"].keys() == {"items"} for b in later)
    assert_drafts_valid(workdir, 2)


def assert_drafts_valid(workdir: Path, count: int) -> None:
    drafts = read_jsonl(workdir / "draft" / "drafts.jsonl")
    assert len(drafts) == count
    for row in drafts:
        meta = validate_meta_rubric(row["meta_rubric"])
        assert compile_rubric(meta).model_dump(mode="json") == row["checklist"]


@pytest.mark.parametrize(
    ("fixture", "error_kind"),
    [("anthropic/max_tokens", "truncated"), ("anthropic/refusal", "refused")],
)
async def test_anthropic_cut_or_refused_replies_are_recorded(
    fixture: str, error_kind: str, manifest: Path, workdir: Path, corpus: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    report, bodies = await _anthropic_draft(
        monkeypatch, workdir, corpus, manifest.parent / "bowl.png", lambda r: recording(fixture)
    )
    assert {e.kind for e in report.errors} == {error_kind}
    assert len(bodies) == 2  # one call per question: no repair, no retry
    assert not read_jsonl(workdir / "draft" / "drafts.jsonl")


async def test_anthropic_text_reply_with_output_format_is_used(
    manifest: Path, workdir: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report, bodies = await _anthropic_draft(
        monkeypatch, workdir, corpus, manifest.parent / "bowl.png", Wire("anthropic/text")
    )
    assert report.failed == 0
    assert all(b["output_format"]["type"] == "json_schema" for b in bodies)
    assert_drafts_valid(workdir, 2)


# -- search APIs ------------------------------------------------------------------------


async def _evidence_with(provider: Any, workdir: Path, image: Path) -> Any:
    seed(workdir, "accepted", [accepted(image)])
    async with BuildSession(workdir) as session:
        return await run_evidence(session, provider)


async def test_tavily_results_become_snippets_and_blank_ones_are_dropped(
    manifest: Path, workdir: Path
) -> None:
    async with ReplayServer({"POST /search": [recording("tavily/search")] * 2}) as server:
        provider = TavilySearch("tvly-replay", base_url=f"{server.base_url}/search")
        report = await _evidence_with(provider, workdir, manifest.parent / "bowl.png")
        await provider.aclose()
        sent = server.requests

    assert report.failed == 0
    [record] = read_jsonl(workdir / "evidence" / "evidence.jsonl")
    # two queries, the same two hits: de-duplicated; the blank hit is dropped
    assert [s["source"] for s in record["snippets"]] == [
        "https://en.wikipedia.org/wiki/Bibimbap",
        "https://example.org/dolsot",
    ]
    assert sent[0].headers["Authorization"] == "Bearer tvly-replay"
    assert sent[0].body["max_results"] == 3


async def test_brave_markup_and_entities_are_removed_from_snippets(
    manifest: Path, workdir: Path
) -> None:
    route = "GET /res/v1/web/search"
    async with ReplayServer({route: [recording("brave/search")] * 2}) as server:
        provider = BraveSearch("brave-replay", base_url=f"{server.base_url}/res/v1/web/search")
        report = await _evidence_with(provider, workdir, manifest.parent / "bowl.png")
        await provider.aclose()
        sent = server.requests

    assert report.failed == 0
    [record] = read_jsonl(workdir / "evidence" / "evidence.jsonl")
    texts = [s["text"] for s in record["snippets"]]
    assert texts == [
        "Bibimbap is a Korean rice dish topped with seasoned vegetables, gochujang and a "
        "fried egg.",
        "Dolsot bibimbap is served in a very hot stone bowl \u2013 the rice forms a golden crust.",
    ]
    assert sent[0].headers["X-Subscription-Token"] == "brave-replay"
    assert sent[0].query["q"] == "Bibimbap What is this dish and what goes on it?"


@pytest.mark.parametrize(
    ("route", "fixture", "provider"),
    [
        ("POST /search", "tavily/unauthorized", TavilySearch),
        ("GET /res/v1/web/search", "brave/rate_limited", BraveSearch),
    ],
)
async def test_a_search_api_error_marks_the_question_and_no_rubric_is_drafted(
    route: str, fixture: str, provider: Any, manifest: Path, workdir: Path
) -> None:
    async with ReplayServer({route: lambda r: recording(fixture)}) as server:
        search = provider("key", base_url=server.base_url + route.split(" ")[1])
        report = await _evidence_with(search, workdir, manifest.parent / "bowl.png")
        await search.aclose()

    [error] = report.errors
    status = json.dumps(recording(fixture).status)
    assert (error.kind, error.id) == ("search", "bowl")
    assert f"HTTP {status}" in error.message
    assert not read_jsonl(workdir / "evidence" / "evidence.jsonl")


@pytest.mark.parametrize("fixture", ["openai/server_error", "openai/rate_limited"])
async def test_a_transient_failure_of_the_first_structured_request_is_retried(
    fixture: str, manifest: Path, workdir: Path, corpus: Path,
    openai_env: None, monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    wire = Wire("openai/ok")
    failed: list[str] = []

    def script(request: Any) -> Recorded:
        if not failed:  # the very first request fails; the same call is sent again
            failed.append(request.body["messages"][0]["content"])
            return recording(fixture)
        return wire(request)

    async with ReplayServer({"POST /v1/chat/completions": script}) as server:
        monkeypatch.setenv("REPLAY_BASE_URL", f"{server.base_url}/v1")
        report = await _pipeline(server, "openai-api/replay/gpt-4o", manifest, workdir, corpus)
        formats = [r.body.get("response_format", {}).get("type") for r in server.requests]

    assert report.failed == 0
    assert set(formats) == {"json_schema"}  # a transient failure is not a refused format
    assert len(load_dataset(workdir / "dataset.jsonl").records) == 2
    assert_nothing_broken(workdir)
