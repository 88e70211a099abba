"""The calibration sample: which questions the strong judge (or people) grades.

Drawn from a seed and the question ids alone, before any verdict is seen. Questions are
ordered by a keyed hash of (seed, question id) and the first ``ceil(fraction * n)`` are
taken, so the draw is nested: raising the fraction adds questions and keeps every one
already drawn, and adding questions to the benchmark never reorders the old ones.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable
from pathlib import Path

from gamut_eval._files import atomic_writer
from gamut_eval.errors import InputError


def _key(seed: int, question_id: str) -> bytes:
    return hashlib.blake2b(
        question_id.encode("utf-8"), digest_size=16, key=str(seed).encode("ascii")
    ).digest()


def sample_questions(question_ids: Iterable[str], fraction: float, seed: int = 0) -> list[str]:
    """The first ``ceil(fraction * n)`` distinct questions in the seed's order.

    The list is in draw order: its first k entries are the sample of any smaller fraction
    that takes k questions.
    """
    if not 0.0 < fraction <= 1.0:
        raise InputError(f"the calibration fraction must be in (0, 1], got {fraction!r}")
    distinct = list(dict.fromkeys(question_ids))
    ordered = sorted(distinct, key=lambda q: (_key(seed, q), q))
    return ordered[: math.ceil(fraction * len(distinct) - 1e-9)]


def write_sample(
    path: str | Path, question_ids: Iterable[str], fraction: float, seed: int = 0
) -> list[str]:
    """Write the sample to ``path``, one question id a line in draw order, for people to
    label; returns it. The file is written whole or not at all."""
    drawn = sample_questions(question_ids, fraction, seed)
    try:
        with atomic_writer(path) as handle:
            handle.write("".join(f"{q}\n" for q in drawn))
    except OSError as exc:
        raise InputError(f"{path}: cannot write the sample: {exc.strerror}") from None
    return drawn
