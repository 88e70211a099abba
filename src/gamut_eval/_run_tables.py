"""A finished run folder as standard tables: :func:`load_run`.

``gamut run`` writes ``responses.jsonl`` (the answers), ``verdicts.jsonl`` (one row per
answer x check x judge) and ``scores.jsonl`` (one row per answer x judge); this reads all
three into pandas DataFrames in one call (polars on request, when it is installed), with
the columns the files' rows have, and adds the run's checks (one row per question and
check: tier, kind, text) from its dataset, whose tier and kind the verdicts carry too.
Score rows are flattened the way ``score_table`` names its columns: ``answer_critical``,
``valuable``, ``context`` (tier scores) and ``answer_critical.meets`` etc. (verdict counts
per tier).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gamut_eval._verdict_table import read_verdict_table
from gamut_eval.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

    from gamut_eval.dataset import Dataset

_FILES = {"answers": "responses.jsonl", "verdicts": "verdicts.jsonl", "scores": "scores.jsonl"}


@dataclass(frozen=True)
class RunTables:
    """The answers, verdicts and scores of one run folder."""

    path: Path
    """The run folder (for an ``hf://`` run, its copy in the Hub cache)."""
    answers: pd.DataFrame
    """``responses.jsonl``: ``question_id``, ``model``, ``setting``, ``response``, ..."""
    verdicts: pd.DataFrame
    """``verdicts.jsonl``: the keys, ``judge``, ``check_id``, ``verdict``, ``status``, ..."""
    scores: pd.DataFrame
    """``scores.jsonl`` flattened: the keys, ``judge``, ``gamut``, tier scores, counts."""
    manifest: dict[str, Any] = field(default_factory=dict)
    """``run.json`` (models, judges, scoring parameters, usage), or {} when absent."""
    checks: pd.DataFrame | None = None
    """The run's checks, one row per question and check: ``question_id``, ``check_id``,
    ``tier``, ``kind``, ``text``, ``item``, ``secondary`` (from the dataset's checklists,
    as the run scored them). No rows when the dataset is not found (name it with
    ``load_run(..., dataset=...)``)."""

    def to_polars(self) -> PolarsRunTables:
        """The same tables as polars DataFrames (needs ``pip install polars``)."""
        try:
            import polars as pl
        except ImportError:
            raise InputError("polars is not installed: pip install polars") from None
        return PolarsRunTables(
            path=self.path,
            answers=pl.from_pandas(self.answers),
            verdicts=pl.from_pandas(self.verdicts),
            scores=pl.from_pandas(self.scores),
            manifest=self.manifest,
            checks=pl.from_pandas(self.checks if self.checks is not None else _checks(None)),
        )


@dataclass(frozen=True)
class PolarsRunTables:
    """:class:`RunTables` with polars DataFrames."""

    path: Path
    answers: Any
    verdicts: Any
    scores: Any
    manifest: dict[str, Any]
    checks: Any


def _read_jsonl(path: Path) -> pd.DataFrame:
    """A JSONL file as a DataFrame: pyarrow's reader (fast at millions of rows), or the
    project's strict line reader when pyarrow cannot infer one type per field."""
    import pandas as pd
    import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type stubs
    import pyarrow.json as pj  # type: ignore[import-untyped]

    if path.stat().st_size == 0:
        return pd.DataFrame()
    try:
        frame: pd.DataFrame = pj.read_json(path).to_pandas()
        return frame
    except (pa.ArrowException, OSError):
        from gamut_eval._files import read_jsonl

        return pd.DataFrame([row for _, row in read_jsonl(path)])


def _flat_scores(frame: pd.DataFrame) -> pd.DataFrame:
    """Score rows with ``tiers`` and ``counts`` spread into ``score_table``'s columns: one
    per tier (null where a row has no score for it) and one per ``<tier>.<verdict>`` count
    (0 where a row has none), whatever the rows leave out."""
    from gamut_eval.rubric import TIERS
    from gamut_eval.scoring import COUNT_COLUMNS

    nested = [c for c in ("tiers", "counts") if c in frame.columns]
    if not nested or frame.empty:
        return frame
    out = frame.drop(columns=nested)
    if "tiers" in nested:
        tiers = [row if isinstance(row, dict) else {} for row in frame["tiers"]]
        for tier in TIERS:
            out[tier.value] = [row.get(tier.value) for row in tiers]
            out[tier.value] = out[tier.value].astype("float64")
    if "counts" in nested:
        counts = [row if isinstance(row, dict) else {} for row in frame["counts"]]
        for name in COUNT_COLUMNS:
            tier_name, verdict = name.split(".")
            out[name] = [int((row.get(tier_name) or {}).get(verdict) or 0) for row in counts]
    return out


_CHECK_COLUMNS = ("question_id", "check_id", "tier", "kind", "text", "item", "secondary")


def _checks(dataset: Dataset | None) -> pd.DataFrame:
    """One row per question and check of ``dataset`` (none without one); ids, tier and
    kind categorical, as the verdict table's keys are."""
    import pandas as pd

    rows = [
        (question, c.id, c.tier.value, c.kind.value, c.text, c.item, c.secondary)
        for question, checklist in (dataset.checklists().items() if dataset else ())
        for c in checklist.checks
    ]
    frame = pd.DataFrame(rows, columns=list(_CHECK_COLUMNS))
    for column in ("question_id", "check_id", "tier", "kind", "item"):
        frame[column] = frame[column].astype("category")
    frame["secondary"] = frame["secondary"].astype(bool)
    return frame


def _with_checks(verdicts: pd.DataFrame, checks: pd.DataFrame) -> pd.DataFrame:
    """The verdict rows with their check's ``tier`` and ``kind`` (null for a check the
    dataset does not have), row for row."""
    if verdicts.empty or not {"question_id", "check_id"} <= set(verdicts.columns):
        return verdicts
    keys = ["question_id", "check_id"]
    index = checks.set_index(keys)[["tier", "kind"]]
    where = index.reindex(
        list(
            zip(verdicts["question_id"].astype(str), verdicts["check_id"].astype(str), strict=True)
        )
    )
    out = verdicts.copy()
    for column in ("tier", "kind"):
        if column not in out.columns:
            out[column] = where[column].to_numpy()
            out[column] = out[column].astype("category")
    return out


def _run_dataset(manifest: dict[str, Any], dataset: str | Path | None) -> Dataset | None:
    """The dataset named, else the one ``run.json`` records when it is still there."""
    from gamut_eval.data import resolve_dataset_path
    from gamut_eval.dataset import load_dataset

    if dataset is not None:
        return load_dataset(resolve_dataset_path(dataset))
    recorded = manifest.get("dataset")
    if not isinstance(recorded, str) or not recorded or not Path(recorded).exists():
        return None
    return load_dataset(recorded)


def load_run(path: str | Path, *, dataset: str | Path | None = None) -> RunTables:
    """The answers, verdicts, scores and checks of the run folder ``path`` (or
    ``hf://datasets/OWNER/NAME/PATH`` on the Hugging Face Hub, fetched into the Hub cache).

    The checks, and the verdicts' ``tier`` and ``kind``, come from the run's dataset:
    ``dataset`` (a path, ``sample`` or ``hf://...``), else the one ``run.json`` records when
    it is still there (else no checks, and null tiers and kinds). A missing or unreadable
    file raises ``InputError`` naming it.
    """
    if isinstance(path, str) and path.startswith("hf://"):
        from gamut_eval.hub import download

        folder = download(path)
    else:
        folder = Path(path)
    if not folder.is_dir():
        what = "is a file, not a run folder" if folder.exists() else "no such run folder"
        raise InputError(f"{folder}: {what} (give the folder `gamut run` or `gamut demo` wrote)")
    tables: dict[str, pd.DataFrame] = {}
    for name, file in _FILES.items():
        where = folder / file
        if not where.is_file():
            raise InputError(f"{where}: missing, so {folder} is not a finished run folder")
        if name == "verdicts":
            tables[name] = read_verdict_table(where, fields=None).frame
        else:
            tables[name] = _read_jsonl(where)
    manifest: dict[str, Any] = {}
    if (folder / "run.json").is_file():
        try:
            manifest = json.loads((folder / "run.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(f"{folder / 'run.json'}: not readable JSON ({exc})") from None
    checks = _checks(_run_dataset(manifest, dataset))
    return RunTables(
        path=folder,
        answers=tables["answers"],
        verdicts=_with_checks(tables["verdicts"], checks),
        scores=_flat_scores(tables["scores"]),
        manifest=manifest,
        checks=checks,
    )
