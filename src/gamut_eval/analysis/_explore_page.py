"""The drill-down's JSON for a report: from the run it was built from, or its run folder."""

from __future__ import annotations

import json
from pathlib import Path

from gamut_eval.analysis._explore_data import explore_data
from gamut_eval.analysis._report import Report
from gamut_eval.analysis._rundata import RunData, load_run
from gamut_eval.errors import InputError

__all__ = ["explore_json"]


def explore_json(report: Report, run: RunData | None = None) -> str | None:
    """The ``gamut-data`` JSON text, or None when the run folder is not at hand (a report
    re-rendered from its JSON elsewhere) or has no verdicts.jsonl."""
    if run is None:
        folder = report.meta.run_dir
        if folder is None or not (Path(folder) / "verdicts.jsonl").is_file():
            return None
        try:
            run = load_run(folder, report.meta.dataset, verdicts=False)
        except InputError:
            return None
    board = [
        {"model": r.model, "setting": r.setting, "judge": r.judge, "gamut": r.gamut}
        for r in report.leaderboard
    ]
    data = explore_data(run, leaderboard=board)
    if data is None:
        return None
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
