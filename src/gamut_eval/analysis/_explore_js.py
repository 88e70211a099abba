"""The drill-down's script and styles (``explore.js``, ``explore.css`` beside this module).

The script is vanilla JavaScript that renders the visible view only. It reads the page's
``gamut-data`` block once and draws one view at a time from the URL fragment:
``#explore`` (the leaderboard), ``#explore/m/M`` (a model's questions, filtered, searched
and sorted, shown a hundred at a time), ``#explore/m/M/q/Q`` (a question: image, both
variants, meta-rubric, answers side by side, checks) and ``#explore/m/M/q/Q/c/C`` (one
check opened: every model x judge x setting verdict with its explanation, and the passages
the judges quoted marked in the answers). Every text from the run is set with
``textContent``, never parsed as markup.
"""

from __future__ import annotations

from importlib.resources import files

__all__ = ["EXPLORE_CSS", "EXPLORE_JS"]

_HERE = files("gamut_eval.analysis")
EXPLORE_JS = _HERE.joinpath("explore.js").read_text(encoding="utf-8").strip()
EXPLORE_CSS = _HERE.joinpath("explore.css").read_text(encoding="utf-8").strip()
