"""The files a run writes, as typed records: score rows and the run manifest.

Verdict rows (``gamut_eval.judge.VerdictRow``) come from the judge; these two come from a
run. ``gamut schema --kind verdicts|scores|run`` prints the JSON Schema of each, so other
tools can read the files without reading this code.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from gamut_eval._usage import Usage
from gamut_eval.judge import VerdictName
from gamut_eval.rubric import TIERS, Tier
from gamut_eval.scoring import ScoringParams

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FilledAnswer", "RunIdentity", "RunManifest", "ScoreRow", "score_rows"]

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
