"""Agreement statistics against values computed by hand."""

from __future__ import annotations

import pytest

from gamut_eval.analysis import accuracy, cohen_kappa, confusion_matrix


def test_kappa_by_hand() -> None:
    a = ["m", "m", "m", "s", "s", "c", "m", "s", "c", "m"]
    b = ["m", "m", "s", "s", "s", "c", "m", "m", "s", "m"]
    # p_o = 7/10. Marginals a: m5 s3 c2; b: m5 s4 c1.
    # p_e = (5*5 + 3*4 + 2*1) / 100 = 39/100. kappa = (0.70 - 0.39) / 0.61
    assert accuracy(a, b) == pytest.approx(0.7)
    assert cohen_kappa(a, b) == pytest.approx(0.31 / 0.61)


def test_kappa_perfect_and_chance() -> None:
    assert cohen_kappa(["x", "y", "x"], ["x", "y", "x"]) == pytest.approx(1.0)
    assert cohen_kappa(["x", "x"], ["x", "x"]) == 1.0  # one label throughout: 0/0 avoided
    # Independent-looking raters: p_o = 0.5, p_e = 0.5 -> 0.
    assert cohen_kappa(["x", "x", "y", "y"], ["x", "y", "x", "y"]) == pytest.approx(0.0)


def test_confusion_matrix_rows_are_first_rater() -> None:
    assert confusion_matrix(["a", "a", "b"], ["a", "b", "b"], ["a", "b"]) == [[1, 1], [0, 1]]


def test_mismatched_lengths_are_refused() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        accuracy(["a"], ["a", "b"])
