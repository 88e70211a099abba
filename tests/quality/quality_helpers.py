"""Builders shared by the judge-quality tests (imported by the ``test_quality_*`` modules;
fixtures live in ``conftest.py``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from gamut_eval.cli import cli
from gamut_eval.testing import FakeOpenAIServer

JUDGE = "openai-api/fake/fake-judge"
"""The judge as users name it; ``FAKE_BASE_URL`` points it at the fake server."""

StartServer = Callable[..., FakeOpenAIServer]
"""The ``serve`` fixture: start a fake judge server with a policy."""


def fact_record(qid: str, facts: Mapping[str, tuple[str, str]]) -> dict[str, Any]:
    """A dataset record with one ``fact`` item per entry: check id -> (tier, statement)."""
    items = [
        {"id": check_id, "type": "fact", "tier": tier, "statement": statement}
        for check_id, (tier, statement) in facts.items()
    ]
    question = f"What is shown in picture {qid}?"
    meta = {"id": qid, "question": question, "items": items}
    return {"id": qid, "question": question, "meta_rubric": meta, "entity": "a thing"}


def write_jsonl(path: Path, rows: Iterable[Mapping[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def invoke(*args: str) -> Result:
    """Run ``gamut`` in-process; stderr is kept apart from the output."""
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)
