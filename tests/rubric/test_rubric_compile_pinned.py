"""Compile output pinned, field for field, to what the compiler produced on the examples
and the bundled sample before it was optimised (``data/compiled_pinned.json``).

Fields added to ``Check`` later are not in the pinned file; every pinned field must still
be there with the same value, and nothing else in the checklist may change.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from pathlib import Path
from typing import Any

import pytest

from gamut_eval.data import sample_dir
from gamut_eval.dataset import load_dataset
from gamut_eval.rubric import (
    Check,
    CheckKind,
    Checklist,
    CompileConfig,
    MetaRubric,
    Tier,
    compile_rubric,
    load_meta_rubric,
)

ROOT = Path(__file__).resolve().parents[2]
PINNED: dict[str, Any] = json.loads(
    (Path(__file__).parent / "data/compiled_pinned.json").read_text()
)
CONFIGS = {
    "default": CompileConfig(),
    "short3-frac": CompileConfig(short_list_max=3, coverage_fractions=(0.3, 0.6, 0.9)),
}
PINNED_FIELDS = ("id", "kind", "tier", "text", "item", "secondary", "cites")


def _rubrics() -> dict[str, MetaRubric]:
    rubrics = {
        f"examples/{p.name}": load_meta_rubric(p)
        for p in sorted((ROOT / "examples").glob("*.yaml"))
    }
    dataset = load_dataset(sample_dir() / "dataset.jsonl")
    rubrics |= {f"sample/{r.id}": r.meta_rubric for r in dataset.records}
    return rubrics


RUBRICS = _rubrics()


def test_every_pinned_case_is_compiled() -> None:
    assert sorted(PINNED) == sorted(f"{k}:{c}" for k in RUBRICS for c in CONFIGS)


@pytest.mark.parametrize("key", sorted(PINNED))
def test_compile_output_is_pinned(key: str) -> None:
    name, config = key.rsplit(":", 1)
    checklist = compile_rubric(RUBRICS[name], CONFIGS[config])
    pinned = PINNED[key]
    dumped = checklist.model_dump(mode="json")
    assert {k: v for k, v in dumped.items() if k != "checks"} == pinned["header"]
    assert [{f: c[f] for f in PINNED_FIELDS} for c in dumped["checks"]] == pinned["checks"]


@pytest.mark.parametrize("key", sorted(PINNED)[::3])
def test_compiled_checklist_equals_its_validated_copy(key: str) -> None:
    """Types as validation gives them (enums, tuples), whatever way the compiler builds them."""
    name, config = key.rsplit(":", 1)
    checklist = compile_rubric(RUBRICS[name], CONFIGS[config])
    assert checklist == Checklist.model_validate(checklist.model_dump())
    assert checklist == Checklist.model_validate_json(checklist.model_dump_json())
    for check in checklist.checks:
        assert type(check) is Check
        assert type(check.kind) is CheckKind
        assert type(check.tier) is Tier
        assert isinstance(check.cites, tuple)
        assert type(check.text) is str
    assert type(checklist.config) is CompileConfig
    assert isinstance(checklist.checks, tuple)


BENCH_DIGEST = "bf887fe505ca92d5411c7193ad786a86766bb788e972eab168b16e7d1c1b92df"
"""sha256 of the pinned fields of 300 of the benchmark's paper-sized rubrics, two configs."""


def test_benchmark_rubrics_compile_as_pinned() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from _common import paper_rubric
    finally:
        sys.path.remove(str(ROOT / "bench"))
    rng = random.Random(0)
    digest = hashlib.sha256()
    for i in range(300):
        meta = paper_rubric(i, rng)
        for config in CONFIGS.values():
            dumped = compile_rubric(meta, config).model_dump(mode="json")
            dumped["checks"] = [{f: c[f] for f in PINNED_FIELDS} for c in dumped["checks"]]
            digest.update(json.dumps(dumped, sort_keys=True).encode())
    assert digest.hexdigest() == BENCH_DIGEST
