"""A run's Inspect logs with its scores: ``inspect view RUN_DIR/logs`` shows them.

Every sample of a run's logs carries, per judge, the score ``gamut_eval/gamut_scorer``
would give it (``_score_view.score_parts``): the Gamut and tier scores, an explanation
naming each failed check with its verdict (and each check the judge could not grade as
unscored), and flat, labelled metadata. The scores come from the run's verdict store, the
verdicts ``verdicts.jsonl`` holds: nothing is judged again.

- Generated answers: the eval set's own logs (one per model and setting, the transcripts
  in them) get the scores, written back in place, as ``inspect score`` does.
- Given answers (``--responses``): one log per model and setting is written, holding each
  question as the model would have been asked it (image included), the answer, and the
  scores.

The primary judge's score is named ``gamut_scorer`` (as ``inspect eval gamut_eval/gamut -T
judge=J`` names it); each further judge's ``gamut_scorer:<judge>``. Missing answers filled
as empty (``--fill-missing``) are in no log: ``scores.jsonl`` has them.
"""

from __future__ import annotations

import base64
import hashlib
import math
import mimetypes
import re
import time
import uuid
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gamut_eval.generate._score_view import score_parts
from gamut_eval.judge import NOT_JUDGED, JudgePlan, Store, StoredVerdict, VerdictStore
from gamut_eval.responses import FILLED_KEY
from gamut_eval.rubric import TIERS

if TYPE_CHECKING:
    from inspect_ai.log import EvalLog, EvalSample
    from inspect_ai.scorer import Score

    from gamut_eval.dataset import Dataset
    from gamut_eval.judge import JudgeSettings
    from gamut_eval.responses import ResponseRow
    from gamut_eval.scoring import ScoringParams

__all__ = ["SCORER", "scored_logs", "scorer_name", "write_run_logs"]

SCORER = "gamut_scorer"
_METRIC = "gamut_eval/scored_mean"
_KEYS = ("gamut", *(t.value for t in TIERS))

AnswerKey = tuple[str, str, str]
"""(question id, model, setting)."""


def scorer_name(index: int, judge: str) -> str:
    """The score's name in a sample: the primary judge's is ``gamut_scorer``."""
    return SCORER if index == 0 else f"{SCORER}:{judge}"


def _stored(keys: Sequence[str], found: dict[str, StoredVerdict], judge: str) -> list[Any]:
    unjudged = StoredVerdict("", judge, "", None, "", "unscored", NOT_JUDGED, 0)
    return [found.get(key, unjudged) for key in keys]


def _scores(
    dataset: Dataset,
    answers: Sequence[ResponseRow],
    judges: Sequence[JudgeSettings],
    store: Store,
    params: ScoringParams | None,
) -> dict[AnswerKey, dict[str, Score]]:
    """Every answer's scores, one per judge, from the store."""
    from inspect_ai.scorer import Score

    checklists = dataset.checklists()
    out: dict[AnswerKey, dict[str, Score]] = defaultdict(dict)
    for index, settings in enumerate(judges):
        name = scorer_name(index, settings.judge)
        for planned in JudgePlan(dataset, list(answers), settings, checklists=checklists):
            row = planned.row
            rows = _stored(planned.keys, store.get(planned.keys), settings.judge)
            parts = score_parts(settings.judge, checklists[row.question_id], rows, params)
            out[(row.question_id, row.model, row.setting)][name] = Score(
                value=parts.value,
                answer=row.response,
                explanation=parts.explanation,
                metadata=parts.metadata,
            )
    return out


def _results(samples: Sequence[EvalSample], judges: Sequence[JudgeSettings]) -> Any:
    """Inspect's results block: per score name and key, the mean over the samples that
    have a value (``scored_mean``: NaN, nothing to score, is left out)."""
    from inspect_ai.log import EvalMetric, EvalResults, EvalScore

    scores = []
    for index, settings in enumerate(judges):
        name = scorer_name(index, settings.judge)
        for key in _KEYS:
            values = [
                float(s.scores[name].value[key]) for s in samples if s.scores and name in s.scores
            ]
            finite = [v for v in values if math.isfinite(v)]
            mean = sum(finite) / len(finite) if finite else math.nan
            scores.append(
                EvalScore(
                    name=key if index == 0 else f"{key}:{settings.judge}",
                    scorer=name,
                    scored_samples=len(finite),
                    unscored_samples=len(values) - len(finite),
                    params={"judge": settings.judge},
                    metrics={_METRIC: EvalMetric(name=_METRIC, value=mean)},
                )
            )
    completed = sum(1 for s in samples if s.error is None)
    return EvalResults(total_samples=len(samples), completed_samples=completed, scores=scores)


def _key(sample: EvalSample, model: str, setting: str) -> AnswerKey:
    metadata = sample.metadata or {}
    return (
        str(metadata.get("question_id", sample.id)),
        model,
        str(metadata.get("setting", setting)),
    )


def _score_generated(
    log_dir: Path,
    answers: Sequence[ResponseRow],
    scores: dict[AnswerKey, dict[str, Score]],
    judges: Sequence[JudgeSettings],
) -> list[Path]:
    """Add the scores to the eval set's logs the answers were exported from."""
    from inspect_ai.log import read_eval_log, write_eval_log

    names = sorted({str(r.metadata["inspect_log"]) for r in answers if "inspect_log" in r.metadata})
    written = []
    for name in names:
        path = log_dir / name
        if not path.is_file():  # removed by hand since: its answers are scored all the same
            continue
        log = read_eval_log(str(path))
        setting = str((log.eval.metadata or {}).get("gamut_setting", ""))
        for sample in log.samples or []:
            found = scores.get(_key(sample, log.eval.model, setting))
            if found is not None and sample.error is None:
                sample.scores = dict(found)
        log.results = _results(log.samples or [], judges)
        write_eval_log(log, str(path))
        written.append(path)
    return written


def _image_uri(path: Path) -> str:
    kind = mimetypes.guess_type(path.name)[0] or "image/png"
    return f"data:{kind};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"


def _sample(dataset: Dataset, row: ResponseRow, scores: dict[str, Score]) -> EvalSample:
    """One given answer as an Inspect sample: the question as asked, the answer, scores."""
    from inspect_ai.log import EvalSample
    from inspect_ai.model import (
        ChatMessageAssistant,
        ChatMessageUser,
        ContentImage,
        ContentText,
        ModelOutput,
        ModelUsage,
    )

    record = dataset.by_id()[row.question_id]
    attachments: dict[str, str] = {}
    messages: list[Any] = []
    image = dataset.image_path(record) if row.setting == "multimodal" else None
    if image is None or not image.is_file():  # text-only, or an image the answers did without
        messages.append(ChatMessageUser(content=record.question_for(row.setting)))
    else:
        uri = _image_uri(image)
        digest = hashlib.md5(uri.encode("ascii"), usedforsecurity=False).hexdigest()
        attachments[digest] = uri
        content = [ContentImage(image=f"attachment://{digest}"), ContentText(text=record.question)]
        messages.append(ChatMessageUser(content=content))
    messages.append(ChatMessageAssistant(content=row.response, model=row.model))
    usage = {m: ModelUsage.model_validate(u) for m, u in (row.usage or {}).items()}
    return EvalSample(
        id=row.question_id,
        epoch=1,
        input=list(messages[:1]),
        target="",
        messages=messages,
        output=ModelOutput.from_content(model=row.model, content=row.response),
        scores=dict(scores),
        metadata={
            "question_id": record.id,
            "setting": row.setting,
            "domain": record.domain,
            "entity": record.entity,
        },
        attachments=attachments,
        model_usage=usage,
    )


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "model"


def _given_log(
    dataset: Dataset,
    model: str,
    setting: str,
    rows: Sequence[ResponseRow],
    scores: dict[AnswerKey, dict[str, Score]],
    judges: Sequence[JudgeSettings],
    source: Path,
) -> EvalLog:
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalSpec, EvalStats

    samples = [_sample(dataset, r, scores.get((r.question_id, model, setting), {})) for r in rows]
    now = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
    spec = EvalSpec(
        eval_id=uuid.uuid4().hex,
        run_id=uuid.uuid4().hex,
        created=now,
        task=f"gamut_{setting}",
        task_id=uuid.uuid4().hex,
        task_registry_name="gamut_eval/gamut",
        task_args={"dataset": str(dataset.path), "setting": setting, "judge": judges[0].judge},
        dataset=EvalDataset(
            location=str(dataset.path), samples=len(dataset), sample_ids=[r.id for r in dataset]
        ),
        model=model,
        config=EvalConfig(),
        metadata={
            "gamut_dataset": str(dataset.path),
            "gamut_setting": setting,
            "gamut_answers": str(source),
            "gamut_judges": [j.judge for j in judges],
        },
    )
    return EvalLog(
        status="success",
        eval=spec,
        results=_results(samples, judges),
        stats=EvalStats(started_at=now, completed_at=now),
        samples=samples,
    )


def scored_logs(
    dataset: Dataset,
    answers: Sequence[ResponseRow],
    judges: Sequence[JudgeSettings],
    store: Store,
    log_dir: Path,
    *,
    generated: bool,
    source: Path,
    params: ScoringParams | None = None,
) -> list[Path]:
    """Write the run's logs with every judge's scores (see the module); return their paths.

    ``answers``: the run's answers (filled ones are skipped); ``source``: the answers file
    given, recorded in each written log; ``params``: the run's scoring parameters.
    """
    from inspect_ai.log import write_eval_log

    real = [r for r in answers if not r.metadata.get(FILLED_KEY)]
    scores = _scores(dataset, real, judges, store, params)
    if generated:
        return _score_generated(log_dir, real, scores, judges)
    groups: dict[tuple[str, str], list[ResponseRow]] = defaultdict(list)
    for row in real:
        groups[(row.model, row.setting)].append(row)
    log_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for (model, setting), rows in sorted(groups.items()):
        log = _given_log(dataset, model, setting, rows, scores, judges, source)
        path = log_dir / f"gamut-{setting}_{_slug(model)}.eval"
        write_eval_log(log, str(path))
        written.append(path)
    return written


def write_run_logs(
    dataset: Dataset,
    answers: Sequence[ResponseRow],
    judges: Sequence[JudgeSettings],
    out_dir: Path,
    responses: Path | None,
    params: ScoringParams | None = None,
) -> list[Path]:
    """``scored_logs`` for a run folder: RUN_DIR/logs/, the verdicts of RUN_DIR's store;
    ``responses``: the answers file given, ``None`` when the run generated them."""
    with VerdictStore(out_dir / "store.sqlite", writer=False) as store:
        return scored_logs(
            dataset,
            answers,
            judges,
            store,
            out_dir / "logs",
            generated=responses is None,
            source=responses or out_dir / "responses.jsonl",
            params=params,
        )
