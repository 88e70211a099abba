"""What a run stored (RUN_DIR), read for the analyses, and its scores as a dense cube.

Nothing is recomputed here:

    scores.jsonl    per-response scores (required): every score-level analysis
    verdicts.jsonl  per-check verdicts: only per-check agreement between judges needs it
    run.json        scoring parameters, the judges in the order given, the dataset path
    the dataset     domain and popularity of each question, and the question texts

The JSONL files are read with pyarrow's multithreaded reader and an explicit schema (the
fields not needed, such as judge explanations, are skipped while parsing), because at paper
scale verdicts.jsonl has about 4.6 million lines; a line that does not parse is reported by
number, as everywhere else.

The per-response scores are then held as dense arrays indexed by setting, judge, model and
question (``ScoreCube``). A paper-scale run has 2 x 3 x 14 x 1,813 = 152,292 judged
responses: small enough to hold densely, and dense arrays make every analysis a reduction
over an axis (a model's mean is a mean over the question axis; a judge gap is a difference
along the judge axis) instead of a join of tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type stubs
import pyarrow.json as pj  # type: ignore[import-untyped]  # pyarrow ships no type stubs
import pydantic

from gamut_eval._files import read_jsonl, read_mapping
from gamut_eval._verdict_table import VerdictTable, read_verdict_table
from gamut_eval.dataset import Dataset, load_dataset
from gamut_eval.errors import ErrorDetail, InputError, ValidationError
from gamut_eval.rubric import TIERS, pydantic_details
from gamut_eval.scoring import ScoringParams, Verdict

_KEYS = ("question_id", "model", "setting", "judge")
VERDICT_COLUMNS: tuple[str, ...] = (*(verdict.value for verdict in Verdict), "unscored")
"""The verdict counts of a score row, and the last axis of ``ScoreCube.counts``."""

_SCORES_SCHEMA = pa.schema(
    [
        *((k, pa.string()) for k in _KEYS),
        ("gamut", pa.float64()),
        ("tiers", pa.struct([(t.value, pa.float64()) for t in TIERS])),
        (
            "counts",
            pa.struct(
                [(t.value, pa.struct([(v, pa.int64()) for v in VERDICT_COLUMNS])) for t in TIERS]
            ),
        ),
    ]
)


@dataclass(frozen=True)
class RunData:
    """The stored results a report is built from (all in memory, all validated)."""

    scores: pd.DataFrame
    """One row per judged response: keys, ``gamut``, tier columns, ``<tier>.<verdict>``."""
    verdicts: pd.DataFrame | None = None
    """Verdict rows (keys, ``check_id``, ``verdict``), or None when not loaded."""
    explanations: pa.ChunkedArray | None = None
    """The judges' explanations, row for row with ``verdicts`` (loaded for the report's
    drill-down only), kept in Arrow."""
    params: ScoringParams = field(default_factory=ScoringParams)
    """The scoring parameters the scores were computed with."""
    dataset: Dataset | None = None
    """The run's dataset, for breakdowns and question diversity (None: not available)."""
    judges: tuple[str, ...] = ()
    """Judges in the order the run was given them; the first is the primary judge."""
    run_dir: Path | None = None
    notes: tuple[str, ...] = ()
    """What could not be loaded and what the report leaves out because of it."""


def read_table(path: Path, schema: pa.Schema) -> pa.Table:
    """A JSONL file as an Arrow table of ``schema``'s fields (others skipped)."""
    if path.stat().st_size == 0:
        return schema.empty_table()
    options = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    try:
        return pj.read_json(path, parse_options=options)
    except pa.ArrowException as exc:
        for _ in read_jsonl(path):  # names the first line that does not parse, if any
            pass
        raise ValidationError(
            [ErrorDetail("$", "jsonl-fields", f"a row does not fit the expected fields: {exc}")
             .in_file(path)]
        ) from None  # fmt: skip


def _flatten(table: pa.Table) -> pa.Table:
    while any(pa.types.is_struct(f.type) for f in table.schema):
        table = table.flatten()
    return table


def read_scores(path: Path) -> pd.DataFrame:
    """scores.jsonl as a flat table with ``score_table``'s column names."""
    table = _flatten(read_table(path, _SCORES_SCHEMA))
    names = [n.removeprefix("tiers.").removeprefix("counts.") for n in table.column_names]
    frame: pd.DataFrame = table.rename_columns(names).to_pandas()
    for column in frame.columns:
        if "." in column:
            frame[column] = frame[column].fillna(0).astype("int64")
    missing = [k for k in ("question_id", "model") if frame[k].isna().any()]
    if missing:
        raise ValidationError(
            [ErrorDetail(missing[0], "required", "a score row has no value here").in_file(path)]
        )
    return frame


def _run_config(run_dir: Path, notes: list[str]) -> dict[str, Any]:
    path = run_dir / "run.json"
    if not path.is_file():
        notes.append("run.json is missing: default scoring parameters are assumed")
        return {}
    data = read_mapping(path, "run-object", "expected an object")
    notes += _filled_notes(data.get("filled_missing") or [])
    notes += _settings_notes(data)
    return data


def _settings_notes(data: dict[str, Any]) -> list[str]:
    """How the answers were generated and the judges asked, as run.json records it."""
    notes = []
    generation = data.get("generation")
    if isinstance(generation, dict):
        shown = ", ".join(f"{k} {v}" for k, v in generation.items() if v not in (None, {}, ""))
        notes.append(f"answers generated with {shown or 'the providers defaults'}")
    requests = data.get("requests") if isinstance(data.get("requests"), dict) else {}
    for judge in data.get("judges") or []:
        if not isinstance(judge, dict):
            continue
        name = judge.get("judge")
        shape = requests.get(name) if isinstance(requests, dict) else None
        sent = f", verdict schema as {shape.get('structured')}" if isinstance(shape, dict) else ""
        notes.append(
            f"judge {name}: temperature {judge.get('temperature')}, max tokens "
            f"{judge.get('max_tokens')}{sent}"
        )
    return notes


def _filled_notes(filled: list[Any]) -> list[str]:
    """The answers a run filled as empty ones (``gamut run --fill-missing``), said once."""
    if not filled:
        return []
    named = [
        f"{a.get('question_id')} / {a.get('model')} / {a.get('setting')}"
        for a in filled[:5]
        if isinstance(a, dict)
    ]
    more = f" and {len(filled) - 5} more" if len(filled) > 5 else ""
    return [
        f"{len(filled)} missing answer(s) were scored as empty answers, as the run was "
        "told to (fill missing): "
        f"{'; '.join(named)}{more}"
    ]


def _params(config: dict[str, Any], run_dir: Path) -> ScoringParams:
    try:
        return ScoringParams.model_validate(config.get("scoring") or {})
    except pydantic.ValidationError as exc:
        details = pydantic_details(exc)
        raise ValidationError(
            [d.in_file(run_dir / "run.json", "scoring") for d in details]
        ) from None


def _judge_order(config: dict[str, Any]) -> tuple[str, ...]:
    judges = config.get("judges") or []
    names = [j.get("judge") if isinstance(j, dict) else j for j in judges]
    return tuple(str(n) for n in names if n)


def _dataset(path: Path | None, explicit: bool, notes: list[str]) -> Dataset | None:
    if path is None:
        notes.append("no dataset is recorded: breakdowns and question diversity are left out")
        return None
    if not path.is_file() and not explicit:
        notes.append(
            f"the run's dataset {path} is not there: breakdowns and question diversity "
            "are left out (name the dataset to include them)"
        )
        return None
    return load_dataset(path)


def load_run_data(
    run_dir: str | Path,
    dataset: str | Path | None = None,
    verdicts: bool | None = None,
    *,
    explanations: bool = False,
) -> RunData:
    """Load a run folder written by ``gamut run``.

    ``dataset`` overrides the dataset path recorded in run.json. ``verdicts``: whether to
    read verdicts.jsonl (default: only when the scores have two or more judges, the only
    case that needs it). ``explanations``: read the verdicts with the judges' explanations
    (for the HTML report's drill-down; implies ``verdicts``), in the same single pass.
    Bad input raises ``InputError`` naming the file.
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        what = "is a file, not a run folder" if run_dir.exists() else "no such run folder"
        raise InputError(f"{run_dir}: {what} (give the folder `gamut run` or `gamut demo` wrote)")
    scores_path = run_dir / "scores.jsonl"
    if not scores_path.is_file():
        raise InputError(
            f"{run_dir}: no scores.jsonl, so this is not a finished run folder "
            "(`gamut run` writes it after judging; a run over its unscored-rate limit writes none)"
        )
    notes: list[str] = []
    config = _run_config(run_dir, notes)
    scores = read_scores(scores_path)
    if scores.empty:
        raise InputError(f"{scores_path}: no scores to report on")
    judges = _judge_order(config)
    want_verdicts = verdicts if verdicts is not None else _judge_count(scores) >= 2
    table = _verdicts(run_dir, want_verdicts or explanations, explanations, notes)
    return RunData(
        scores=scores,
        verdicts=None if table is None else table.frame,
        explanations=None if table is None else table.explanations,
        params=_params(config, run_dir),
        dataset=_dataset(_dataset_path(config, dataset), dataset is not None, notes),
        judges=judges,
        run_dir=run_dir,
        notes=tuple(notes),
    )


def _judge_count(scores: pd.DataFrame) -> int:
    return int(scores["judge"].nunique()) if "judge" in scores.columns else 1


def _dataset_path(config: dict[str, Any], override: str | Path | None) -> Path | None:
    if override is not None:
        return Path(override)
    recorded = config.get("dataset")
    return Path(recorded) if isinstance(recorded, str) and recorded else None


def _verdicts(
    run_dir: Path, wanted: bool, explanations: bool, notes: list[str]
) -> VerdictTable | None:
    if not wanted:
        return None
    path = run_dir / "verdicts.jsonl"
    if not path.is_file():
        notes.append("verdicts.jsonl is missing: per-check agreement between judges is left out")
        return None
    return read_verdict_table(path, explanations=explanations)


def question_groups(
    dataset: Dataset | None, questions: Sequence[str]
) -> dict[str, list[str | None]]:
    """Domain and popularity of each question (in ``questions`` order), for breakdowns;
    a dimension no question has is left out."""
    if dataset is None:
        return {}
    records = dataset.by_id()
    groups: dict[str, list[str | None]] = {}
    for dimension in ("domain", "popularity"):
        values = [getattr(records[q], dimension) if q in records else None for q in questions]
        if any(values):
            groups[dimension] = values
    return groups


FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

SETTING_ORDER: tuple[str, ...] = ("multimodal", "text_only")
"""Settings listed first, in this order; any others follow alphabetically."""


@dataclass(frozen=True)
class ScoreCube:
    """Scores of every judged response of a run; NaN (or 0 counts) where there is none."""

    settings: tuple[str, ...]
    judges: tuple[str, ...]
    models: tuple[str, ...]
    questions: tuple[str, ...]
    gamut: FloatArray
    """``(S, J, M, Q)``: the Gamut score; NaN without a response or without a scored check."""
    tiers: FloatArray
    """``(S, J, M, Q, 3)``: tier scores in ``TIERS`` order; NaN where a tier has none."""
    counts: IntArray
    """``(S, J, M, Q, 5)``: checks per verdict (``VERDICT_COLUMNS``), summed over tiers."""
    present: BoolArray
    """``(S, J, M, Q)``: whether the run has this response."""

    def setting_index(self, name: str) -> int | None:
        return self.settings.index(name) if name in self.settings else None


def _ordered_settings(values: Sequence[str]) -> tuple[str, ...]:
    known = [s for s in SETTING_ORDER if s in values]
    return (*known, *sorted(set(values) - set(known)))


def _ordered_judges(values: Sequence[str], preferred: Sequence[str]) -> tuple[str, ...]:
    """The run's judge order (the first is the primary judge), then any others sorted."""
    first = [j for j in dict.fromkeys(preferred) if j in values]
    return (*first, *sorted(set(values) - set(first)))


def _key_column(scores: pd.DataFrame, name: str, default: str) -> pd.Series:
    if name not in scores.columns:
        return pd.Series(default, index=scores.index)
    column = scores[name]
    if column.isna().any():
        raise ValidationError(
            [ErrorDetail(name, "required", "a score row has no value here", None)]
        )
    return column.astype(str)


def category_codes(column: pd.Series, categories: Sequence[str]) -> IntArray:
    """Each value's index in ``categories``; -1 for null or a value not among them."""
    return np.asarray(pd.Categorical(column, categories=list(categories)).codes, dtype=np.int64)


def _verdict_counts(scores: pd.DataFrame) -> IntArray:
    """``(rows, 5)`` verdict counts summed over tiers; absent count columns count 0."""
    out = np.zeros((len(scores), len(VERDICT_COLUMNS)), dtype=np.int64)
    for k, verdict in enumerate(VERDICT_COLUMNS):
        for tier in TIERS:
            column = f"{tier.value}.{verdict}"
            if column in scores.columns:
                out[:, k] += scores[column].fillna(0).to_numpy(dtype=np.int64)
    return out


def _float_column(scores: pd.DataFrame, name: str) -> FloatArray:
    if name not in scores.columns:
        return np.full(len(scores), np.nan)
    return np.asarray(pd.to_numeric(scores[name], errors="coerce"), dtype=np.float64)


def cube_from_scores(scores: pd.DataFrame, judge_order: Sequence[str] = ()) -> ScoreCube:
    """A ``ScoreCube`` from a score table (``score_table``'s columns, or scores.jsonl
    flattened): ``question_id``, ``model``, ``setting``, ``judge``, ``gamut``, the tier
    columns and the ``<tier>.<verdict>`` counts. A missing ``setting`` or ``judge`` column
    means a single one. Two rows for one response are an error.
    """
    keys = {
        "setting": _key_column(scores, "setting", "multimodal"),
        "judge": _key_column(scores, "judge", "judge"),
        "model": _key_column(scores, "model", "model"),
        "question_id": _key_column(scores, "question_id", "question"),
    }
    axes = (
        _ordered_settings(keys["setting"].unique().tolist()),
        _ordered_judges(keys["judge"].unique().tolist(), judge_order),
        tuple(sorted(keys["model"].unique().tolist())),
        tuple(sorted(keys["question_id"].unique().tolist())),
    )
    shape = tuple(len(axis) for axis in axes)
    flat = np.zeros(len(scores), dtype=np.int64)
    for column, axis in zip(keys.values(), axes, strict=True):
        flat = flat * len(axis) + category_codes(column, axis)
    _refuse_duplicates(scores, flat)
    size = int(np.prod(shape))
    gamut = np.full(size, np.nan)
    gamut[flat] = _float_column(scores, "gamut")
    tiers = np.full((size, len(TIERS)), np.nan)
    for i, tier in enumerate(TIERS):
        tiers[flat, i] = _float_column(scores, tier.value)
    counts = np.zeros((size, len(VERDICT_COLUMNS)), dtype=np.int64)
    counts[flat] = _verdict_counts(scores)
    present = np.zeros(size, dtype=bool)
    present[flat] = True
    return ScoreCube(
        *axes,
        gamut=gamut.reshape(shape),
        tiers=tiers.reshape(*shape, len(TIERS)),
        counts=counts.reshape(*shape, len(VERDICT_COLUMNS)),
        present=present.reshape(shape),
    )


def _refuse_duplicates(scores: pd.DataFrame, flat: IntArray) -> None:
    """Two score rows for one response would silently overwrite each other."""
    _, first, counts = np.unique(flat, return_index=True, return_counts=True)
    if len(counts) and counts.max() > 1:
        row = int(first[np.argmax(counts > 1)])
        example = {k: scores.iloc[row].get(k) for k in _KEYS}
        raise ValidationError(
            [ErrorDetail("$", "unique-score", "two score rows for one response", example)]
        )
