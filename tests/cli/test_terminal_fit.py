"""Terminal output at 60, 80 and 120 columns: tables that never cut a model or judge name
(compact headers, short names with a legend, records), progress lines whose columns follow
the width, and ``gamut report -o -`` as plain text for a pipe."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.cells import cell_len
from rich.console import Console

import gamut_eval.cli._terminal as terminal_module
from gamut_eval.analysis import LeaderboardRow, ReportConfig, build_report, load_run_data
from gamut_eval.cli._main import cli
from gamut_eval.cli._report import summary_renderables, table_with
from gamut_eval.cli._terminal import (
    PassProgress,
    fitted,
    print_fitted,
    progress_columns,
    short_names,
)
from gamut_eval.judge import JudgeStats, PassEvent
from gamut_eval.testing import synthetic_run

LONG = [
    "openai-api/together/meta-llama/Llama-3.3-70B-Instruct-Turbo",
    "openai-api/vllm/Qwen/Qwen2.5-VL-72B-Instruct",
    "google/gemini-2.5-flash-preview-05-20",
]
JUDGES = ["anthropic/claude-sonnet-4-5-20250929", "openai/gpt-4.1-mini-2025-04-14"]
WIDTHS = [60, 80, 120]


def _render(renderables: list[object], width: int) -> str:
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, color_system=None, legacy_windows=False)
    print_fitted(console, renderables)  # type: ignore[arg-type]
    return buffer.getvalue()


@pytest.fixture(scope="module")
def long_names_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("long") / "run"
    return synthetic_run(path, models=LONG, judges=JUDGES, questions=8, checks=5)


def _assert_no_cut_name(text: str, names: list[str]) -> None:
    assert "…" not in text
    for name in names:
        shown = [line for line in text.splitlines() if name in line]
        assert shown, f"{name} is not shown whole anywhere"
    # no line shows the start of a name without the rest of it
    for name in names:
        head = name[: max(8, len(name) // 2)]
        for line in text.splitlines():
            start = line.find(head)
            if start >= 0:
                assert line[start:].startswith(name), f"cut: {line!r}"


@pytest.mark.parametrize("width", WIDTHS)
def test_the_report_summary_never_cuts_long_names(long_names_run: Path, width: int) -> None:
    report = build_report(load_run_data(long_names_run), ReportConfig(resamples=50))
    console = Console(width=width, file=io.StringIO())
    text = _render(summary_renderables(report, console), width)
    _assert_no_cut_name(text, [*LONG, *JUDGES])
    for line in text.splitlines():  # every line fits, but a legend's or a record's full id
        assert cell_len(line) <= width or any(name in line for name in (*LONG, *JUDGES)), line
    if width <= 80:  # 60-character model ids cannot sit in a table of 60 or 80 columns
        assert re.search(r"^  \S+ +openai-api/vllm/Qwen/Qwen2.5-VL-72B-Instruct$", text, re.M)


def test_short_names_are_the_last_part_when_distinct_else_numbered() -> None:
    assert short_names(["sample/brief", "sample/thorough"])[0] == {
        "sample/brief": "brief",
        "sample/thorough": "thorough",
    }
    clash = short_names(["a/model", "b/model"])
    assert clash == [{"a/model": "M1", "b/model": "M2"}]
    assert short_names(["plain", "names"]) == [{"plain": "M1", "names": "M2"}]


def _people(name: object, level: int) -> object:
    columns = [("model", "name"), ("score", "number"), ("note", "text")]
    table = table_with("who", columns, compact=level >= 1)
    for model in ("sample/thorough", "sample/brief"):
        table.add_row(name(model), "88.8", "three words here")  # type: ignore[operator]
    return table


# The cells are 15 ("sample/thorough"), 5 ("score") and 16 ("three words here") wide: 36.
# Wide, the heavy box adds 4 rules and 6 spaces of padding: 46. Compact (no vertical rules,
# one space between columns, a blank edge each side): 36 + 2 + 2 + 2 = 42. With "thorough"
# (8) instead of "sample/thorough": 39 wide, 35 compact; with "M1": 36 ("model" is the
# widest cell of its column) and 32.
@pytest.mark.parametrize(
    ("width", "shown", "legend"),
    [
        (120, "sample/thorough", False),  # 46 fits
        (44, "sample/thorough", False),  # 46 does not, compact 42 does
        (40, "thorough", True),  # 42 does not, "thorough" wide 39 does
        (34, "M1", True),  # 35 does not, "M1" wide 36 does not, compact 32 does
    ],
)
def test_fitted_uses_full_names_when_they_fit_else_a_legend(
    width: int, shown: str, legend: bool
) -> None:
    console = Console(width=width, file=io.StringIO())
    parts = fitted(_people, console)  # type: ignore[arg-type]
    text = _render(parts, width)
    assert "…" not in text
    assert all(cell_len(line) <= width for line in text.splitlines())
    rows = [line for line in text.splitlines() if "three words here" in line]
    assert len(rows) == 2
    assert rows[0].replace("│", " ").split()[0] == shown
    assert len(parts) == (2 if legend else 1)  # the table, and its legend
    if legend:
        assert re.search(rf"^  {shown} +sample/thorough$", text, re.M)


def test_a_very_narrow_terminal_gets_records_with_whole_names() -> None:
    console = Console(width=12, file=io.StringIO())
    text = _render(fitted(_people, console), 12)  # type: ignore[arg-type]
    assert "…" not in text
    assert "sample/thorough" in text.splitlines()
    assert "  score: 88.8" in text.splitlines()
    assert "  note: three words here" in text  # folded by the terminal, never cut


# -- progress ----------------------------------------------------------------------------------

# Widths for a pass of 1,272 checks: done "1,272/1,272" 11, rate "99,999/s" 8, unscored
# "1,272 unscored" 14, cached "1,272 cached" 12, elapsed and left 7; the label "judging
# with gamut/reference" 28, the short one 15; one space between columns, the bar 10 at
# least and 24 at most.
FIELDS = {"done": 11, "rate": 8, "unscored": 14, "cached": 12, "elapsed": 7, "left": 7}


def test_progress_columns_by_width_worked_out_by_hand() -> None:
    # 120, full label: 28, +done 40, +unscored 55, +left 63, +rate 72, +bar 83, +cached 96,
    # +elapsed 104: everything; the bar takes 10 + (120 - 104), capped at 24.
    assert progress_columns(120, 28, 15, FIELDS) == (
        ("label", "bar", "done", "rate", "unscored", "cached", "elapsed", "left"),
        False,
        24,
    )
    # 80, full label: 28, 40, 55, 63, 72, bar 83 no, cached 85 no, elapsed 80: 6 columns;
    # short label: 15, 27, 42, 50, 59, bar 70, cached 83 no, elapsed 78: 7 columns, so the
    # short label wins and the bar gets 10 + (80 - 78) = 12.
    assert progress_columns(80, 28, 15, FIELDS) == (
        ("label", "bar", "done", "rate", "unscored", "elapsed", "left"), True, 12)  # fmt: skip
    # 60, full label: 28, 40, 55, then nothing fits (left 63): 3 columns; short: 15, 27,
    # 42, 50, 59, bar 70 no, cached 72 no, elapsed 67 no: 5 columns, no bar.
    assert progress_columns(60, 28, 15, FIELDS) == (
        ("label", "done", "rate", "unscored", "left"), True, 0)  # fmt: skip


@pytest.mark.parametrize("width", WIDTHS)
def test_a_progress_line_fits_the_terminal(width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=True, color_system=None)
    monkeypatch.setattr(terminal_module, "err_console", console)
    stats = JudgeStats(total=1272)
    with PassProgress(terminal=True) as progress:
        progress(PassEvent("start", "gamut/reference", stats, label="gamut/reference"))
        stats.judged, stats.cached, stats.unscored = 600, 12, 3
        progress(PassEvent("done", "gamut/reference", stats, label="gamut/reference"))
        live = progress._progress
        assert live is not None
        table = live.make_tasks_table(live.tasks)
    line = _render([table], width).rstrip("\n")
    assert "\n" not in line
    assert cell_len(line) <= width
    assert "…" not in line
    assert "gamut/reference" in line
    assert "612/1,272" in line
    assert "3 unscored" in line


def test_without_a_terminal_progress_lines_are_never_wrapped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    buffer = io.StringIO()
    monkeypatch.setattr(terminal_module, "err_console", Console(file=buffer, width=40))
    stats = JudgeStats(total=1272)
    with PassProgress(terminal=False) as progress:
        progress(PassEvent("start", "gamut/offline", stats, label="gamut/offline"))
        stats.judged = 1272
        progress(PassEvent("done", "gamut/offline", stats, label="gamut/offline"))
    lines = buffer.getvalue().splitlines()
    assert lines[0] == "judging with gamut/offline: 1,272 checks"
    assert len(lines) == 2  # one line per event, however narrow the console
    assert lines[1].startswith("judging with gamut/offline: 1,272/1,272 checks (0 cached, ")


# -- gamut report -o - ------------------------------------------------------------------------


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_csv_to_standard_output_is_the_leaderboard(long_names_run: Path) -> None:
    code, out, err = _run("report", str(long_names_run), "--format", "csv", "-o", "-",
                          "--resamples", "20")  # fmt: skip
    assert code == 0, err
    assert "\x1b[" not in out
    rows = list(csv.DictReader(io.StringIO(out)))
    assert list(rows[0]) == list(LeaderboardRow.model_fields)
    # 3 models x 2 settings x 2 judges
    assert len(rows) == 12
    assert {r["model"] for r in rows} == set(LONG)
    assert not (long_names_run / "report").exists()  # nothing written


def test_one_table_as_markdown_or_json(long_names_run: Path) -> None:
    code, out, err = _run("report", str(long_names_run), "--format", "md", "-o", "-",
                          "--table", "judge_pairs", "--resamples", "20")  # fmt: skip
    assert code == 0, err
    assert out.startswith("## Ranking agreement between judges\n")
    assert out.count("\n| multimodal |") + out.count("\n| text\\_only |") == 2
    code, out, err = _run("report", str(long_names_run), "--format", "json", "-o", "-",
                          "--table", "judge_scores", "--resamples", "20")  # fmt: skip
    assert code == 0, err
    assert len(json.loads(out)) == 12  # 2 settings x 3 models x 2 judges


def test_table_errors_name_the_choices(long_names_run: Path) -> None:
    code, out, err = _run("report", str(long_names_run), "--format", "md", "-o", "-",
                          "--table", "nope")  # fmt: skip
    assert code == 2
    assert out == ""
    assert "table_name 'nope': not a table of the report" in err
    assert "leaderboard" in err
    assert err.strip().endswith("(option --table)")  # the command line adds its option
    code, _, err = _run("report", str(long_names_run), "--format", "md", "--table", "leaderboard")
    assert code == 2
    assert "-o -" in err
