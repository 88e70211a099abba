"""``gamut build ...`` as a user runs it, with ``--model mockllm/model`` scripted."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from construct_helpers import CORPUS, Responder, read_jsonl, write_jsonl
from inspect_ai.model import ModelOutput

from gamut_eval.cli import cli
from gamut_eval.data import sample_dir


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def _all(images: Path, workdir: Path, *more: str) -> tuple[int, str, str]:
    return run(
        "build", "all", "--images", str(images), "--model", "mockllm/model",
        "--corpus", str(CORPUS), "--workdir", str(workdir), "--per-image", "2", *more,
    )  # fmt: skip


def test_build_all_stops_for_human_review_and_says_what_to_do(
    manifest: Path, workdir: Path, responder: Responder
) -> None:
    code, out, err = _all(manifest.parent, workdir)  # a plain folder of images

    assert code == 3
    assert "stopped after review" in err
    assert "no question is accepted yet by both the LLM review and people" in out
    assert str(workdir / "review" / "to_annotate.jsonl") in out
    assert "(option --decisions)" in out  # the library names the setting, the CLI its option
    assert {c.kind for c in responder.calls} == {"questions", "review"}
    assert len(read_jsonl(workdir / "review" / "to_annotate.jsonl")) == 4
    assert not (workdir / "evidence").exists()


def test_build_all_with_decisions_builds_a_valid_dataset_and_resumes_for_free(
    manifest: Path, workdir: Path, responder: Responder, tmp_path: Path
) -> None:
    assert _all(manifest, workdir)[0] == 3
    tasks = read_jsonl(workdir / "review" / "to_annotate.jsonl")
    firsts = {t["image_id"]: t["candidate_id"] for t in reversed(tasks)}
    decisions = write_jsonl(
        tmp_path / "decisions.jsonl",
        [{"candidate_id": cid, "decision": "accept"} for cid in firsts.values()],
    )

    code, out, err = _all(manifest, workdir, "--decisions", str(decisions))
    assert code == 0, err
    for stage in ("questions", "review", "evidence", "draft", "refine", "text-only"):
        assert f"{stage}:" in err
    assert "2 question(s) in" in err
    code, out, _ = run("validate", str(workdir / "dataset.jsonl"))
    assert code == 0
    assert "2 questions" in out

    responder.forbid = True
    responder.calls.clear()
    code, _, err = _all(manifest, workdir, "--decisions", str(decisions))
    assert code == 0, err
    assert responder.calls == []
    assert "review: 2 of 2 done (2 from the cache)" in err


def test_stage_commands_chain_and_report_errors(
    manifest: Path, workdir: Path, responder: Responder, tmp_path: Path
) -> None:
    base = ("--workdir", str(workdir), "--model", "mockllm/model")
    code, _, err = run("build", "draft", *base)
    assert code == 2
    assert "run `gamut build review` first" in err

    responder.handlers["questions"] = lambda call: "not json"
    code, _, err = run("build", "questions", "--images", str(manifest), *base, "--max-repairs", "0")
    assert code == 1
    assert "[not-json]" in err
    assert "errors recorded in" in err

    bad = write_jsonl(tmp_path / "d.jsonl", [{"candidate_id": "x", "decision": "maybe"}])
    code, _, err = run("build", "review", *base, "--decisions", str(bad))
    assert code == 2
    assert "d.jsonl:1:decision" in err

    code, _, err = run("build", "evidence", *base, "--search", "tavily")
    assert code == 2
    assert "TAVILY_API_KEY" in err
    assert err.strip().endswith("(option --search)")


def test_a_recorded_unit_error_shows_the_option_of_its_setting(
    manifest: Path, workdir: Path, responder: Responder
) -> None:
    responder.handlers["questions"] = lambda call: ModelOutput.from_content(
        "mockllm/model", '{"candidates": [', "max_tokens"
    )
    base = ("--workdir", str(workdir), "--model", "mockllm/model", "--max-tokens", "64")
    code, _, err = run("build", "questions", "--images", str(manifest), *base)
    assert code == 1
    flat = " ".join(err.split())
    assert (
        "[truncated] the reply was cut off at 64 tokens; raise max_tokens (option --max-tokens)"
        in flat
    )
    rows = read_jsonl(workdir / "questions" / "errors.jsonl")
    assert {r["setting"] for r in rows} == {"max_tokens"}  # the file names the setting only
    assert all("--max-tokens" not in r["message"] for r in rows)


PRICE_TABLES = {
    "table": "currency: USD\nmodels:\n"
    "  mockllm/model: {input: 1.0, output: 10.0, cached_input: 0.5}\n"
    "  gamut/offline: {input: 1.0, output: 2.0, batch_input: 0.5, batch_output: 1.0}\n",
    "plain map": "mockllm/model: {input: 1.0, output: 10.0, cached_input: 0.5}\n"
    "gamut/offline: {input: 1.0, output: 2.0, batch_input: 0.5, batch_output: 1.0}\n",
}


@pytest.mark.parametrize("form", PRICE_TABLES)
def test_one_price_file_serves_a_build_a_run_and_the_dry_runs(
    form: str, manifest: Path, workdir: Path, responder: Responder, tmp_path: Path
) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text(PRICE_TABLES[form])
    base = ("--workdir", str(workdir), "--model", "mockllm/model", "--prices", str(prices))
    code, _, err = run("build", "questions", "--images", str(manifest), *base)
    assert code == 0, err
    usage = json.loads((workdir / "questions" / "usage.json").read_text())
    assert usage["cost_usd"] == pytest.approx((200 * 1.0 + 40 * 10.0) / 1e6)

    sample = sample_dir()
    answers = ("--responses", str(sample / "responses.jsonl"), "--judge", "gamut/offline")
    judge = ("judge", "--dataset", str(sample / "dataset.jsonl"), *answers)
    judge += ("--store", str(tmp_path / "store.sqlite"))
    run_ = ("run", "--dataset", str(sample / "dataset.jsonl"), *answers)
    run_ += ("--out", str(tmp_path / "run"))
    for command in (judge, run_):
        code, out, err = run(*command, "--dry-run", "--prices", str(prices))
        assert code == 0, err
        text = " ".join("".join(" " if c in "│┃┌┐└┘├┤┬┴┼─━" else c for c in out).split())
        assert re.search(r"cost: standard [\d.,]+ USD", text), text
        assert re.search(r"cost: batch API [\d.,]+ USD", text), text
    assert not (tmp_path / "run").exists()


def test_every_build_default_is_the_construct_settings_default() -> None:
    """The options of ``gamut build`` read their defaults from construct's settings."""
    import dataclasses

    import click

    from gamut_eval.construct import (
        BuildSettings,
        FetchSettings,
        ModelSettings,
        PipelineOptions,
        ResearchSettings,
    )

    def default(model: type[Any], name: str) -> Any:
        field = {f.name: f for f in dataclasses.fields(model)}[name]
        assert field.default is not dataclasses.MISSING
        return field.default

    declared = {
        "max_repairs": (BuildSettings, "max_repairs"),
        "max_concurrency": (BuildSettings, "max_concurrency"),
        "max_tokens": (ModelSettings, "max_tokens"),
        "temperature": (ModelSettings, "temperature"),
        "structured_output": (ModelSettings, "structured_output"),
        "per_query": (ResearchSettings, "per_query"),
        "max_snippets": (ResearchSettings, "max_snippets"),
        "max_queries": (ResearchSettings, "max_queries"),
        "fetch_timeout": (FetchSettings, "timeout_s"),
        "timeout": (ModelSettings, "timeout_s"),
        "fetch_max_bytes": (FetchSettings, "max_bytes"),
        "per_image": (PipelineOptions, "per_image"),
        "max_rounds": (PipelineOptions, "max_rounds"),
        "proposals": (PipelineOptions, "proposals"),
    }
    group = cli.get_command(click.Context(cli), "build")
    assert isinstance(group, click.Group)
    seen = set()
    for stage in group.commands.values():
        for param in stage.params:
            if param.name in declared:
                model, name = declared[param.name]
                assert param.default == default(model, name), (stage.name, param.name)
                seen.add(param.name)
    assert seen == set(declared)
