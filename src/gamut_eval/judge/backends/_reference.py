"""The ``reference`` backend: the reference judge (``gamut/reference``), graded in process.

Each pending check gets the bundled sample's reference label for exactly that question,
answer and check (``judge/_reference.py``), settled and recorded like any judge's reply,
so the store, the rows, the scores and every report table treat it as one more judge. A
check without a label is unscored with the reason. Nothing is rendered or sent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from gamut_eval.judge._pass import JudgeWork
from gamut_eval.judge._reference import NO_LABEL, reference_labels
from gamut_eval.judge._resolve import ResolvedJudge
from gamut_eval.judge._settle import settle
from gamut_eval.judge._store import StoredVerdict
from gamut_eval.judge._types import Completion
from gamut_eval.judge.backends import BackendOptions

__all__ = ["ReferenceBackend", "reference_backend"]

EXPLANATION = "reference label written with the sample"


@dataclass
class ReferenceBackend:
    """Replays the sample's reference labels; deterministic and instant."""

    judge: ResolvedJudge
    name: str = "reference"
    writes_store: bool = True
    exports_rows: bool = True
    probed: bool = False

    async def run(self, work: JudgeWork) -> None:
        labels = reference_labels()
        for answer in work.pending():
            question, text = answer.plan.question, answer.plan.row.response
            for key, check in answer.checks:
                verdict = labels.verdict(question, text, check.text)
                outcome: Completion | str = (
                    NO_LABEL
                    if verdict is None
                    else Completion(json.dumps({"explanation": EXPLANATION, "verdict": verdict}))
                )
                row = settle(key, outcome, None, work.settings)
                assert isinstance(row, StoredVerdict)  # a label or a reason is never re-asked
                work.record(row)


def reference_backend(judge: ResolvedJudge, options: BackendOptions) -> ReferenceBackend:
    return ReferenceBackend(judge)
