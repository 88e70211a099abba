"""``gamut_eval.load_run``: a run folder's answers, verdicts and scores in one call."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import gamut_eval
from gamut_eval import InputError, RunTables, load_run
from gamut_eval.cli import cli
from gamut_eval.data import sample_dir


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("load") / "run"
    argv = ["run", "--responses", str(sample_dir() / "responses.jsonl"),
            "--judge", "gamut/offline", "--out", str(out)]  # fmt: skip
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 0, result.output
    return out


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_the_three_tables_hold_every_row_of_their_files(run_dir: Path) -> None:
    tables = load_run(run_dir)
    assert isinstance(tables, RunTables)
    assert "load_run" in gamut_eval.__all__
    answers, verdicts, scores = (lines(run_dir / f) for f in
                                 ("responses.jsonl", "verdicts.jsonl", "scores.jsonl"))  # fmt: skip
    assert len(tables.answers) == len(answers)
    assert len(tables.verdicts) == len(verdicts)
    assert len(tables.scores) == len(scores)
    assert tables.answers["response"].tolist() == [a["response"] for a in answers]
    assert tables.verdicts["verdict"].tolist() == [v["verdict"] for v in verdicts]
    assert tables.manifest["judges"][0]["judge"] == "gamut/offline"


def test_scores_are_flat_with_score_table_column_names(run_dir: Path) -> None:
    scores = load_run(run_dir).scores
    first = lines(run_dir / "scores.jsonl")[0]
    row = scores.iloc[0]
    assert row["gamut"] == first["gamut"]
    tiers, counts = first["tiers"], first["counts"]
    assert isinstance(tiers, dict)
    assert isinstance(counts, dict)
    assert row["answer_critical"] == tiers["answer_critical"]
    assert row["answer_critical.meets"] == counts["answer_critical"]["meets"]
    assert row["context.contradicts"] == counts["context"]["contradicts"]
    assert scores["answer_critical.meets"].dtype == "int64"
    assert not {"tiers", "counts"} & set(scores.columns)


def test_a_folder_without_its_files_names_what_is_missing(run_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such run folder"):
        load_run(tmp_path / "nowhere")
    partial = tmp_path / "partial"
    shutil.copytree(run_dir, partial)
    (partial / "scores.jsonl").unlink()
    with pytest.raises(InputError, match=r"scores\.jsonl: missing"):
        load_run(partial)


def test_polars_tables_on_request(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tables = load_run(run_dir)
    monkeypatch.setitem(sys.modules, "polars", None)
    with pytest.raises(InputError, match="pip install polars"):
        tables.to_polars()
    monkeypatch.undo()
    pl = pytest.importorskip("polars")
    frames = tables.to_polars()
    assert isinstance(frames.scores, pl.DataFrame)
    assert frames.scores.height == len(tables.scores)


def test_scores_of_a_tier_no_answer_has_come_out_once_each(tmp_path: Path) -> None:
    """A tier with no checks in any answer: null score and zero counts, one column each."""
    run = tmp_path / "run"
    run.mkdir()
    for name in ("responses.jsonl", "verdicts.jsonl"):
        (run / name).write_text('{"question_id": "q", "check_id": "c", "verdict": "meets"}\n')
    row = {"question_id": "q", "model": "m", "setting": "multimodal", "judge": "j",
           "gamut": 1.0, "tiers": {"answer_critical": 1.0, "valuable": None, "context": None},
           "counts": {"answer_critical": {"meets": 2, "missing": 0}, "context": None}}  # fmt: skip
    (run / "scores.jsonl").write_text(json.dumps(row) + "\n")
    scores = load_run(run).scores
    assert len(set(scores.columns)) == len(scores.columns)
    assert scores["answer_critical"].tolist() == [1.0]
    assert scores["context"].isna().tolist() == [True]
    assert scores["answer_critical.meets"].tolist() == [2]
    assert scores["context.meets"].tolist() == [0]


def test_a_checks_table_and_verdicts_that_carry_tier_and_kind(run_dir: Path) -> None:
    tables = load_run(run_dir)
    checklists = gamut_eval.load_dataset(sample_dir() / "dataset.jsonl").checklists()
    expected = [(q, c.id, c.tier.value, c.kind.value, c.text)
                for q, cl in checklists.items() for c in cl.checks]  # fmt: skip
    checks = tables.checks
    assert checks is not None
    assert list(checks.columns[:5]) == ["question_id", "check_id", "tier", "kind", "text"]
    got = checks[["question_id", "check_id", "tier", "kind", "text"]].astype(str)
    assert [tuple(row) for row in got.itertuples(index=False)] == expected
    by_check = {(q, c): (t, k) for q, c, t, k, _ in expected}
    rows = lines(run_dir / "verdicts.jsonl")
    verdicts = tables.verdicts
    assert len(verdicts) == len(rows)  # the join added columns, not rows
    for row, tier, kind in zip(rows, verdicts["tier"], verdicts["kind"], strict=True):
        assert (tier, kind) == by_check[(str(row["question_id"]), str(row["check_id"]))]
    # e.g. the answer-critical verdicts, with no join to write
    tiers = [by_check[(str(r["question_id"]), str(r["check_id"]))][0] for r in rows]
    critical = [t for t in tiers if t == "answer_critical"]
    assert int((verdicts["tier"] == "answer_critical").sum()) == len(critical)


def test_checks_in_polars(run_dir: Path) -> None:
    pl = pytest.importorskip("polars")
    frames = load_run(run_dir).to_polars()
    assert isinstance(frames.checks, pl.DataFrame)
    assert frames.checks.columns[:5] == ["question_id", "check_id", "tier", "kind", "text"]
    assert {"tier", "kind"} <= set(frames.verdicts.columns)
    assert frames.verdicts.filter(pl.col("tier").is_null()).height == 0


def test_a_run_whose_dataset_is_gone_has_no_checks_until_it_is_named(
    run_dir: Path, tmp_path: Path
) -> None:
    moved = tmp_path / "run"
    shutil.copytree(run_dir, moved)
    manifest = json.loads((moved / "run.json").read_text())
    manifest["dataset"] = str(tmp_path / "gone" / "dataset.jsonl")
    (moved / "run.json").write_text(json.dumps(manifest))
    tables = load_run(moved)
    assert tables.checks is not None
    assert len(tables.checks) == 0
    assert tables.verdicts["tier"].isna().all()
    named = load_run(moved, dataset="sample")
    assert named.checks is not None
    assert len(named.checks) > 0
    assert not named.verdicts["tier"].isna().any()
