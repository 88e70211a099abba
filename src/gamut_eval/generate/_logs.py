"""A run's Inspect logs with its scores: ``inspect view RUN_DIR/logs`` shows them.

Every sample of a run's logs carries, per judge, the score ``gamut_eval/gamut_scorer``
would give it (``_scorer.score_parts``): the Gamut and tier scores, an explanation
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

Scoring generated answers reads and rewrites the eval set's logs with Inspect's own reader
and writer (the run generated them through Inspect, so it is loaded already). Importing
Inspect AI takes about a second (it loads its whole eval machinery), more than writing a
run's logs does, so the logs of given answers (``gamut run --responses``, ``gamut demo``)
are written without it (``write_eval_file``), from plain dicts (Inspect's models as their
JSON has them, ``None`` fields left out), as Inspect's own writer (``write_eval_log``) lays
them out for the same log: a zip archive holding

    _journal/start.json            {"version": 2, "eval": spec, "plan": plan}
    samples/<id>_epoch_<n>.json    one sample each
    _journal/summaries/1.json      every sample's summary (``EvalSample.summary()``)
    summaries.json                 the same list
    header.json                    the log without samples: spec, plan, results, stats

each member compact JSON (NaN written as ``NaN``, as Inspect does). A summary thins a
sample as Inspect does: an image in the input becomes the text ``(Image)``, inputs and
targets are cut at 5,120 characters, score answers, explanations and string metadata are
shortened to 1,024 characters (``textwrap.shorten``), and a metadata value whose JSON is
longer than 1,024 characters is replaced by ``Key removed from summary (> 1k)``.

Members are deflated at level 1 (zip's standard method, which every version of Inspect
reads; Inspect itself now writes zstd), except samples that carry attachments (the
question's image, base64 in a data URI): deflate saves about a quarter of those at many
times the cost of the rest of the log, so they are stored as they are.
``tests/generate/test_eval_file.py`` checks that Inspect reads these files back as the log
its own writer would have written.
"""

from __future__ import annotations

import base64
import json
import math
import re
import secrets
import textwrap
import time
import uuid
import zipfile
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gamut_eval._files import IMAGE_TYPES, atomic_writer
from gamut_eval.data import dataset_reference
from gamut_eval.generate._scorer import SCORE_KEYS, score_parts, shown
from gamut_eval.judge import NOT_JUDGED, JudgePlan, Store, StoredVerdict, VerdictStore
from gamut_eval.responses import FILLED_KEY

if TYPE_CHECKING:
    from inspect_ai.log import EvalSample

    from gamut_eval.dataset import Dataset
    from gamut_eval.judge import JudgeSettings
    from gamut_eval.responses import ResponseRow
    from gamut_eval.scoring import ScoringParams

SCORER = "gamut_scorer"
_MEAN, _STDERR = "gamut_eval/mean", "gamut_eval/stderr"

AnswerKey = tuple[str, str, str]
"""(question id, model, setting)."""
ScoreDict = dict[str, Any]
"""An Inspect ``Score`` as its JSON has it: value, answer, explanation, metadata."""


def scorer_name(index: int, judge: str) -> str:
    """The score's name in a sample: the primary judge's is ``gamut_scorer``."""
    return SCORER if index == 0 else f"{SCORER}:{judge}"


def _scores(
    dataset: Dataset,
    answers: Sequence[ResponseRow],
    judges: Sequence[JudgeSettings],
    store: Store,
    params: ScoringParams | None,
) -> dict[AnswerKey, dict[str, ScoreDict]]:
    """Every answer's scores, one per judge, from the store."""
    checklists = dataset.checklists()
    out: dict[AnswerKey, dict[str, ScoreDict]] = defaultdict(dict)
    for index, settings in enumerate(judges):
        name = scorer_name(index, settings.judge)
        unjudged = StoredVerdict("", settings.judge, "", None, "", "unscored", NOT_JUDGED, 0)
        for planned in JudgePlan(dataset, list(answers), settings, checklists=checklists):
            row = planned.row
            found = store.get(planned.keys)
            rows = [found.get(key, unjudged) for key in planned.keys]
            parts = score_parts(settings.judge, checklists[row.question_id], rows, params)
            out[(row.question_id, row.model, row.setting)][name] = {
                "value": parts.value,
                "answer": row.response,
                "explanation": parts.explanation,
                "metadata": parts.metadata,
                "history": [],
            }
    return out


def _results(
    values: Sequence[dict[str, Any]], completed: int, judges: Sequence[JudgeSettings]
) -> dict[str, Any]:
    """Inspect's results block (``EvalResults`` as JSON): per score name and key, the
    scorer's metrics, ``mean`` and ``stderr`` over the samples that have a value (NaN,
    nothing to score, is left out), rounded as the scorer rounds them. ``values``: each
    sample's score values by score name."""
    scores = []
    for index, settings in enumerate(judges):
        name = scorer_name(index, settings.judge)
        for key in SCORE_KEYS:
            found = [float(v[name][key]) for v in values if name in v]
            finite = [v for v in found if math.isfinite(v)]
            mean = sum(finite) / len(finite) if finite else math.nan
            spread = (
                math.sqrt(sum((v - mean) ** 2 for v in finite) / (len(finite) - 1) / len(finite))
                if len(finite) > 1
                else (0.0 if finite else math.nan)
            )  # Inspect's stderr(): the sample standard deviation over the root of n
            metrics = {
                metric: {"name": metric, "value": shown(value), "params": {}}
                for metric, value in ((_MEAN, mean), (_STDERR, spread))
            }
            scores.append(
                {
                    "name": key if index == 0 else f"{key}:{settings.judge}",
                    "scorer": name,
                    "scored_samples": len(finite),
                    "unscored_samples": len(found) - len(finite),
                    "params": {"judge": settings.judge},
                    "metrics": metrics,
                }
            )
    return {"total_samples": len(values), "completed_samples": completed, "scores": scores}


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
    scores: dict[AnswerKey, dict[str, ScoreDict]],
    judges: Sequence[JudgeSettings],
) -> list[Path]:
    """Add the scores to the eval set's logs the answers were exported from."""
    from inspect_ai.log import EvalResults, read_eval_log, write_eval_log
    from inspect_ai.scorer import Score

    names = sorted({str(r.metadata["inspect_log"]) for r in answers if "inspect_log" in r.metadata})
    written = []
    for name in names:
        path = log_dir / name
        if not path.is_file():  # removed by hand since: its answers are scored all the same
            continue
        log = read_eval_log(str(path))
        setting = str((log.eval.metadata or {}).get("gamut_setting", ""))
        samples = log.samples or []
        for sample in samples:
            found = scores.get(_key(sample, log.eval.model, setting))
            if found is not None and sample.error is None:
                sample.scores = {n: Score.model_validate(score) for n, score in found.items()}
        values = [{n: s.value for n, s in (sample.scores or {}).items()} for sample in samples]
        completed = sum(1 for s in samples if s.error is None)
        log.results = EvalResults.model_validate(_results(values, completed, judges))
        write_eval_log(log, str(path))
        written.append(path)
    return written


_Images = dict[Path, tuple[str, str]]
"""Each image as an attachment (its key and data URI), read and encoded once for all the
logs of a run."""


_USAGE_COUNTS = ("input_tokens", "output_tokens", "total_tokens")
_USAGE_OPTIONAL = (
    "input_tokens_cache_write",
    "input_tokens_cache_read",
    "reasoning_tokens",
    "total_cost",
)


def _model_usage(usage: dict[str, Any]) -> dict[str, Any]:
    """A model's usage as Inspect's ``ModelUsage`` has it (the counts default to 0)."""
    out: dict[str, Any] = {key: int(usage.get(key) or 0) for key in _USAGE_COUNTS}
    for key in _USAGE_OPTIONAL:
        if usage.get(key) is not None:
            out[key] = float(usage[key]) if key == "total_cost" else int(usage[key])
    return out


def _sample(
    dataset: Dataset, row: ResponseRow, scores: dict[str, ScoreDict], images: _Images
) -> dict[str, Any]:
    """One given answer as an Inspect sample (``EvalSample`` as JSON): the question as
    asked, the answer, the scores."""
    record = dataset.by_id()[row.question_id]
    attachments: dict[str, str] = {}
    image = dataset.image_path(record) if row.setting == "multimodal" else None
    content: str | list[dict[str, Any]]
    if image is None or not image.is_file():  # text-only, or an image the answers did without
        content = record.question_for(row.setting)
    else:
        if image not in images:
            kind = IMAGE_TYPES.get(image.suffix.lower(), "image/png")
            uri = f"data:{kind};base64,{base64.b64encode(image.read_bytes()).decode('ascii')}"
            images[image] = (attachment_key(uri), uri)
        digest, uri = images[image]
        attachments[digest] = uri
        content = [
            {"type": "image", "image": f"attachment://{digest}", "detail": "auto"},
            {"type": "text", "text": record.question},
        ]
    question = {"id": message_id(), "content": content, "role": "user"}
    answer = {"id": message_id(), "content": row.response, "role": "assistant", "model": row.model}
    output = {"id": message_id(), "content": row.response, "source": "generate"}
    output |= {"role": "assistant", "model": row.model}
    usage = {m: _model_usage(u) for m, u in (row.usage or {}).items() if isinstance(u, dict)}
    metadata: dict[str, Any] = {"question_id": record.id, "setting": row.setting}
    metadata |= {"domain": record.domain, "entity": record.entity}
    return {
        "id": row.question_id,
        "epoch": 1,
        "input": [question],
        "target": "",
        "messages": [question, answer],
        "output": {
            "model": row.model,
            "choices": [{"message": output, "stop_reason": "stop"}],
            "completion": row.response,
        },
        "scores": dict(scores),
        "metadata": metadata,
        "store": {},
        "events": [],
        "model_usage": usage,
        "role_usage": {},
        "attachments": attachments,
        "events_data": {"messages": [], "calls": []},
    }


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "model"


def _write_given_log(
    path: Path,
    dataset: Dataset,
    model: str,
    setting: str,
    rows: Sequence[ResponseRow],
    scores: dict[AnswerKey, dict[str, ScoreDict]],
    judges: Sequence[JudgeSettings],
    source: Path,
    images: _Images,
) -> None:
    samples = [
        _sample(dataset, r, scores.get((r.question_id, model, setting), {}), images) for r in rows
    ]
    now = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
    reference = dataset_reference(dataset.path)  # what a reader can pass back, not a local path
    task_args = {"dataset": reference, "setting": setting, "judge": judges[0].judge}
    metadata = {
        "gamut_dataset": reference,
        "gamut_setting": setting,
        "gamut_answers": str(source),
        "gamut_judges": [j.judge for j in judges],
    }
    spec = {
        "eval_id": uuid.uuid4().hex,
        "run_id": uuid.uuid4().hex,
        "created": now,
        "task": f"gamut_{setting}",
        "task_id": uuid.uuid4().hex,
        "task_version": 0,
        "task_registry_name": "gamut_eval/gamut",
        "task_attribs": {},
        "task_args": task_args,
        "task_args_passed": dict(task_args),
        "solver_args_passed": {},
        "dataset": {
            "location": reference,
            "samples": len(dataset),
            "sample_ids": [r.id for r in dataset],
        },
        "model": model,
        "model_generate_config": {},
        "model_args": {},
        "config": {},
        "packages": {},
        "metadata": metadata,
    }
    values = [{n: score["value"] for n, score in s["scores"].items()} for s in samples]
    results = _results(values, len(samples), judges)
    stats = {"started_at": now, "completed_at": now, "model_usage": {}, "role_usage": {}}
    stats["connection_limit_history"] = []
    write_eval_file(path, spec, results, stats, samples)


def write_run_logs(
    dataset: Dataset,
    answers: Sequence[ResponseRow],
    judges: Sequence[JudgeSettings],
    out_dir: Path,
    responses: Path | None,
    params: ScoringParams | None = None,
    *,
    keep: bool = False,
) -> list[Path]:
    """Write a run folder's logs (RUN_DIR/logs/) with every judge's scores, from the
    verdicts of RUN_DIR's store (see the module); return their paths.

    ``answers``: the run's answers (filled ones are skipped); ``responses``: the answers
    file given (recorded in each written log), ``None`` when the run generated them;
    ``params``: the run's scoring parameters. ``keep``: the run's verdicts are those its
    logs were written from (``RunResult.up_to_date``), so the logs of given answers, when
    they are all there, are kept as they are (the eval set's logs of generated answers get
    their scores again: generating may rewrite them)."""
    log_dir = out_dir / "logs"
    real = [r for r in answers if not r.metadata.get(FILLED_KEY)]
    groups: dict[tuple[str, str], list[ResponseRow]] = defaultdict(list)
    for row in real:  # given answers: one log per model and setting
        groups[(row.model, row.setting)].append(row)
    paths = {key: log_dir / f"gamut-{key[1]}_{_slug(key[0])}.eval" for key in sorted(groups)}
    if keep and responses is not None and all(path.is_file() for path in paths.values()):
        return list(paths.values())
    with VerdictStore(out_dir / "store.sqlite", writer=False) as store:
        scores = _scores(dataset, real, judges, store, params)
    if responses is None:
        return _score_generated(log_dir, real, scores, judges)
    log_dir.mkdir(parents=True, exist_ok=True)
    images: _Images = {}
    for (model, setting), path in paths.items():
        rows = groups[(model, setting)]
        _write_given_log(path, dataset, model, setting, rows, scores, judges, responses, images)
    return list(paths.values())


LOG_SCHEMA_VERSION = 2
"""The log format version Inspect writes in ``start.json`` and ``header.json``."""

_ID_ALPHABET = "23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_ID_LENGTH = 22
_MAX_TEXT = 5120
"""Summary inputs and targets are cut at this many characters."""
_THIN_WIDTH = 1024
"""Summary strings are shortened to this many characters; a metadata value whose JSON is
longer is left out of the summary."""
_REMOVED = "Key removed from summary (> 1k)"
_COMPRESS_LEVEL = 1
"""zlib level: JSON text compresses about as well at 1 as at 6, in a fraction of the time."""


def message_id() -> str:
    """A random id in the form Inspect gives messages (22 characters of base 57, from 128
    random bits)."""
    number = secrets.randbits(128)
    digits = []
    for _ in range(_ID_LENGTH):
        number, digit = divmod(number, len(_ID_ALPHABET))
        digits.append(_ID_ALPHABET[digit])
    return "".join(digits)


def attachment_key(content: str) -> str:
    """The key Inspect files a sample's attachment under (a 128-bit MurmurHash3)."""
    import mmh3

    h1, h2 = mmh3.hash64(content.encode("utf-8", errors="backslashreplace"))
    return f"{h1 & 0xFFFFFFFFFFFFFFFF:016x}{h2 & 0xFFFFFFFFFFFFFFFF:016x}"


def _json(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _truncate(text: str) -> str:
    if len(text) > _MAX_TEXT:
        return text[:_MAX_TEXT] + "...\n(content truncated)"
    return text


def _thin_text(text: str) -> str:
    """``textwrap.shorten(text[:8192], width=1024, placeholder="...")``, as Inspect thins a
    summary's text. Shortening reads only the collapsed text's first line and whether more
    follows, so past twice the width the rest is cut off before the (slow) word splitting:
    a word that starts on the line and runs past the cut is still longer than the width,
    and text still follows the line (``test_eval_file.py`` checks it against ``shorten``)."""
    collapsed = " ".join(text[: _THIN_WIDTH * 8].split())
    if len(collapsed) <= _THIN_WIDTH:
        return collapsed
    return textwrap.shorten(collapsed[: 2 * _THIN_WIDTH + 2], width=_THIN_WIDTH, placeholder="...")


def _indented_length(value: Any) -> int:
    """``len(json.dumps(value, ensure_ascii=False, indent=2))``, without the indenting
    encoder (pure Python, and slow): the compact form with ``": "`` after keys, plus a
    newline and the indent before each item and before each closing bracket."""
    extra = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list | tuple) and item:
            children = item.values() if isinstance(item, dict) else item
            extra += len(item) * (1 + 2 * (depth + 1)) + 1 + 2 * depth
            stack.extend((child, depth + 1) for child in children)
    compact = json.dumps(value, ensure_ascii=False, separators=(",", ": "))
    return len(compact) + extra


def _thin_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    thinned: dict[str, Any] = {}
    for key, value in metadata.items():
        if isinstance(value, int | float | bool):
            thinned[key] = value
        elif isinstance(value, str):
            thinned[key] = _thin_text(value)
        else:  # Inspect measures the value's JSON with an indent of 2
            thinned[key] = value if _indented_length(value) <= _THIN_WIDTH else _REMOVED
    return thinned


def _thin_message(message: dict[str, Any]) -> dict[str, Any]:
    content = message["content"]
    if isinstance(content, str):
        return {**message, "content": _truncate(content)}
    parts = []
    for part in content:
        if part["type"] == "text":
            parts.append({**part, "text": _truncate(part["text"])})
        else:
            parts.append({"type": "text", "text": f"({part['type'].capitalize()})"})
    return {**message, "content": parts}


def _thin_score(score: dict[str, Any]) -> dict[str, Any]:
    thinned: dict[str, Any] = {"value": score["value"]}
    for key in ("answer", "explanation"):
        if score.get(key) is not None:
            thinned[key] = _thin_text(score[key])
    if score.get("metadata") is not None:
        thinned["metadata"] = _thin_metadata(score["metadata"])
    thinned["history"] = []
    return thinned


def sample_summary(sample: dict[str, Any]) -> dict[str, Any]:
    """Inspect's summary of a sample (``EvalSample.summary()``, thinned as it thins)."""
    given = sample["input"]
    summary: dict[str, Any] = {
        "id": sample["id"],
        "epoch": sample["epoch"],
        "input": _truncate(given) if isinstance(given, str) else [_thin_message(m) for m in given],
        "target": _truncate(sample["target"]),
        "metadata": _thin_metadata(sample.get("metadata", {})),
    }
    if sample.get("scores") is not None:
        summary["scores"] = {name: _thin_score(s) for name, s in sample["scores"].items()}
    summary["model_usage"] = sample.get("model_usage", {})
    summary["role_usage"] = sample.get("role_usage", {})
    summary["completed"] = True
    summary["message_count"] = len(sample.get("messages", []))
    return summary


def write_eval_file(
    path: Path,
    spec: dict[str, Any],
    results: dict[str, Any],
    stats: dict[str, Any],
    samples: Sequence[dict[str, Any]],
) -> None:
    """Write a finished (``success``) log of ``samples`` to ``path``, atomically.

    ``spec``: the log's ``eval`` (Inspect's ``EvalSpec``); ``results``: its
    ``EvalResults``; ``stats``: its ``EvalStats``. The plan is empty (no solver ran).
    """
    plan = {"name": "plan", "steps": [], "config": {}}
    summaries = [sample_summary(s) for s in samples]
    header = {
        "version": LOG_SCHEMA_VERSION,
        "status": "success",
        "eval": spec,
        "plan": plan,
        "results": results,
        "stats": stats,
        "invalidated": False,
        "tags": [],
        "metadata": spec.get("metadata", {}),
    }
    with (
        atomic_writer(path, "wb") as handle,
        zipfile.ZipFile(
            handle, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=_COMPRESS_LEVEL
        ) as archive,
    ):
        start = {"version": LOG_SCHEMA_VERSION, "eval": spec, "plan": plan}
        archive.writestr("_journal/start.json", _json(start))
        for sample in samples:
            name = f"samples/{sample['id']}_epoch_{sample['epoch']}.json"
            method = zipfile.ZIP_STORED if sample.get("attachments") else zipfile.ZIP_DEFLATED
            archive.writestr(name, _json(sample), compress_type=method)
        archive.writestr("_journal/summaries/1.json", _json(summaries))
        archive.writestr("summaries.json", _json(summaries))
        archive.writestr("header.json", _json(header))
