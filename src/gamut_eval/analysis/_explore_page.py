"""The drill-down's JSON for a report: from the run it was built from, or its run folder."""

from __future__ import annotations

import json
from pathlib import Path

from gamut_eval.analysis._explore_data import explore_data
from gamut_eval.analysis._report import Report
from gamut_eval.analysis._rundata import RunData, load_run
from gamut_eval.errors import InputError

__all__ = ["explore_json"]


def explore_json(report: Report, run: RunData | None = None) -> tuple[str | None, str]:
    """The ``gamut-data`` JSON text, or None and why not: the run folder is not at hand (a
    report re-rendered from its JSON elsewhere), has no verdicts.jsonl, or a file of it
    does not parse."""
    if run is None:
        folder = report.meta.run_dir
        if folder is None:
            return None, "the drill-down needs the run folder, and this report names none"
        if not (Path(folder) / "verdicts.jsonl").is_file():
            return None, f"the drill-down needs {Path(folder) / 'verdicts.jsonl'}"
        try:
            run = load_run(folder, report.meta.dataset, verdicts=False)
        except InputError as exc:
            return None, f"the drill-down is left out: {exc}"
    board = [
        {"model": r.model, "setting": r.setting, "judge": r.judge, "gamut": r.gamut}
        for r in report.leaderboard
    ]
    try:
        data = explore_data(run, leaderboard=board)
    except InputError as exc:
        return None, f"the drill-down is left out: {exc}"
    if data is None:
        return None, "the drill-down needs the run folder's verdicts.jsonl"
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text, ""
