"""`gamut run --calibrate-with` against a fake judge server: a lenient cheap judge on every
answer, a truthful strong judge on the sampled questions only, calibrated scores that land
on the truth where the cheap judge's do not, and a rerun with a larger fraction that sends
only the new questions."""

from __future__ import annotations

import base64
import json
import math
import re
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner, Result

from gamut_eval.calibration import sample_questions
from gamut_eval.cli import cli
from gamut_eval.testing import (
    FakeOpenAIServer,
    KeywordPolicy,
    LenientPolicy,
    RequestContext,
    parse_judge_prompt,
)

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
QUESTIONS = 40
MODELS = ("cand/strong-model", "cand/weak-model")
TIERS = ("answer_critical",) * 2 + ("valuable",) * 3 + ("context",) * 2
CHEAP, STRONG = "openai-api/fake/cheap", "openai-api/fake/strong"
MARK = re.compile(r"\bQID (q\d+)\b")


def _word(rng: np.random.Generator) -> str:
    return "".join(
        rng.choice(list("bcdfghklmnprstvz")) + rng.choice(list("aeiou")) for _ in range(4)
    )


def _build(folder: Path) -> tuple[Path, Path]:
    """A dataset of QUESTIONS questions with seven fact checks of two made-up words each,
    and answers of two models that carry both words of a check (meets), one (partially
    meets) or none (missing), the stronger model more often."""
    rng = np.random.default_rng(1)
    (folder / "img.png").write_bytes(PNG)
    records, answers = [], []
    for i in range(QUESTIONS):
        qid = f"q{i:02d}"
        words = [(_word(rng), _word(rng)) for _ in TIERS]
        items = [
            {"id": f"f{k}", "type": "fact", "tier": tier, "statement": f"Names the {a} {b}."}
            for k, (tier, (a, b)) in enumerate(zip(TIERS, words, strict=True))
        ]
        records.append(
            {
                "id": qid,
                "question": f"What is in photo {i}?",
                "question_text_only": f"What is thing {i}?",
                "entity": f"thing {i}",
                "image": "img.png",
                "meta_rubric": {"id": qid, "question": f"What is in photo {i}?", "items": items},
            }
        )
        for model, p in zip(MODELS, (0.55, 0.25), strict=True):
            said = []
            for a, b in words:
                draw = rng.random()
                said += [a, b] if draw < p else [a] if draw < p + 0.1 else []
            answers.append(
                {
                    "question_id": qid,
                    "model": model,
                    "setting": "text_only",
                    "response": f"QID {qid} by {model}: " + " ".join(said),
                }
            )
    dataset, responses = folder / "dataset.jsonl", folder / "answers.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in records))
    responses.write_text("".join(json.dumps(r) + "\n" for r in answers))
    return dataset, responses


@dataclass
class Judges:
    """The fake's policy: the lenient keyword judge for `cheap`, the truthful one for
    anything else; keeps the question of every graded request, per judge model."""

    seen: dict[str, list[str]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reply(self, request: dict[str, Any], ctx: RequestContext) -> str:
        prompt = parse_judge_prompt(request)
        found = MARK.search(prompt.response) if prompt is not None else None
        if found is not None:  # not the probe
            with self.lock:
                self.seen.setdefault(ctx.model, []).append(found.group(1))
        policy = LenientPolicy() if ctx.model == "cheap" else KeywordPolicy()
        return policy.reply(request, ctx)

    def take(self) -> dict[str, list[str]]:
        with self.lock:
            seen, self.seen = self.seen, {}
        return seen


@dataclass
class Runs:
    dataset: Path
    truth: Path
    first: Path
    printed: Result
    requests: dict[str, list[str]]
    calibrated: dict[str, Any]
    """calibrated.json after the first run."""
    rerun: Result
    rerun_requests: dict[str, list[str]]


def _run(dataset: Path, responses: Path, out: Path, *extra: str) -> Result:
    args = ["run", "--dataset", str(dataset), "--responses", str(responses)]
    args += ["--setting", "text_only", "--out", str(out), *extra]
    return CliRunner().invoke(cli, args, terminal_width=200)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    folder = tmp_path_factory.mktemp("calibrated-run")
    dataset, responses = _build(folder)
    judges = Judges()
    with FakeOpenAIServer(policy=judges) as server, pytest.MonkeyPatch.context() as patch:
        patch.setenv("FAKE_BASE_URL", server.base_url)
        patch.setenv("FAKE_API_KEY", "test-key")
        truth = _run(dataset, responses, folder / "truth", "--judge", STRONG)
        assert truth.exit_code == 0, truth.output
        judges.take()
        calibrate = ["--judge", CHEAP, "--calibrate-with", STRONG, "--seed", "7"]
        first = _run(dataset, responses, folder / "run", *calibrate, "--calibrate-fraction", "0.25")
        assert first.exit_code == 0, first.output
        requests = judges.take()
        calibrated = json.loads((folder / "run" / "calibrated.json").read_text())
        rerun = _run(dataset, responses, folder / "run", *calibrate, "--calibrate-fraction", "0.5")
        assert rerun.exit_code == 0, rerun.output
        yield Runs(
            dataset, folder / "truth", folder / "run", first, requests, calibrated, rerun,
            judges.take(),
        )  # fmt: skip


def _ids() -> list[str]:
    return [f"q{i:02d}" for i in range(QUESTIONS)]


def _truth(folder: Path) -> dict[str, float]:
    rows = [json.loads(line) for line in (folder / "scores.jsonl").read_text().splitlines()]
    return {m: float(np.mean([r["gamut"] for r in rows if r["model"] == m])) for m in MODELS}


def test_the_strong_judge_grades_only_the_sampled_questions(runs: Runs) -> None:
    sample = sample_questions(_ids(), 0.25, 7)
    assert len(sample) == 10  # ceil(0.25 * 40)
    # Every check (7) of both models' answers to each sampled question, once; no other.
    assert Counter(runs.requests["strong"]) == dict.fromkeys(sample, 2 * 7)
    assert Counter(runs.requests["cheap"]) == dict.fromkeys(_ids(), 2 * 7)
    manifest = json.loads((runs.first / "run.json").read_text())
    assert manifest["identity"]["calibration"] == {"calibrated_with": STRONG, "seed": 7}


def test_a_larger_fraction_sends_only_the_new_questions(runs: Runs) -> None:
    before, after = sample_questions(_ids(), 0.25, 7), sample_questions(_ids(), 0.5, 7)
    assert after[:10] == before  # nested: nothing judged is dropped
    assert "cheap" not in runs.rerun_requests  # every cheap verdict is in the store
    assert Counter(runs.rerun_requests["strong"]) == dict.fromkeys(after[10:], 2 * 7)
    manifest = json.loads((runs.first / "run.json").read_text())
    assert manifest["calibration"]["questions"] == after
    assert manifest["calibration"]["fraction"] == 0.5
    calibrated = json.loads((runs.first / "calibrated.json").read_text())
    assert calibrated["sample"] == after
    assert {r["n_calibration"] for r in calibrated["rows"]} == {20}


@pytest.mark.parametrize("which", ["first", "rerun"])
def test_calibrated_scores_hold_the_truth_and_the_cheap_judges_do_not(
    runs: Runs, which: str
) -> None:
    # One fixed draw of answers and sample (the coverage over many draws is
    # test_coverage's): the truth is the strong judge's mean over every answer.
    truth = _truth(runs.truth)
    calibrated = (
        runs.calibrated
        if which == "first"
        else json.loads((runs.first / "calibrated.json").read_text())
    )
    assert (calibrated["judge"], calibrated["calibrated_with"]) == (CHEAP, STRONG)
    rows = {r["model"]: r for r in calibrated["rows"]}
    assert set(rows) == set(MODELS)
    for model, row in rows.items():
        assert row["n_answers"] == QUESTIONS
        assert row["ci_low"] <= truth[model] <= row["ci_high"], (model, truth[model], row)
        # The lenient judge's own mean is above the truth, and outside the interval.
        assert row["naive_judge"] > row["ci_high"], (model, row)


def test_the_calibrated_leaderboard_is_printed(runs: Runs) -> None:
    out = runs.printed.stdout
    assert f"{CHEAP} calibrated with {STRONG} on 10 of {QUESTIONS} questions" in out
    assert "Calibrated Gamut score (x100)" in out
    assert "Paired differences" in out
    assert "Leaderboard (Gamut score x100)" in out  # the naive scores too
    assert math.isclose(
        json.loads((runs.first / "run.json").read_text())["calibration"]["confidence"], 0.95
    )


def test_another_seed_or_strong_judge_is_refused(runs: Runs, tmp_path: Path) -> None:
    responses = runs.dataset.parent / "answers.jsonl"
    before = (runs.first / "run.json").read_bytes()
    for extra, asked in (
        (["--calibrate-with", STRONG, "--seed", "8"], f"{STRONG} seed 8"),
        (["--calibrate-with", "openai-api/fake/other", "--seed", "7"], "fake/other seed 7"),
    ):
        result = _run(
            runs.dataset, responses, runs.first, "--judge", CHEAP, *extra,
            "--calibrate-fraction", "0.5", "--no-probe",
        )  # fmt: skip
        assert result.exit_code == 2, result.output
        said = " ".join(result.output.split())
        assert f"calibration: {STRONG} seed 7 recorded, " in said
        assert f"{asked} asked" in said
    assert (runs.first / "run.json").read_bytes() == before


def test_the_sign_of_a_difference_without_spread_is_certain_or_undefined() -> None:
    import numpy as np

    from gamut_eval.calibration._calibrated import p_sign_right

    got = p_sign_right(np.array([0.2, 0.0, -0.5, 0.1]), np.array([0.0, 0.0, 0.5, 0.1]))
    assert got[0] == 1.0
    assert np.isnan(got[1])
    assert got[2] == pytest.approx(0.841344746, abs=1e-8)  # Φ(1)
    assert got[3] == pytest.approx(0.841344746, abs=1e-8)
