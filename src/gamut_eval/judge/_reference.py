"""The reference judge (``gamut/reference``): the bundled sample's reference labels, replayed.

The sample ships a verdict for every (answer, check) pair of its illustrative answers
(``data/sample/gold.jsonl``). Those labels were written with the sample, alongside its
answers and rubrics; they are reference labels, not annotations by independent raters.
Replayed as a judge, they let a run compare another judge with them through the same
tables as any two judges (Table 2, per-check agreement).

A label is replayed only for the content it was written for: the question as asked in
its setting, the answer's exact text and the check's exact text. Any other (answer,
check) pair has no reference label and is left unscored with that reason, so the
reference judge never grades an answer it has not seen.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from gamut_eval.data import sample_dir
from gamut_eval.dataset import load_dataset

__all__ = ["NO_LABEL", "REFERENCE_JUDGE", "ReferenceLabels", "reference_labels"]

REFERENCE_JUDGE = "gamut/reference"

NO_LABEL = (
    "no reference label: gamut/reference replays the bundled sample's labels, and this "
    "question, answer and check are not the sample's"
)
"""Why a check the reference judge cannot grade is unscored."""

ContentKey = tuple[str, str, str]
"""(question as asked, answer text, check text)."""


class ReferenceLabels:
    """Reference verdicts by the content they were written for."""

    def __init__(self, labels: dict[ContentKey, str]) -> None:
        self._labels = labels

    def __len__(self) -> int:
        return len(self._labels)

    def verdict(self, question: str, answer: str, check_text: str) -> str | None:
        """The reference verdict of this (question, answer, check), or None."""
        return self._labels.get((question, answer, check_text))

    @classmethod
    def from_folder(cls, folder: Path) -> ReferenceLabels:
        """Labels of a sample folder: ``dataset.jsonl``, ``responses.jsonl`` and
        ``gold.jsonl`` (one row per question, model, setting and check id)."""
        dataset = load_dataset(folder / "dataset.jsonl")
        records = dataset.by_id()
        checks = {
            (qid, check.id): check.text
            for qid, checklist in dataset.checklists().items()
            for check in checklist.checks
        }
        answers = {}
        for row in _rows(folder / "responses.jsonl"):
            answers[(row["question_id"], row["model"], row["setting"])] = row["response"]
        labels: dict[ContentKey, str] = {}
        for row in _rows(folder / "gold.jsonl"):
            qid, setting = row["question_id"], row["setting"]
            key = (
                records[qid].question_for(setting),
                answers[(qid, row["model"], setting)],
                checks[(qid, row["check_id"])],
            )
            if labels.setdefault(key, row["verdict"]) != row["verdict"]:
                raise ValueError(f"{folder / 'gold.jsonl'}: two labels for one content: {key}")
        return cls(labels)


def _rows(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


@lru_cache(maxsize=1)
def reference_labels() -> ReferenceLabels:
    """The bundled sample's reference labels (read once per process)."""
    return ReferenceLabels.from_folder(sample_dir())
