"""Inspect's ``.eval`` log file, written without importing Inspect AI.

Importing Inspect AI takes about a second (it loads its whole eval machinery), more than
writing a run's logs does, so the logs of given answers (``gamut run --responses``,
``gamut demo``) are written here from plain dicts, as Inspect's own writer
(``write_eval_log``) lays them out for the same log: a zip archive holding

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

The dicts are Inspect's models as their JSON has them (``None`` fields left out); the
caller builds them (``_logs.py``).
"""

from __future__ import annotations

import json
import secrets
import textwrap
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gamut_eval._files import atomic_writer

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
