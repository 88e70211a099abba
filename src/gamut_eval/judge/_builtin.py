"""The built-in judges' revisions, part of their store keys.

A model judge's verdict depends on the model and the prompt, which the store key hashes
(judge id, prompt version, question, answer, image, check text). A built-in judge's
verdict also depends on code or data that ships with the package: the offline judge's
rules and threshold, the reference judge's labels. Their revisions go into the key, so
that a store filled by an earlier version is not reused for verdicts this version would
give differently (the checks are simply graded again, which takes a second).
"""

from __future__ import annotations

import hashlib
from functools import lru_cache

from gamut_eval.data import sample_dir
from gamut_eval.judge._offline import MEETS_AT, OFFLINE_JUDGE
from gamut_eval.judge._reference import REFERENCE_JUDGE

__all__ = ["OFFLINE_RULES", "keyed_judge"]

OFFLINE_RULES = 2
"""Revision of the offline judge's rules; raise it when a change to them changes verdicts
(the threshold is part of the key on its own)."""


@lru_cache(maxsize=1)
def _labels_digest() -> str:
    return hashlib.sha256((sample_dir() / "gold.jsonl").read_bytes()).hexdigest()[:16]


def keyed_judge(judge: str) -> str:
    """The judge as the store key names it: a built-in judge with its revision
    (``gamut/offline@rules-2,meets-at-0.45``, ``gamut/reference@labels-<sha256>``),
    any other judge as given."""
    if judge == OFFLINE_JUDGE:
        return f"{judge}@rules-{OFFLINE_RULES},meets-at-{MEETS_AT}"
    if judge == REFERENCE_JUDGE:
        return f"{judge}@labels-{_labels_digest()}"
    return judge
