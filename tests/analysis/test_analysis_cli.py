"""``gamut report`` as a user runs it: every format, -o, errors, and the demo's last step."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gamut_eval.analysis import TABLES
from gamut_eval.cli import cli
from gamut_eval.testing import synthetic_run

MODELS = ["openai/gpt-a", "google/gemini-b", "anthropic/claude-c"]
JUDGES = ["google/judge-g", "anthropic/judge-a"]


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "run"
    return synthetic_run(path, models=MODELS, judges=JUDGES, questions=24, checks=6)


def test_default_is_html_in_the_run_folder(run_dir: Path) -> None:
    code, out, err = run("report", str(run_dir), "--resamples", "50")
    assert code == 0, err
    html = (run_dir / "report.html").read_text()
    assert html.startswith("<!DOCTYPE html>")
    assert f"report: {run_dir / 'report.html'}" in out
    assert "Leaderboard (Gamut x100)" in out  # the terminal summary
    assert "Judge agreement" in out
    assert "Modality" in out


def test_json_to_a_file_and_to_stdout(run_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "r.json"
    code, _, err = run("report", str(run_dir), "--format", "json", "-o", str(target),
                       "--seed", "7", "--resamples", "30")  # fmt: skip
    assert code == 0, err
    data = json.loads(target.read_text())
    assert set(data) == {"meta", *(spec.name for spec in TABLES)}
    assert (data["meta"]["seed"], data["meta"]["resamples"]) == (7, 30)
    code, out, err = run("report", str(run_dir), "--format", "json", "-o", "-",
                         "--seed", "7", "--resamples", "30")  # fmt: skip
    assert code == 0, err
    streamed = json.loads(out)
    assert streamed["leaderboard"] == data["leaderboard"]  # same seed, same numbers


def test_markdown(run_dir: Path, tmp_path: Path) -> None:
    code, _, err = run("report", str(run_dir), "--format", "md", "-o", str(tmp_path / "r.md"))
    assert code == 0, err
    text = (tmp_path / "r.md").read_text()
    assert text.startswith("# Gamut report")
    assert "## Ranking agreement between judges" in text


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_folder_formats(run_dir: Path, tmp_path: Path, fmt: str) -> None:
    code, out, err = run("report", str(run_dir), "--format", fmt, "-o", str(tmp_path / "t"))
    assert code == 0, err
    files = {p.name for p in (tmp_path / "t").iterdir()}
    assert files == {*(f"{spec.name}.{fmt}" for spec in TABLES), "meta.json"}
    assert f"{len(TABLES) + 1} files" in out


def test_folder_format_default_location(run_dir: Path) -> None:
    code, _, err = run("report", str(run_dir), "--format", "csv", "--resamples", "20")
    assert code == 0, err
    assert (run_dir / "report" / "leaderboard.csv").is_file()


def test_families_file(run_dir: Path, tmp_path: Path) -> None:
    families = tmp_path / "families.yaml"
    families.write_text('"*/judge-*": judges\n')
    code, out, err = run("report", str(run_dir), "--format", "json", "-o", "-",
                         "--families", str(families), "--resamples", "20")  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    assert data["meta"]["families_file"] == str(families)
    assert {r["family"] for r in data["self_preference"]} == {"judges"}


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("missing", "no such run folder"),
        ("file", "is a file, not a run folder"),
        ("empty", "no scores.jsonl"),
        ("torn", "torn-line"),
        ("families", "families-mapping"),
    ],
)
def test_bad_input_exits_2(run_dir: Path, tmp_path: Path, setup: str, message: str) -> None:
    target = tmp_path / "run"
    extra: list[str] = []
    if setup == "file":
        target.write_text("x")
    elif setup == "empty":
        target.mkdir()
    elif setup == "torn":
        target.mkdir()
        (target / "scores.jsonl").write_text('{"question_id": "q", "mod')
    elif setup == "families":
        target = run_dir
        (tmp_path / "f.yaml").write_text("[1, 2]\n")
        extra = ["--families", str(tmp_path / "f.yaml")]
    code, _, err = run("report", str(target), "--format", "json", "-o", str(tmp_path / "o"),
                       *extra)  # fmt: skip
    assert code == 2
    assert message in err
    assert not (tmp_path / "o").exists()


def test_parquet_to_stdout_is_refused(run_dir: Path) -> None:
    code, out, err = run("report", str(run_dir), "--format", "parquet", "-o", "-")
    assert code == 2
    assert "folder" in err
    assert out == ""


def test_unknown_format_is_a_usage_error(run_dir: Path) -> None:
    code, _, err = run("report", str(run_dir), "--format", "pdf")
    assert code == 2
    assert "pdf" in err


def test_demo_ends_with_the_html_report(tmp_path: Path) -> None:
    code, out, err = run("demo", "--out", str(tmp_path / "demo"))
    assert code == 0, err
    report = tmp_path / "demo" / "report.html"
    assert report.is_file()
    assert f"HTML report: {report}" in out
    html = report.read_text()
    assert "sample/thorough" in html
    assert 'data-plot="heatmap"' in html  # the sample has domains


def test_embeddings_without_the_extra_fall_back_to_tfidf_with_a_note(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # the extra is missing
    target = tmp_path / "r.json"
    code, _, err = run("report", str(run_dir), "--format", "json", "-o", str(target),
                       "--resamples", "20", "--embeddings")  # fmt: skip
    assert code == 0, err
    assert "note: question diversity: TF-IDF used instead of embeddings" in err
    assert "pip install 'gamut-eval[embeddings]'" in err
    summary = json.loads(target.read_text())["diversity_summary"][0]
    assert summary["method"] == "tfidf"
    assert summary["embedding_model"] is None
    assert "sentence-transformers is not installed" in summary["embeddings_fallback"]


def test_the_default_embedding_model_is_the_official_one() -> None:
    from gamut_eval.analysis import DEFAULT_EMBEDDING_MODEL

    assert DEFAULT_EMBEDDING_MODEL == "sentence-transformers/all-MiniLM-L6-v2"
