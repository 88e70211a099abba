"""``gamut run`` and ``gamut judge`` with a user's own files: a run folder belongs to one
run, every expected answer is there (or is filled, visibly), and formats are what they
say. All on the bundled sample with the offline judge: no network."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings, strategies as st

from gamut_eval._tables import read_rows, write_rows
from gamut_eval.cli._main import cli
from gamut_eval.data import sample_dir
from gamut_eval.judge import JudgeSettings
from gamut_eval.run import run_benchmark

SAMPLE = sample_dir()
ANSWERS = [row for _, row in read_rows(SAMPLE / "responses.jsonl")]
OFFLINE = "gamut/offline"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), terminal_width=200)


def flat(text: str) -> str:
    return " ".join(text.split())


def run_args(out: Path, responses: Path, *extra: str) -> list[str]:
    return ["run", "--responses", str(responses), "--judge", OFFLINE, "--out", str(out), *extra]


def answers_without(tmp_path: Path, *drop: int, name: str = "answers.jsonl") -> Path:
    path = tmp_path / name
    write_rows(path, [row for i, row in enumerate(ANSWERS) if i not in drop])
    return path


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def mean_scores(folder: Path) -> dict[tuple[str, str], float]:
    """Mean Gamut score per (model, setting), from scores.jsonl."""
    sums: dict[tuple[str, str], list[float]] = {}
    for _, row in read_rows(folder / "scores.jsonl"):
        sums.setdefault((row["model"], row["setting"]), []).append(row["gamut"])
    return {k: sum(v) / len(v) for k, v in sums.items()}


@pytest.fixture(scope="module")
def full_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("full") / "run"
    result = invoke(*run_args(out, SAMPLE / "responses.jsonl"))
    assert result.exit_code == 0, result.output
    return out


# -- every expected answer ------------------------------------------------------------------


def test_missing_answers_are_refused_naming_them_and_nothing_is_written(tmp_path: Path) -> None:
    dropped = ANSWERS[5]
    out = tmp_path / "run"
    result = invoke(*run_args(out, answers_without(tmp_path, 5)))
    assert result.exit_code == 2, result.output
    text = flat(result.output)
    assert "1 (question, model, setting) of the grid have no answer" in text
    assert f"({dropped['question_id']!r}, {dropped['model']!r}, {dropped['setting']!r})" in text
    assert text.endswith("(option --fill-missing)")  # the command line adds its option
    assert not out.exists()


def test_fill_missing_scores_the_gap_as_an_empty_answer_and_says_so(
    tmp_path: Path, full_run: Path
) -> None:
    dropped = ANSWERS[5]
    out = tmp_path / "run"
    result = invoke(*run_args(out, answers_without(tmp_path, 5), "--fill-missing"))
    assert result.exit_code == 0, result.output
    assert "1 missing answer(s) were scored as empty answers" in flat(result.output)
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["identity"]["fill_missing"] is True
    assert manifest["filled_missing"] == [
        {k: dropped[k] for k in ("question_id", "model", "setting")}
    ]
    # The empty answer meets no check: its Gamut score is 0, so the model's mean over the
    # 12 questions loses that answer's whole score, and nothing else moves.
    full = {
        (r["question_id"], r["model"], r["setting"]): r["gamut"]
        for _, r in read_rows(full_run / "scores.jsonl")
    }
    key = (dropped["question_id"], dropped["model"], dropped["setting"])
    cell = (dropped["model"], dropped["setting"])
    before, after = mean_scores(full_run), mean_scores(out)
    filled = {
        (r["question_id"], r["model"], r["setting"]): r for _, r in read_rows(out / "scores.jsonl")
    }
    assert filled[key]["gamut"] == 0.0
    assert after[cell] == pytest.approx(before[cell] - full[key] / 12, abs=1e-12)
    assert {k: v for k, v in after.items() if k != cell} == {
        k: v for k, v in before.items() if k != cell
    }


@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.integers(min_value=0, max_value=len(ANSWERS) - 1))
def test_removing_any_answer_never_raises_a_score_unflagged(
    tmp_path_factory: pytest.TempPathFactory, full_run: Path, index: int
) -> None:
    folder = tmp_path_factory.mktemp("drop")
    answers = answers_without(folder, index)
    dropped = ANSWERS[index]
    with pytest.raises(Exception, match="have no answer"):
        run_benchmark(
            SAMPLE / "dataset.jsonl", folder / "refused", [JudgeSettings(judge=OFFLINE)],
            responses=answers,
        )  # fmt: skip
    result = run_benchmark(
        SAMPLE / "dataset.jsonl", folder / "run", [JudgeSettings(judge=OFFLINE)],
        responses=answers, fill_missing=True,
    )  # fmt: skip
    assert [(f.question_id, f.model, f.setting) for f in result.filled] == [
        (dropped["question_id"], dropped["model"], dropped["setting"])
    ]
    before, after = mean_scores(full_run), mean_scores(folder / "run")
    for cell, mean in after.items():
        assert mean <= before[cell] + 1e-12


# -- a folder belongs to one run ------------------------------------------------------------


def test_the_same_run_again_continues_from_the_store(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert invoke(*run_args(out, SAMPLE / "responses.jsonl")).exit_code == 0
    again = invoke(*run_args(out, SAMPLE / "responses.jsonl"))
    assert again.exit_code == 0, again.output
    assert "1272 verdicts (1272 reused from the store, 0 judged now)" in flat(again.output)


def test_a_run_without_a_report_says_how_to_get_one(tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = invoke(*run_args(out, SAMPLE / "responses.jsonl"))
    assert first.exit_code == 0, first.output
    assert not (out / "report.html").exists()
    assert f"the HTML report: gamut view {out}" in flat(first.output)
    # A report written since, from the same verdicts, stays while a rerun has nothing to
    # judge (it rewrites no verdict); one that rewrites the verdicts (here: the last
    # invocation did not finish) removes it, and says how to get a new one.
    (out / "report.html").write_text("<html></html>")
    again = invoke(*run_args(out, SAMPLE / "responses.jsonl"))
    assert again.exit_code == 0, again.output
    assert (out / "report.html").read_text() == "<html></html>"
    (out / ".finished.json").unlink()
    again = invoke(*run_args(out, SAMPLE / "responses.jsonl"))
    assert again.exit_code == 0, again.output
    assert not (out / "report.html").exists()
    assert f"the HTML report: gamut view {out}" in flat(again.output)


def test_a_different_run_into_a_used_folder_is_refused_and_the_folder_kept(
    tmp_path: Path,
) -> None:
    out = tmp_path / "run"
    assert invoke(*run_args(out, SAMPLE / "responses.jsonl")).exit_code == 0
    (out / "report.html").write_text("<p>the old report</p>")
    before = snapshot(out)
    other = answers_without(tmp_path, 0, 1, 2)
    result = invoke(*run_args(out, other, "--fill-missing"))
    assert result.exit_code == 2, result.output
    text = flat(result.output)
    assert "holds another run (it differs in: responses_sha256, fill_missing)" in text
    assert text.endswith("or set overwrite to replace it (options --overwrite, --out)")
    assert snapshot(out) == before


def test_overwrite_replaces_the_whole_run(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert invoke(*run_args(out, SAMPLE / "responses.jsonl")).exit_code == 0
    (out / "report.html").write_text("<p>the old report</p>")
    text_only = tmp_path / "text_only.jsonl"
    write_rows(text_only, [r for r in ANSWERS if r["setting"] == "text_only"])
    result = invoke(*run_args(out, text_only, "--setting", "text_only", "--overwrite"))
    assert result.exit_code == 0, result.output
    assert not (out / "report.html").exists()  # nothing of the old run is left
    settings_seen = {row["setting"] for _, row in read_rows(out / "verdicts.jsonl")}
    assert settings_seen == {"text_only"}
    assert len(list(read_rows(out / "scores.jsonl"))) == 36
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["setting"] == "text_only"


def test_a_folder_of_other_files_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "notes"
    out.mkdir()
    (out / "thesis.tex").write_text("precious")
    result = invoke(*run_args(out, SAMPLE / "responses.jsonl"))
    assert result.exit_code == 2
    assert "holds files that are not a gamut run (thesis.tex)" in flat(result.output)
    assert snapshot(out) == {"thesis.tex": b"precious"}


def test_rewritten_verdicts_remove_the_report_made_from_the_old_ones(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert invoke("demo", "--out", str(out)).exit_code == 0
    assert (out / "report.html").is_file()
    # the demo's own inputs (the sample's answers, the offline and the reference judge),
    # with one verdict gone from the store: it is judged again and the verdicts rewritten
    with sqlite3.connect(out / "store.sqlite") as db:
        db.execute("DELETE FROM verdicts WHERE key = (SELECT key FROM verdicts LIMIT 1)")
    again = invoke(*run_args(out, SAMPLE / "responses.jsonl", "--judge", "gamut/reference"))
    assert again.exit_code == 0, again.output
    assert "1 judged now" in flat(again.output)
    assert not (out / "report.html").exists()


# -- formats are what they say --------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".parquet"])
def test_judge_writes_and_reads_every_table_format(tmp_path: Path, suffix: str) -> None:
    answers = tmp_path / f"answers{suffix}"
    write_rows(answers, ANSWERS)
    out = tmp_path / f"verdicts{suffix}"
    args = ["judge", "--dataset", "sample", "--responses", str(answers), "--judge", OFFLINE]
    result = invoke(*args, "--out", str(out))
    assert result.exit_code == 0, result.output
    rows = [row for _, row in read_rows(out, what="verdicts")]
    assert len(rows) == 1272
    assert {r["status"] for r in rows} == {"ok"}


def test_judge_refuses_an_unknown_output_format_before_any_work(tmp_path: Path) -> None:
    out = tmp_path / "verdicts.txt"
    args = ["judge", "--responses", str(SAMPLE / "responses.jsonl"), "--judge", OFFLINE]
    result = invoke(*args, "--out", str(out))
    assert result.exit_code == 2
    assert "unknown table format '.txt'" in flat(result.output)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_judge_refuses_a_file_whose_content_is_not_its_extension(tmp_path: Path) -> None:
    fake = tmp_path / "answers.parquet"
    fake.write_bytes((SAMPLE / "responses.jsonl").read_bytes())
    args = ["judge", "--responses", str(fake), "--judge", OFFLINE, "--out"]
    result = invoke(*args, str(tmp_path / "v.jsonl"))
    assert result.exit_code == 2
    assert str(fake) in flat(result.output)
    assert not (tmp_path / "v.jsonl").exists()


def test_judge_refuses_answers_with_a_gap(tmp_path: Path) -> None:
    dropped = ANSWERS[7]
    args = ["judge", "--responses", str(answers_without(tmp_path, 7)), "--judge", OFFLINE]
    result = invoke(*args, "--out", str(tmp_path / "v.jsonl"))
    assert result.exit_code == 2
    text = flat(result.output)
    assert "have no answer" in text
    assert repr(dropped["question_id"]) in text
    assert not (tmp_path / "v.jsonl").exists()
    assert not (tmp_path / "verdicts.sqlite").exists()


def test_the_report_says_which_answers_were_filled(tmp_path: Path) -> None:
    dropped = ANSWERS[5]
    out = tmp_path / "run"
    assert invoke(*run_args(out, answers_without(tmp_path, 5), "--fill-missing")).exit_code == 0
    result = invoke("report", str(out), "--format", "md")
    assert result.exit_code == 0, result.output
    text = flat((out / "report.md").read_text()).replace("\\", "")  # Markdown escapes
    assert "1 missing answer(s) were scored as empty answers, as the run was told to" in text
    assert f"{dropped['question_id']} / {dropped['model']} / {dropped['setting']}" in text


def test_run_json_records_tokens_and_their_cost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3

    from gamut_eval.testing import FakeOpenAIServer

    prices = tmp_path / "prices.yaml"
    prices.write_text(
        "currency: EUR\nmodels:\n  fake-judge: {input: 2.0, cached_input: 0.5, output: 8.0}\n"
    )
    judge = "openai-api/fake/fake-judge"
    out = tmp_path / "run"
    with FakeOpenAIServer() as server:
        monkeypatch.setenv("FAKE_BASE_URL", server.base_url)
        argv = ["run", "--responses", str(SAMPLE / "responses.jsonl"), "--judge", judge]
        result = invoke(*argv, "--out", str(out), "--prices", str(prices), "--no-probe")
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "run.json").read_text())
    used = manifest["judge_usage"][judge]
    with sqlite3.connect(out / "store.sqlite") as db:
        sums = db.execute(
            "SELECT SUM(prompt_tokens), SUM(cached_tokens), SUM(completion_tokens) FROM verdicts"
        ).fetchone()
    db.close()
    assert (used["input"], used["cached_input"], used["output"]) == tuple(sums)
    assert used["input"] > 0
    expected = (
        (used["input"] - used["cached_input"]) * 2.0
        + used["cached_input"] * 0.5
        + used["output"] * 8.0
    ) / 1_000_000
    assert used["cost"] == pytest.approx(expected)
    assert used["priced_as"] == "fake-judge"
    assert manifest["currency"] == "EUR"
    assert "EUR" in result.output


def test_a_dry_run_counts_and_prices_each_judge_and_writes_nothing(tmp_path: Path) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text("models:\n  gamut/offline: {input: 1.0, output: 2.0}\n")
    out = tmp_path / "run"
    argv = run_args(out, SAMPLE / "responses.jsonl", "--dry-run", "--prices", str(prices))
    result = invoke(*argv)
    assert result.exit_code == 0, result.output
    text = flat("".join(" " if c in "│┃┌┐└┘├┤┬┴┼─━" else c for c in result.output))
    assert "Dry run: gamut/offline (nothing sent)" in text
    assert "requests to send 1,272" in text
    assert not out.exists()
    needs = invoke("run", "--model", "m/x", "--judge", OFFLINE, "--out", str(out), "--dry-run")
    assert needs.exit_code == 2
    assert "--dry-run needs --responses" in flat(needs.output)


def test_the_report_shows_how_the_judges_were_asked(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert invoke(*run_args(out, SAMPLE / "responses.jsonl")).exit_code == 0
    result = invoke("report", str(out), "--format", "md")
    assert result.exit_code == 0, result.output
    text = flat((out / "report.md").read_text()).replace("\\\\", "")
    assert "judge gamut/offline: temperature 0.0, max tokens 400" in text
