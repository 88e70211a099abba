"""Scoring many responses at once: a table of verdict rows in, a table of scores out.

Gives exactly the numbers ``score_response`` gives (the same float operations in the same
order), but counts verdicts with one ``bincount`` over integer codes instead of Python
loops, so a paper-scale pass (millions of verdict rows) scores in about a second.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt
import pandas as pd

from gamut_eval.errors import LISTED, ErrorDetail, ValidationError
from gamut_eval.rubric import TIERS, Checklist
from gamut_eval.scoring._score import ScoringParams
from gamut_eval.scoring._verdict import Verdict

IntArray = npt.NDArray[np.int64]

RESPONSE_KEYS: tuple[str, ...] = ("question_id", "model", "setting", "judge")
"""Columns that identify one judged response in a verdict table (those present are used)."""

_VERDICTS: tuple[str, ...] = (*(v.value for v in Verdict), "unscored")
_UNSCORED = len(Verdict)
COUNT_COLUMNS: tuple[str, ...] = tuple(f"{t.value}.{v}" for t in TIERS for v in _VERDICTS)
"""Count columns of a score table, ``<tier>.<verdict>``, ``unscored`` included."""


def _factorize(values: pd.Series | IntArray) -> tuple[IntArray, npt.NDArray[np.object_]]:
    """Codes in order of first appearance (-1 for null) and the distinct values."""
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    return np.asarray(codes, dtype=np.int64), np.asarray(uniques, dtype=object)


def _first_rows(codes: IntArray) -> IntArray:
    """Row of the first occurrence of each code (codes numbered by first appearance)."""
    previous_max = np.maximum.accumulate(np.concatenate(([-1], codes[:-1])))
    return np.flatnonzero(codes > previous_max)


def _row_error(column: str, rule: str, message: str, value: object) -> ValidationError:
    return ValidationError([ErrorDetail(column, rule, message, value)])


# The messages of a verdict table that does not fit its checklists: counts first, then the
# first few by name.

_NAMED_CHARS = 80


def named(value: object) -> str:
    """A name from the rows as a message shows it: quoted, and cut to 80 characters (a
    judge or model name is whatever the file says, however long)."""
    text = repr(value)
    return text if len(text) <= _NAMED_CHARS else text[: _NAMED_CHARS - 3] + "..."


def unknown_details(questions: list[str], checks: list[tuple[str, str]]) -> list[ErrorDetail]:
    details = []
    if questions:
        details.append(
            ErrorDetail(
                "question_id",
                "known-question",
                f"{len(questions)} question id(s) of the verdict rows have no checklist in the "
                f"dataset; the first {min(len(questions), LISTED)} are given",
                questions[:LISTED],
            )
        )
    if checks:
        details.append(
            ErrorDetail(
                "check_id",
                "known-check",
                f"{len(checks)} (question, check id) pair(s) of the verdict rows name no check "
                f"of that question's checklist; the first {min(len(checks), LISTED)} follow",
            )
        )
        details += [
            ErrorDetail("check_id", "known-check", f"no such check in question {named(q)}", c)
            for q, c in checks[:LISTED]
        ]
    return details


_DENSE_LIMIT = 1 << 26
"""Key spaces up to this size are counted with ``bincount`` instead of hashing."""


class _Columns:
    """Factorises each column once per call; the same codes serve grouping and lookups."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self.frame = frame
        self._cache: dict[str, tuple[IntArray, npt.NDArray[np.object_]]] = {}

    def codes(self, column: str) -> tuple[IntArray, npt.NDArray[np.object_]]:
        if column not in self._cache:
            if column not in self.frame.columns:
                raise _row_error(column, "required", "the verdict table has no such column", None)
            self._cache[column] = _factorize(self.frame[column])
        return self._cache[column]

    def groups(self, columns: Sequence[str]) -> tuple[IntArray, list[IntArray]]:
        """A group code per row for each distinct combination of ``columns``, and, per
        column, the code of each group's value (so group keys need no second pass)."""
        per_column = [self.codes(c) for c in columns]
        for column, (codes, _) in zip(columns, per_column, strict=True):
            if (codes < 0).any():
                raise _row_error(column, "required", "a verdict row has no value here", None)
        sizes = [max(len(uniques), 1) for _, uniques in per_column]
        space = int(np.prod(sizes, dtype=object))
        if space <= _DENSE_LIMIT:
            return _dense_groups([codes for codes, _ in per_column], sizes)
        combined = np.zeros(len(self.frame), dtype=np.int64)
        for (codes, _), size in zip(per_column, sizes, strict=True):
            combined, _ = _factorize(combined * size + codes)  # stays inside int64
        group, _ = _factorize(combined)
        first = _first_rows(group)
        return group, [codes[first] for codes, _ in per_column]


def _dense_groups(codes: list[IntArray], sizes: list[int]) -> tuple[IntArray, list[IntArray]]:
    """Mixed-radix keys in a small space: compact them with one bincount, no hashing."""
    combined = np.zeros(len(codes[0]), dtype=np.int64)
    for column_codes, size in zip(codes, sizes, strict=True):
        combined = combined * size + column_codes
    present = np.bincount(combined, minlength=int(np.prod(sizes))) > 0
    compact = np.cumsum(present) - 1
    values = np.flatnonzero(present)
    keys: list[IntArray] = []
    for size in reversed(sizes):
        values, digit = np.divmod(values, size)
        keys.append(digit)
    return compact[combined], keys[::-1]


def _tier_codes(columns: _Columns, checklists: Mapping[str, Checklist] | None) -> IntArray:
    """Tier index (0 AC, 1 V, 2 C) per row, from a ``tier`` column or the checklists."""
    index: dict[str, int] = {tier: i for i, tier in enumerate(TIERS)}
    if "tier" in columns.frame.columns:
        codes, uniques = columns.codes("tier")
        for value in uniques:
            if value not in index:
                raise _row_error("tier", "allowed-value", "unknown tier", value)
        if (codes < 0).any():
            raise _row_error("tier", "required", "a verdict row has no tier", None)
        return np.array([index[v] for v in uniques], dtype=np.int64)[codes]
    if checklists is None:
        raise _row_error(
            "tier", "required", "give a `tier` column, or checklists to look tiers up", None
        )
    pair, (pair_q, pair_c) = columns.groups(["question_id", "check_id"])
    q_values = columns.codes("question_id")[1][pair_q]
    c_values = columns.codes("check_id")[1][pair_c]
    lookup = {qid: {c.id: index[c.tier] for c in cl.checks} for qid, cl in checklists.items()}
    tiers = np.empty(len(pair_q), dtype=np.int64)
    unknown_questions: dict[str, None] = {}
    unknown_checks: list[tuple[str, str]] = []
    for i, (qid, check_id) in enumerate(zip(q_values, c_values, strict=True)):
        known = lookup.get(qid)
        if known is None:
            unknown_questions[qid] = None
        elif check_id not in known:
            unknown_checks.append((qid, check_id))
        else:
            tiers[i] = known[check_id]
    if unknown_questions or unknown_checks:
        raise ValidationError(unknown_details(list(unknown_questions), unknown_checks))
    return tiers[pair]


def _check_complete(
    columns: _Columns,
    keys: Sequence[str],
    group: IntArray,
    key_codes: Sequence[IntArray],
    checklists: Mapping[str, Checklist],
    rows: IntArray,
) -> None:
    """Refuse responses that lack a verdict row for some check of their checklist.

    ``rows`` is each response's number of verdict rows. This runs after the duplicate
    and known-check tests, so a response has all its checks exactly when that number
    equals its checklist's size (no pass over the rows, no set work).
    """
    if "question_id" not in keys:
        return
    q_codes = key_codes[list(keys).index("question_id")]
    q_uniques = columns.codes("question_id")[1]
    sizes = np.array([len(checklists[q].checks) for q in q_uniques], dtype=np.int64)
    expected = sizes[q_codes]
    shortfall = expected - rows
    short = np.flatnonzero(shortfall > 0)
    if len(short):
        total = int(shortfall[short].sum())
        summary = ErrorDetail(
            "check_id",
            "verdict-present",
            f"{total} check(s) have no verdict row, in {len(short)} response(s): every check "
            "of a response's checklist needs a row (verdict null when the judge could not "
            f"grade it); the first {min(total, LISTED)} follow",
        )
        missing = _missing_details(columns, keys, group, key_codes, checklists, short)
        raise ValidationError([summary, *missing])


def _missing_details(
    columns: _Columns,
    keys: Sequence[str],
    group: IntArray,
    key_codes: Sequence[IntArray],
    checklists: Mapping[str, Checklist],
    short: IntArray,
) -> list[ErrorDetail]:
    """The first few missing (response, check) pairs, by name."""
    details: list[ErrorDetail] = []
    check_codes, check_ids = columns.codes("check_id")
    for g in short:
        names = {k: columns.codes(k)[1][codes[g]] for k, codes in zip(keys, key_codes, strict=True)}
        present = set(check_ids[check_codes[group == g]])
        where = ", ".join(f"{k} {named(v)}" for k, v in names.items())
        for check in checklists[names["question_id"]].checks:
            if check.id not in present:
                details.append(
                    ErrorDetail(
                        "check_id", "verdict-present", f"no verdict row ({where})", check.id
                    )
                )
                if len(details) == LISTED:
                    return details
    return details


def _verdict_codes(columns: _Columns) -> IntArray:
    codes, uniques = columns.codes("verdict")
    lookup = {v.value: i for i, v in enumerate(Verdict)}
    mapped = []
    for value in uniques:
        key = value.value if isinstance(value, Verdict) else value
        if key not in lookup:
            allowed = ", ".join(lookup)
            raise _row_error(
                "verdict", "verdict-value", f"unknown verdict; expected {allowed} or null", value
            )
        mapped.append(lookup[key])
    table = np.array([*mapped, _UNSCORED], dtype=np.int64)
    return table[codes]  # code -1 (null) picks the last entry: unscored


def _check_duplicates(
    columns: _Columns, keys: Sequence[str], group: IntArray, n_groups: int
) -> None:
    """Refuse two verdict rows for the same response and check (they would count twice)."""
    checks, uniques = columns.codes("check_id")
    width = max(len(uniques), 1)
    if n_groups * width <= _DENSE_LIMIT:
        pair = group * width + checks
        # A bitmap of the (response, check) pairs seen: a byte per possible pair, where a
        # bincount would write eight, and the rows are distinct iff as many bits are set.
        seen = np.zeros(n_groups * width, dtype=np.bool_)
        seen[pair] = True
        duplicated = int(np.count_nonzero(seen)) < len(pair)
        counts = np.bincount(pair) if duplicated else np.zeros(0, dtype=np.int64)
    else:
        pair, _ = columns.groups([*keys, "check_id"])
        counts = np.bincount(pair)
        duplicated = counts.max(initial=0) > 1
    if duplicated:
        row = int(np.flatnonzero(counts[pair] > 1)[0])
        example = columns.frame.iloc[row][[*keys, "check_id"]].to_dict()
        raise _row_error(
            "check_id", "unique-verdict", "two verdict rows for one response and check", example
        )


def score_table(
    verdicts: pd.DataFrame,
    checklists: Mapping[str, Checklist] | None = None,
    params: ScoringParams | None = None,
    keys: Sequence[str] | None = None,
    *,
    require_all_checks: bool = True,
) -> pd.DataFrame:
    """Per-response scores from verdict rows.

    ``verdicts`` has the ``keys`` columns (default: those of ``RESPONSE_KEYS`` present),
    ``check_id``, ``verdict`` (a verdict string or null for unscored) and either ``tier`` or
    ``checklists`` (question id -> checklist) to look tiers up. Returns one row per response:
    the keys, ``gamut``, one column per tier (NaN where the tier has no scored check) and
    the ``COUNT_COLUMNS``. Numbers equal ``score_response``'s exactly, including its rule
    that a response with a (weighted) tier whose checks are all unscored has no ``gamut``.

    With ``checklists``, every check of a response's checklist needs a row (null verdict
    for unscored), as ``score_response`` demands; ``require_all_checks=False`` scores
    partial tables (for example gold labels of a sample of checks), and then a tier
    "has checks" when the rows give it some. Unknown questions and check ids, duplicate
    rows and missing rows raise one ``ValidationError`` giving the count and the first few.
    """
    params = params or ScoringParams()
    keys = list(keys) if keys is not None else [k for k in RESPONSE_KEYS if k in verdicts.columns]
    columns = _Columns(verdicts)
    group, key_codes = columns.groups(keys)
    out = pd.DataFrame({k: columns.codes(k)[1][c] for k, c in zip(keys, key_codes, strict=True)})
    _check_duplicates(columns, keys, group, len(out))
    cell = (group * len(TIERS) + _tier_codes(columns, checklists)) * len(_VERDICTS)
    counts = np.bincount(cell + _verdict_codes(columns), minlength=len(out) * len(COUNT_COLUMNS))
    counts = counts.reshape(len(out), len(TIERS), len(_VERDICTS))
    if checklists is not None and require_all_checks and "tier" not in verdicts.columns:
        _check_complete(columns, keys, group, key_codes, checklists, counts.sum(axis=(1, 2)))
    tier_scores = _tier_scores(counts, params)
    out["gamut"] = np.where(_void(counts, tier_scores, params), np.nan, _gamut(tier_scores, params))
    for i, tier in enumerate(TIERS):
        out[tier.value] = tier_scores[:, i]
    flat = counts.reshape(len(out), -1)
    for j, name in enumerate(COUNT_COLUMNS):
        out[name] = flat[:, j]
    return out


def _void(
    counts: IntArray, tier_scores: npt.NDArray[np.float64], params: ScoringParams
) -> npt.NDArray[np.bool_]:
    """Responses with no Gamut score: a weighted tier has checks but none scored.

    A tier score is NaN exactly when the tier has no scored check (|mu| > 0), so such a
    tier "has checks" when it has unscored ones.
    """
    weighted = np.array([params.weights[t] > 0 for t in TIERS])
    ungraded = np.isnan(tier_scores) & (counts[:, :, _UNSCORED] > 0)
    return np.asarray((ungraded & weighted).any(axis=1))


def _tier_scores(counts: IntArray, params: ScoringParams) -> npt.NDArray[np.float64]:
    """T per response and tier, NaN where the tier has no scored check."""
    m, p, s, c = (counts[:, :, k].astype(np.float64) for k in range(4))
    # Same operations, same order, as ``tier_score`` so results are bit-identical.
    numerator = m + params.lam * p + params.mu * c
    denominator = m + p + s + abs(params.mu) * c
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, numerator / denominator, np.nan)


def _gamut(tier_scores: npt.NDArray[np.float64], params: ScoringParams) -> npt.NDArray[np.float64]:
    numerator = np.zeros(len(tier_scores))
    total = np.zeros(len(tier_scores))
    for i, tier in enumerate(TIERS):
        present = ~np.isnan(tier_scores[:, i])
        weight = params.weights[tier]
        numerator = numerator + np.where(present, weight * np.nan_to_num(tier_scores[:, i]), 0.0)
        total = total + np.where(present, weight, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, numerator / total, np.nan)


def summarise_scores(scores: pd.DataFrame, by: Sequence[str] | None = None) -> pd.DataFrame:
    """Per-(model, setting, judge) means of a ``score_table`` result.

    ``gamut`` and tier columns are means over the responses that have a value. Per row:
    ``responses`` (all), ``scored`` (those with a Gamut score: the ones averaged),
    ``unscored`` (those without one), ``unscored_rate`` (the share of all checks the judge
    could not grade) and, when ``model`` and ``question_id`` are columns,
    ``missing_questions``: how many questions some other model of the same setting and
    judge has a Gamut score for and this row has not (0: the comparison is paired).
    """
    by = list(by) if by is not None else [k for k in RESPONSE_KEYS[1:] if k in scores.columns]
    unscored = [c for c in COUNT_COLUMNS if c.endswith(".unscored")]
    frame = scores.assign(
        _unscored=scores[unscored].sum(axis=1), _checks=scores[list(COUNT_COLUMNS)].sum(axis=1)
    )
    grouped = frame.groupby(by, sort=True, observed=True, dropna=False)
    out = grouped[["gamut", *(t.value for t in TIERS)]].mean()
    out.insert(0, "responses", grouped.size())
    out.insert(1, "scored", grouped["gamut"].count())
    out.insert(2, "unscored", out["responses"] - out["scored"])
    totals = grouped[["_unscored", "_checks"]].sum()
    out["unscored_rate"] = totals["_unscored"] / totals["_checks"].where(totals["_checks"] > 0)
    out = out.reset_index()
    if "model" in by and "question_id" in scores.columns:
        out["missing_questions"] = _missing_questions(scores, by, out)
    return out


def _missing_questions(scores: pd.DataFrame, by: list[str], out: pd.DataFrame) -> pd.Series:
    """Per summary row: questions scored for some model of its peer group, not for it.

    Its own scored questions are a subset of its peer group's union, so the difference of
    the two distinct counts is the size of the set difference.
    """
    scored = scores.loc[scores["gamut"].notna(), [*by, "question_id"]]
    peers = [k for k in by if k != "model"]
    keys = [k for k in RESPONSE_KEYS if k in scores.columns]
    if sorted([*by, "question_id"]) == sorted(keys):
        own_counts = out["scored"].to_numpy(dtype=np.int64)  # one row per question already
    else:
        own = scored.groupby(by, observed=True, dropna=False)["question_id"].nunique()
        own_counts = own.reindex(out.set_index(by).index).fillna(0).to_numpy(dtype=np.int64)
    if peers:
        union = scored.groupby(peers, observed=True, dropna=False)["question_id"].nunique()
        union_index = out.set_index(peers).index
        union_counts = union.reindex(union_index).fillna(0).to_numpy(dtype=np.int64)
    else:
        union_counts = np.full(len(out), scored["question_id"].nunique(), dtype=np.int64)
    return pd.Series(union_counts - own_counts, index=out.index, dtype=np.int64)
