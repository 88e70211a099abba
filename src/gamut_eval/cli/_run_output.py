"""What ``gamut run`` and ``gamut demo`` print after a run: leaderboards, what each judge
did, tokens and cost, where the results are. Tables are fitted to the terminal
(``_fit.fitted``): a model's or judge's name is never cut."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from gamut_eval.cli._common import console, err_console
from gamut_eval.cli._fit import Namer, fitted, print_fitted
from gamut_eval.cli._progress import warn_flagged

if TYPE_CHECKING:
    import pandas as pd
    from rich.table import Table

    from gamut_eval.run import RunResult

__all__ = ["print_result", "print_where"]


def _usage_table(result: RunResult, name: Namer, compact: bool) -> Table:
    from gamut_eval.cli._summary import table_with

    manifest = result.manifest
    assert manifest is not None
    columns = [("", "text"), ("", "name"), ("input", "number"), ("cached input", "number")]
    columns += [("output", "number"), ("cost", "number")]
    title = "Tokens (and estimated cost)" if manifest.currency else "Tokens"
    table = table_with(title, columns, compact=compact)
    rows = [*(("model", m, u) for m, u in manifest.model_usage.items())]
    rows += [("judge", j, u) for j, u in manifest.judge_usage.items()]
    for kind, who, usage in rows:
        if not (usage.input or usage.output or usage.cost):
            continue  # the offline and reference judges send nothing
        cost = "n/a" if usage.cost is None else f"{usage.cost:,.4f} {manifest.currency}"
        table.add_row(kind, name(who), f"{usage.input:,}", f"{usage.cached_input:,}",
                      f"{usage.output:,}", cost)  # fmt: skip
    return table


def _leaderboard(part: pd.DataFrame, title: str, name: Namer, level: int) -> Table:
    from gamut_eval.cli._score import summary_table

    return summary_table(part, title, name, level)


def _print_usage(result: RunResult) -> None:
    """Tokens and estimated cost per answering model and judge, when any were used."""
    manifest = result.manifest
    if manifest is None:
        return
    used = [*manifest.model_usage.values(), *manifest.judge_usage.values()]
    if not any(u.input or u.output or u.cost for u in used):
        return
    parts = fitted(lambda name, level: _usage_table(result, name, level >= 1), err_console)
    print_fitted(err_console, parts)


def print_where(out_dir: object) -> None:
    logs = ""
    if (Path(str(out_dir)) / "logs").is_dir():
        logs = f"; Inspect logs with the scores: inspect view --log-dir {out_dir}/logs"
    if not (Path(str(out_dir)) / "report.html").is_file():
        logs += f"; the HTML report: gamut view {out_dir}"
    err_console.print(
        f"results in {out_dir}/ (scores.jsonl, verdicts.jsonl, summary.json, run.json{logs})",
        markup=False,
        soft_wrap=True,
        highlight=False,
    )


def print_result(result: RunResult, *, leaderboards: bool = True, where: bool = True) -> None:
    """The leaderboards (one per setting), missing answers filled, each judge's counts,
    token usage, and where the files are."""
    summary = result.summary
    title = "Leaderboard (Gamut score x100)"
    for setting in ("multimodal", "text_only") if leaderboards else ():
        part = summary[summary["setting"] == setting] if "setting" in summary.columns else summary
        if len(part):
            print_fitted(console, fitted(partial(_leaderboard, part, title), console))
    if result.filled:
        shown = "; ".join(f"{f.question_id} / {f.model} / {f.setting}" for f in result.filled[:5])
        more = f" and {len(result.filled) - 5} more" if len(result.filled) > 5 else ""
        console.print(
            f"[yellow]{len(result.filled)} missing answer(s) were scored as empty answers "
            f"(--fill-missing):[/yellow] {shown}{more}; listed in run.json"
        )
    for judge, report in result.reports.items():
        stats = report.stats
        warn_flagged(stats)
        err_console.print(
            f"{judge}: {report.rows} verdicts ({stats.cached} reused from the store, "
            f"{stats.judged} judged now); {report.unscored} unscored",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    _print_usage(result)
    if where:
        print_where(result.out_dir)
