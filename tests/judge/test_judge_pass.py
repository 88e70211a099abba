"""The judge pass as its callers see it: a backend is one small class, the pass plans,
de-duplicates, stores and reports for it; settings become options in one place; the
files a pass writes are the typed records they claim to be."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from judge_helpers import JUDGE, Workspace, response_row, settings, store_rows

from gamut_eval.cli import cli
from gamut_eval.judge import (
    BACKENDS,
    BackendOptions,
    JudgePlan,
    JudgeSettings,
    JudgeWork,
    PassEvent,
    VerdictRow,
    VerdictStore,
    judge_pass,
    judge_responses,
    make_backend,
    settle,
)
from gamut_eval.judge._client import Completion
from gamut_eval.judge._resolve import resolve_judge
from gamut_eval.judge._store import StoredVerdict


@dataclass
class CannedBackend:
    """A backend in a dozen lines: every check gets the verdict its text asks for."""

    replies: dict[str, str]
    name: str = "canned"
    writes_store: bool = True
    exports_rows: bool = True
    probed: bool = False
    judge: Any = None
    seen: list[tuple[str, str]] = field(default_factory=list)

    async def run(self, work: JudgeWork) -> None:
        for answer in work.pending():
            for key, check in answer.checks:
                self.seen.append((answer.plan.row.model, check.id))
                verdict = self.replies.get(check.id)
                outcome: Completion | str = (
                    Completion(json.dumps({"verdict": verdict, "explanation": "canned"}))
                    if verdict
                    else "no canned reply"
                )
                row = settle(key, outcome, None, work.settings)
                assert isinstance(row, StoredVerdict)
                work.record(row)


def test_a_new_backend_gets_planning_dedup_storage_and_export_from_the_pass(
    small: Workspace,
) -> None:
    # Two models give the same answer to one question: its checks are sent once.
    small.responses.append(response_row("q-panda", "copycat", small.responses[0]["response"]))
    small.write()
    backend = CannedBackend({"identity": "meets", "diet": "contradicts"})
    events: list[PassEvent] = []
    report = judge_responses(
        small.dataset(),
        small.responses_path,
        settings(max_unscored_rate=1.0),
        small.store,
        small.out,
        backend=backend,
        on_event=events.append,
    )
    rows = small.rows()
    assert len(rows) == small.n_checks == 13
    assert len(backend.seen) == 10  # the copy's three checks were taken from the first
    assert report.stats.cached == 3
    by_id = {(r["model"], r["check_id"]): r for r in rows}
    assert by_id[("copycat", "identity")]["verdict"] == "meets"
    assert by_id[("copycat", "diet")]["verdict"] == "contradicts"
    unscored = [r for r in rows if r["verdict"] is None]
    assert {r["reason"] for r in unscored} == {"no canned reply"}
    assert report.unscored == len(unscored)
    assert events[0].kind == "start"
    assert events[-1].kind == "done"
    assert events[-1].stats.done == 13
    # A second pass over the same store sends only what is not yet a verdict.
    again = CannedBackend({})
    judge_responses(
        small.dataset(),
        small.responses_path,
        settings(max_unscored_rate=1.0),
        small.store,
        small.out,
        backend=again,
    )
    assert sorted(again.seen) == [
        ("lab/alpha", "range"),
        ("lab/alpha", "steam"),
        ("lab/beta", "range"),
        ("lab/beta", "steam"),
    ]


def test_rows_recorded_before_a_crash_are_in_the_store(small: Workspace) -> None:
    class Crashing(CannedBackend):
        async def run(self, work: JudgeWork) -> None:
            for answer in work.pending():
                key, _check = answer.checks[0]
                outcome = Completion('{"verdict": "meets", "explanation": ""}')
                work.record(settle(key, outcome, None, work.settings))  # type: ignore[arg-type]
                raise RuntimeError("the backend died")

    with VerdictStore(small.store) as store:
        plan = JudgePlan(small.dataset(), small.responses_path, settings())
        with pytest.raises(RuntimeError, match="died"):
            judge_pass(plan, Crashing({}), store)
    assert len(store_rows(small.store)) == 1


def test_every_backend_in_the_registry_can_be_made() -> None:
    judge = JudgeSettings(judge=JUDGE)
    for name in BACKENDS:
        backend = make_backend(judge, BackendOptions(), name=name)
        assert backend.name == name
        assert isinstance(backend.writes_store, bool)
        assert isinstance(backend.exports_rows, bool)


def test_auto_picks_offline_fast_or_inspect_by_the_judge_name() -> None:
    assert resolve_judge(JudgeSettings(judge="gamut/offline")).backend == "offline"
    assert resolve_judge(JudgeSettings(judge="openai/gpt-4.1-mini")).backend == "fast"
    assert resolve_judge(JudgeSettings(judge="anthropic/claude-sonnet-4-5")).backend == "fast"
    assert resolve_judge(JudgeSettings(judge="google/gemini-2.5-flash")).backend == "fast"
    google_via_inspect = JudgeSettings(judge="google/gemini-2.5-flash", backend="inspect")
    assert resolve_judge(google_via_inspect).backend == "inspect"
    assert resolve_judge(JudgeSettings(judge="x/y", backend="batch")).backend == "batch"


# -- settings declared once -----------------------------------------------------------------


def help_text(command: str) -> str:
    result = CliRunner().invoke(cli, [command, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def test_judge_help_has_the_model_help_and_run_only_online_backends() -> None:
    text = help_text("judge")
    assert "Re-asks after a malformed verdict before a check is unscored." in text
    assert "[auto|fast|inspect|batch|ray]" in text
    assert "[auto|fast|inspect]" in help_text("run")


def test_a_config_file_sets_options_and_flags_win_over_it(
    small: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}

    def capture(dataset: Any, responses: Any, judge: JudgeSettings, *args: Any, **kw: Any) -> Any:
        seen["settings"] = judge
        raise SystemExit(0)

    monkeypatch.setattr("gamut_eval.judge.judge_responses", capture)  # what the command reads
    config = tmp_path / "judge.yaml"
    config.write_text("max_reasks: 5\nconcurrency: 3\njudge-temperature: 0.5\n")
    argv = ["judge", "--dataset", str(small.dataset_path), "--responses"]
    argv += [str(small.responses_path), "--judge", JUDGE, "--config", str(config)]
    result = CliRunner().invoke(cli, [*argv, "--concurrency", "7"])
    assert result.exit_code == 0, result.output
    chosen = seen["settings"]
    assert (chosen.max_reasks, chosen.concurrency, chosen.temperature) == (5, 7, 0.5)


def test_an_unknown_config_key_is_refused_naming_file_and_key(
    small: Workspace, tmp_path: Path
) -> None:
    config = tmp_path / "judge.yaml"
    config.write_text("max_reask: 5\n")
    argv = ["judge", "--dataset", str(small.dataset_path), "--responses"]
    argv += [str(small.responses_path), "--judge", JUDGE, "--config", str(config)]
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 2
    assert str(config) in result.output
    assert "max_reask" in result.output
    assert not small.store.exists()


# -- typed records --------------------------------------------------------------------------


def test_a_runs_files_are_the_records_they_claim_to_be(tmp_path: Path) -> None:
    from gamut_eval.records import RunManifest, ScoreRow

    out = tmp_path / "run"
    result = CliRunner().invoke(cli, ["demo", "--out", str(out)])
    assert result.exit_code == 0, result.output
    verdicts = [json.loads(x) for x in (out / "verdicts.jsonl").read_text().splitlines()]
    assert verdicts
    for row in verdicts:
        VerdictRow.model_validate(row)
    scores = [json.loads(x) for x in (out / "scores.jsonl").read_text().splitlines()]
    for row in scores:
        ScoreRow.model_validate(row)
    manifest = RunManifest.model_validate_json((out / "run.json").read_text())
    assert manifest.judges[0]["judge"] == "gamut/offline"
    assert JudgeSettings.model_validate(manifest.judges[0]) == JudgeSettings(judge="gamut/offline")


def test_schema_kinds_describe_the_files_a_run_writes(tmp_path: Path) -> None:
    import jsonschema

    def schema(kind: str) -> dict[str, Any]:
        result = CliRunner().invoke(cli, ["schema", "--kind", kind])
        assert result.exit_code == 0, result.output
        parsed: dict[str, Any] = json.loads(result.stdout)
        return parsed

    out = tmp_path / "run"
    assert CliRunner().invoke(cli, ["demo", "--out", str(out)]).exit_code == 0
    for kind, name in (("verdicts", "verdicts.jsonl"), ("scores", "scores.jsonl")):
        rows = [json.loads(x) for x in (out / name).read_text().splitlines()]
        described = schema(kind)
        for row in rows[:50]:
            jsonschema.validate(row, described)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({**rows[0], "stray": 1}, described)
    jsonschema.validate(json.loads((out / "run.json").read_text()), schema("run"))
    example = Path(__file__).resolve().parents[2] / "examples" / "dish_bibimbap.yaml"
    compiled = CliRunner().invoke(cli, ["compile", str(example)])
    jsonschema.validate(json.loads(compiled.stdout), schema("checklist"))


def test_a_long_lived_dataset_is_frozen_out_of_the_collector() -> None:
    import gc

    from gamut_eval.data import sample_dir
    from gamut_eval.dataset import load_dataset

    before = gc.get_freeze_count()
    load_dataset(sample_dir() / "dataset.jsonl")
    assert gc.get_freeze_count() == before
    dataset = load_dataset(sample_dir() / "dataset.jsonl", long_lived=True)
    try:
        assert gc.get_freeze_count() > before
        assert dataset.checklists() == dataset.checklists()  # compiled once, copies handed out
        assert dataset.checklists() is not dataset.checklists()
    finally:
        gc.unfreeze()


def test_scale_options_keep_their_documented_names() -> None:
    text = help_text("judge")
    documented = (Path(__file__).resolve().parents[2] / "docs" / "scaling.md").read_text()
    for flag in (
        "--batch-dir",
        "--batch-max-requests",
        "--batch-max-mb",
        "--batch-poll",
        "--batch-max-wait",
        "--batch-max-active",
        "--ray-address",
        "--ray-engine",
        "--ray-endpoint",
        "--ray-workers",
        "--ray-vllm-model",
        "--ray-vllm-tp",
    ):
        assert flag in text, flag
    for flag in re.findall(r"--(?:batch|ray)-[a-z-]+", documented):
        assert flag in text, f"docs/scaling.md names {flag}, which gamut judge does not take"
    assert "--max-wait-s" not in text
