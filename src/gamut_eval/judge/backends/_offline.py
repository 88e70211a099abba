"""The ``offline`` backend: the built-in judge (``gamut/offline``), graded in process.

Each pending check is graded by ``grade_check`` from the answer's text and the check's
structured data; the verdict is settled and recorded like any judge's reply, so the store,
the rows and the scores are the same as for a model judge. No prompt is rendered and no
request is sent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from gamut_eval.judge._offline import grade_check
from gamut_eval.judge._pass import JudgeWork
from gamut_eval.judge._resolve import ResolvedJudge
from gamut_eval.judge._settle import settle
from gamut_eval.judge._store import StoredVerdict
from gamut_eval.judge._types import Completion
from gamut_eval.judge.backends import BackendOptions

__all__ = ["OfflineBackend", "offline_backend"]


@dataclass
class OfflineBackend:
    """Grades every pending check locally; deterministic and instant."""

    judge: ResolvedJudge
    name: str = "offline"
    writes_store: bool = True
    exports_rows: bool = True
    probed: bool = False

    async def run(self, work: JudgeWork) -> None:
        for answer in work.pending():
            text = answer.plan.row.response
            for key, check in answer.checks:
                verdict, why = grade_check(text, check)
                reply = Completion(json.dumps({"explanation": why, "verdict": verdict}))
                row = settle(key, reply, None, work.settings)
                assert isinstance(row, StoredVerdict)  # a valid verdict is never re-asked
                work.record(row)


def offline_backend(judge: ResolvedJudge, options: BackendOptions) -> OfflineBackend:
    return OfflineBackend(judge)
