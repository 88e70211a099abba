"""Agreement between two sets of labels over the same items (pure functions)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence

__all__ = ["accuracy", "cohen_kappa", "confusion_matrix"]


def _paired(a: Sequence[Hashable], b: Sequence[Hashable]) -> None:
    if len(a) != len(b):
        raise ValueError(f"label sequences differ in length: {len(a)} != {len(b)}")
    if not a:
        raise ValueError("no labels to compare")


def accuracy(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Share of items with the same label."""
    _paired(a, b)
    return sum(x == y for x, y in zip(a, b, strict=True)) / len(a)


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Cohen's kappa: (p_o - p_e) / (1 - p_e), chance agreement from the two marginals.

    When both raters use one and the same label throughout, agreement is perfect and not
    improvable by chance: 1.0 is returned rather than 0/0.
    """
    _paired(a, b)
    n = len(a)
    observed = accuracy(a, b)
    count_a, count_b = Counter(a), Counter(b)
    expected = sum(count_a[label] * count_b[label] for label in count_a) / (n * n)
    if expected == 1.0:
        return 1.0
    return (observed - expected) / (1.0 - expected)


def confusion_matrix(
    a: Sequence[Hashable], b: Sequence[Hashable], labels: Sequence[Hashable]
) -> list[list[int]]:
    """Counts with rows for ``a``'s label and columns for ``b``'s, in ``labels`` order."""
    _paired(a, b)
    index = {label: i for i, label in enumerate(labels)}
    matrix = [[0] * len(labels) for _ in labels]
    for x, y in zip(a, b, strict=True):
        matrix[index[x]][index[y]] += 1
    return matrix
