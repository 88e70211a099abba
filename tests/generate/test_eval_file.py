"""The `.eval` logs of given answers are written without Inspect AI, and hold exactly what
Inspect's own writer writes for the same log: every member's JSON (the summaries' thinning
included), read back by Inspect as that log."""

from __future__ import annotations

import json
import math
import textwrap
import zipfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings, strategies as st
from inspect_ai.log import (
    EvalLog,
    read_eval_log,
    read_eval_log_sample_summaries,
    write_eval_log,
)

from gamut_eval.cli import cli
from gamut_eval.generate._logs import (
    _indented_length,
    _thin_text,
    attachment_key,
    message_id,
    sample_summary,
    write_eval_file,
)


def _members(path: Path, nan: Any = str) -> tuple[list[str], dict[str, Any]]:
    """The archive's member names in order, and each one's JSON (NaN read as the string
    ``NaN`` by default, so that equal logs compare equal)."""
    with zipfile.ZipFile(path) as archive:  # Inspect's import taught zipfile to read zstd
        names = archive.namelist()
        return names, {n: json.loads(archive.read(n), parse_constant=nan) for n in names}


def _as_inspect_writes_it(ours: Path, tmp_path: Path) -> tuple[EvalLog, Path]:
    """Our log through Inspect's models (unknown fields dropped, missing ones filled),
    written again with Inspect's ``write_eval_log``."""
    _, members = _members(ours, nan=float)
    samples = [v for n, v in members.items() if n.startswith("samples/")]
    log = EvalLog.model_validate({**members["header.json"], "samples": samples})
    theirs = tmp_path / "inspect" / ours.name
    theirs.parent.mkdir(exist_ok=True)
    write_eval_log(log, str(theirs))
    return log, theirs


def _assert_same_as_inspect(ours: Path, tmp_path: Path) -> None:
    log, theirs = _as_inspect_writes_it(ours, tmp_path)
    assert _members(ours) == _members(theirs)
    # Inspect reads both files as the same log, the summaries as the samples' own ones
    assert read_eval_log(str(ours)).model_dump_json() == (
        read_eval_log(str(theirs)).model_dump_json()
    )
    summaries = read_eval_log_sample_summaries(str(ours))
    assert [s.model_dump_json() for s in summaries] == [
        s.summary().model_dump_json() for s in log.samples or []
    ]


def test_the_demos_logs_are_what_inspect_writes(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    result = CliRunner().invoke(cli, ["demo", "--out", str(out)])
    assert result.exit_code == 0, result.output
    logs = sorted((out / "logs").glob("*.eval"))
    assert len(logs) == 6  # 3 models x 2 settings
    for path in logs:
        _assert_same_as_inspect(path, tmp_path)
    # the summaries were thinned: the long metadata left out, explanations shortened
    _, members = _members(logs[0])
    score = members["summaries.json"][0]["scores"]["gamut_scorer"]
    assert score["metadata"]["check_texts"] == "Key removed from summary (> 1k)"
    assert len(score["explanation"]) <= 1024


def _score(value: dict[str, float], explanation: str, metadata: dict[str, Any]) -> dict[str, Any]:
    return {"value": value, "answer": "an answer", "explanation": explanation,
            "metadata": metadata, "history": []}  # fmt: skip


def test_edge_cases_are_written_as_inspect_writes_them(tmp_path: Path) -> None:
    """NaN scores, token usage, a missing metadata value, non-ASCII text, an input over the
    summary's 5,120 characters, metadata just under and just over 1,024 characters of JSON
    (indented as Inspect measures it), an image."""
    image = "data:image/png;base64,AAAA"
    key = attachment_key(image)
    question = {"id": message_id(), "content": [
        {"type": "image", "image": f"attachment://{key}", "detail": "auto"},
        {"type": "text", "text": "Qu'est-ce que c'est ? " + "très " * 1100},
    ], "role": "user"}  # fmt: skip
    answer = {"id": message_id(), "content": "Un café — ☕", "role": "assistant", "model": "m/x"}
    output = {"id": message_id(), "content": "Un café — ☕", "source": "generate",
              "role": "assistant", "model": "m/x"}  # fmt: skip
    # {"k": "x" * n} indents to 13 + n characters: 1,011 fits in 1,024, 1,012 does not
    metadata = {"fits": {"k": "x" * 1011}, "too_long": {"k": "x" * 1012}, "none": None,
                "count": 3, "text": "word " * 400}  # fmt: skip
    nan = {"gamut": math.nan, "answer_critical": math.nan, "valuable": 0.5, "context": 1.0}
    sample = {
        "id": "q-1", "epoch": 1, "input": [question], "target": "",
        "messages": [question, answer],
        "output": {"model": "m/x", "choices": [{"message": output, "stop_reason": "stop"}],
                   "completion": "Un café — ☕"},
        "scores": {"gamut_scorer": _score(nan, "line\n" * 300, metadata)},
        "metadata": {"question_id": "q-1", "setting": "multimodal", "domain": None,
                     "entity": "Café"},
        "store": {}, "events": [],
        "model_usage": {"m/x": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15,
                                "input_tokens_cache_read": 4, "total_cost": 0.25}},
        "role_usage": {}, "attachments": {key: image},
        "events_data": {"messages": [], "calls": []},
    }  # fmt: skip
    spec = {
        "eval_id": "e", "run_id": "r", "created": "2026-01-01T00:00:00+00:00", "task": "t",
        "task_id": "i", "task_version": 0, "task_registry_name": "gamut_eval/gamut",
        "task_attribs": {}, "task_args": {"a": 1}, "task_args_passed": {"a": 1},
        "solver_args_passed": {}, "dataset": {"location": "d", "samples": 1, "sample_ids": ["q-1"]},
        "model": "m/x", "model_generate_config": {}, "model_args": {}, "config": {},
        "packages": {}, "metadata": {"gamut_setting": "multimodal"},
    }  # fmt: skip
    metric = {"name": "gamut_eval/scored_mean", "value": math.nan, "params": {}}
    results = {"total_samples": 1, "completed_samples": 1, "scores": [
        {"name": "gamut", "scorer": "gamut_scorer", "scored_samples": 0, "unscored_samples": 1,
         "params": {"judge": "j"}, "metrics": {metric["name"]: metric}},
    ]}  # fmt: skip
    stats = {"started_at": spec["created"], "completed_at": spec["created"],
             "model_usage": {}, "role_usage": {}, "connection_limit_history": []}  # fmt: skip
    path = tmp_path / "edge.eval"
    write_eval_file(path, spec, results, stats, [sample])
    _assert_same_as_inspect(path, tmp_path)
    summary = sample_summary(sample)
    thinned = summary["scores"]["gamut_scorer"]["metadata"]
    assert thinned["fits"] == metadata["fits"]
    assert thinned["too_long"] == "Key removed from summary (> 1k)"
    assert thinned["text"].endswith("...")
    assert len(thinned["text"]) <= 1024
    text = summary["input"][0]["content"][1]["text"]
    cut = "...\n(content truncated)"
    assert text.endswith(cut)
    assert len(text) == 5120 + len(cut)
    assert summary["input"][0]["content"][0] == {"type": "text", "text": "(Image)"}


@pytest.mark.parametrize("count", [1, 50])
def test_message_ids_look_like_inspects(count: int) -> None:
    ids = {message_id() for _ in range(count)}
    assert len(ids) == count
    assert all(len(i) == 22 and i.isalnum() for i in ids)


_WORDS = st.text(alphabet="ab-- \t\n\u00a0.", min_size=0, max_size=40)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.one_of(_WORDS, st.text(alphabet="xy-", min_size=900, max_size=3000)), max_size=80)
)
def test_thinned_text_is_textwraps_shortening(parts: list[str]) -> None:
    # Words, hyphens, runs of whitespace (a no-break space among them) and words longer than
    # the width, around the 1,024 and 2,050 characters where the fast path cuts.
    text = " ".join(parts)
    assert _thin_text(text) == textwrap.shorten(text[:8192], width=1024, placeholder="...")


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(_JSON)
def test_indented_length_is_that_of_the_indented_json(value: Any) -> None:
    assert _indented_length(value) == len(json.dumps(value, ensure_ascii=False, indent=2))
