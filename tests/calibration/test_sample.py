"""The calibration sample: seeded, nested, written whole for people to label."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from gamut_eval.calibration import sample_questions, write_sample
from gamut_eval.errors import InputError

QUESTIONS = [f"q{i:03d}" for i in range(200)]


def test_the_draw_is_nested_and_sized_by_the_fraction() -> None:
    previous: list[str] = []
    for fraction in (0.05, 0.25, 0.5, 1.0):
        drawn = sample_questions(QUESTIONS, fraction, seed=7)
        assert len(drawn) == math.ceil(fraction * 200)
        assert drawn[: len(previous)] == previous  # raising F keeps every question drawn
        previous = drawn
    assert sorted(previous) == QUESTIONS
    assert len(sample_questions(QUESTIONS[:10], 0.25, seed=7)) == 3  # ceil(2.5)


def test_the_draw_depends_on_the_seed_and_ids_only() -> None:
    drawn = sample_questions(QUESTIONS, 0.25, seed=7)
    assert sample_questions(list(reversed(QUESTIONS)), 0.25, seed=7) == drawn
    assert sample_questions(QUESTIONS, 0.25, seed=8) != drawn
    # Adding questions never drops an old one that still ranks ahead of the cut.
    more = sample_questions([*QUESTIONS, *(f"new{i}" for i in range(50))], 1.0, seed=7)
    old = [q for q in more if q.startswith("q")]
    assert old == sample_questions(QUESTIONS, 1.0, seed=7)


def test_a_fraction_outside_zero_to_one_is_refused() -> None:
    for fraction in (0.0, -0.1, 1.5):
        with pytest.raises(InputError, match="calibration fraction"):
            sample_questions(QUESTIONS, fraction)


def test_the_list_is_written_one_id_a_line(tmp_path: Path) -> None:
    path = tmp_path / "to-label.txt"
    drawn = write_sample(path, QUESTIONS, 0.1, seed=3)
    assert path.read_text(encoding="utf-8").splitlines() == drawn
    assert len(drawn) == 20
