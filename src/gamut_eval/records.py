"""The files a run writes, as typed records: score rows and the run manifest; and a
finished run folder read back as standard tables (:func:`load_run`).

Verdict rows (``gamut_eval.judge.VerdictRow``) come from the judge; these two come from a
run. ``gamut schema --kind verdicts|scores|run`` prints the JSON Schema of each, so other
tools can read the files without reading this code.

``gamut run`` writes ``responses.jsonl`` (the answers), ``verdicts.jsonl`` (one row per
answer x check x judge) and ``scores.jsonl`` (one row per answer x judge); ``load_run``
reads all three into pandas DataFrames in one call (polars on request, when it is
installed), with the columns the files' rows have, and adds the run's checks (one row per
question and check: tier, kind, text) from its dataset, whose tier and kind the verdicts
carry too. Score rows are flattened the way ``score_table`` names its columns:
``answer_critical``, ``valuable``, ``context`` (tier scores) and ``answer_critical.meets``
etc. (verdict counts per tier).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from gamut_eval._usage import Usage
from gamut_eval._verdict_table import read_verdict_table
from gamut_eval.errors import InputError
from gamut_eval.rubric import TIERS, Tier
from gamut_eval.scoring import ScoringParams, VerdictName

if TYPE_CHECKING:
    import pandas as pd

    from gamut_eval.dataset import Dataset

__all__ = [
    "FilledAnswer",
    "PolarsRunTables",
    "RunIdentity",
    "RunManifest",
    "RunTables",
    "ScoreRow",
    "load_run",
    "score_rows",
]

_RECORD = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class ScoreRow(BaseModel):
    """The score of one answer by one judge (a row of ``scores.jsonl``)."""

    model_config = _RECORD

    question_id: str
    """Id of the dataset record."""
    model: str | None = None
    """The model that gave the answer."""
    setting: Literal["multimodal", "text_only"] | None = None
    """The setting the answer was given in."""
    judge: str | None = None
    """The judge whose verdicts were scored."""
    gamut: float | None
    """The Gamut score in [-1, 1] (shown x100); ``null`` when the answer has no score
    because too few of its checks could be graded (docs/method.md, unscored answers)."""
    tiers: dict[Tier, float]
    """Tier score per tier with at least one scored check."""
    counts: dict[Tier, dict[VerdictName | Literal["unscored"], int]]
    """Verdict counts per tier that has checks, unscored included."""


class RunIdentity(BaseModel):
    """What makes two runs the same run: a rerun with the same identity continues the run
    in its folder; a different one is refused there (``--overwrite`` replaces it)."""

    model_config = _RECORD

    dataset_sha256: str
    """SHA-256 of the dataset file's bytes."""
    responses_sha256: str | None
    """SHA-256 of the given answers file's bytes; ``null`` when answers are generated."""
    models: list[str]
    """Models that generate answers (empty when answers are given)."""
    setting: Literal["multimodal", "text_only", "both"]
    """The setting(s) run."""
    judges: list[dict[str, Any]]
    """Per judge, the settings that can change a verdict (model, temperature, max tokens,
    structured output, image shown)."""
    prompt_version: str
    """Version of the judge prompt."""
    scoring: ScoringParams
    """Verdict values and tier weights."""
    fill_missing: bool = False
    """Whether missing answers are scored as empty answers."""
    generation: dict[str, Any] = {}
    """The generation settings that differ from the defaults (``GenerationSettings``:
    temperature, max tokens, system message, model arguments...); ``{}`` for the defaults
    or given answers."""
    calibration: dict[str, Any] = {}
    """With calibrated scores: what the calibration sample is drawn by (``calibrated_with``,
    the strong judge or verdict file, and ``seed``); ``{}`` without. The fraction is not
    part of it: a rerun with a larger one adds questions to the same run."""

    def differences(self, other: RunIdentity) -> list[str]:
        """The fields in which ``other`` differs from this identity."""
        mine, theirs = self.model_dump(mode="json"), other.model_dump(mode="json")
        out = []
        for name in mine:
            if mine[name] == theirs.get(name):
                continue
            if name == "calibration":  # say which: its two values are short
                name = (
                    f"calibration: {_sampled_by(mine[name])} recorded, "
                    f"{_sampled_by(theirs.get(name))} asked"
                )
            out.append(name)
        return out


def _sampled_by(calibration: Any) -> str:
    """A run identity's ``calibration`` in a few words."""
    if not isinstance(calibration, dict) or not calibration:
        return "none"
    seed = calibration.get("seed")
    drawn = f" seed {seed}" if seed is not None else ""
    return f"{calibration.get('calibrated_with')}{drawn}"


class FilledAnswer(BaseModel):
    """An answer that was missing and was scored as an empty answer (``--fill-missing``)."""

    model_config = _RECORD

    question_id: str
    model: str
    setting: str


class RunManifest(BaseModel):
    """What a run folder holds and how it was made (``run.json``)."""

    model_config = _RECORD

    identity: RunIdentity
    """What makes this run this run (see ``RunIdentity``)."""
    gamut_eval_version: str
    """The version of gamut-eval that made the run."""
    python: str
    """The Python version."""
    started_at: str
    """UTC start time, ISO 8601."""
    dataset: str
    """Path of the dataset file."""
    questions: int
    """Questions in the dataset."""
    models: list[str]
    """Models that generated answers (empty when answers were given)."""
    responses_from: str
    """The answers file given, or ``generated``."""
    setting: Literal["multimodal", "text_only", "both"]
    """The setting(s) run."""
    prompt_version: str
    """Version of the judge prompt (part of every verdict's key)."""
    judges: list[dict[str, Any]]
    """The settings of each judge (``JudgeSettings``), as used."""
    scoring: ScoringParams
    """Verdict values and tier weights used for the scores."""
    requests: dict[str, dict[str, Any]] = {}
    """Per judge, how its requests were written as its probe found them (the parameter
    names, whether a temperature is sent, how the verdict schema is asked for, and each
    correction a refusal led to)."""
    generation: dict[str, Any] | None = None
    """The generation settings used (``GenerationSettings``, model arguments that look like
    credentials redacted); ``null`` when the answers were given."""
    model_usage: dict[str, Usage] = {}
    """Per answering model, the tokens its answers report, and their estimated cost."""
    judge_usage: dict[str, Usage] = {}
    """Per judge, the tokens its stored verdicts cost (every call, re-asks included), and
    their estimated cost."""
    currency: str | None = None
    """The currency of the costs (from ``--prices``); ``null`` when nothing was priced."""
    filled_missing: list[FilledAnswer] = []
    """Answers that were missing and were scored as empty answers (the model said
    nothing): they count against the model, and are listed here and under the
    leaderboard."""
    calibration: dict[str, Any] | None = None
    """With calibrated scores: ``judge`` (the cheap judge), ``calibrated_with``, ``seed``,
    ``fraction``, ``confidence`` and ``questions``, the calibration sample in draw order
    (drawn before any verdict was seen); ``null`` without."""


def score_rows(scores: pd.DataFrame) -> list[dict[str, Any]]:
    """Score-table rows in ``ScoreRow``'s JSON form (key columns the table has, then
    ``gamut``, ``tiers``, ``counts``)."""
    from gamut_eval.scoring import COUNT_COLUMNS

    keys = [c for c in ("question_id", "model", "setting", "judge") if c in scores.columns]
    out = []
    for record in scores.to_dict(orient="records"):
        row = {k: record[k] for k in keys}
        row["gamut"] = None if math.isnan(record["gamut"]) else record["gamut"]
        row["tiers"] = {t.value: record[t.value] for t in TIERS if not math.isnan(record[t.value])}
        counts: dict[str, dict[str, int]] = {}
        for column in COUNT_COLUMNS:
            tier, verdict = column.split(".")
            counts.setdefault(tier, {})[verdict] = int(record[column])
        row["counts"] = {t: c for t, c in counts.items() if sum(c.values())}
        out.append(row)
    return out


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
