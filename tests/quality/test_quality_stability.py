"""``gamut stability`` against the fake server, with a judge that flips a known set of checks
from one call to the next."""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from quality_helpers import JUDGE, StartServer, fact_record, invoke, write_jsonl

from gamut_eval.dataset import load_dataset
from gamut_eval.judge import JudgeSettings
from gamut_eval.quality import judge_stability
from gamut_eval.testing import FaultRule, RequestContext, parse_judge_prompt, verdict_json

AC = "answer_critical"
WORDS = ("amber", "basalt", "cobalt", "dahlia", "ember")
RECORD = fact_record("q1", {f"c{i}": (AC, f"Mentions {w}.") for i, w in enumerate(WORDS, 1)})
ANSWER_A = "amber basalt cobalt"
ANSWER_B = "amber"
UNSTABLE = {(ANSWER_A, "dahlia"), (ANSWER_A, "ember"), (ANSWER_B, "ember")}
"""3 of the 10 (answer, check) pairs; the other 7 are stable."""


class FlipPolicy:
    """Stable checks: meets when the answer names the check's word, else missing.
    ``UNSTABLE`` pairs alternate: meets on odd calls, missing on even ones."""

    def __init__(self) -> None:
        self.calls: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()

    def __call__(self, request: dict[str, Any], ctx: RequestContext) -> str:
        prompt = parse_judge_prompt(request)
        assert prompt is not None
        word = re.findall(r"Mentions (\w+)\.", prompt.check)[0]
        pair = (prompt.response, word)
        with self._lock:
            self.calls[pair] += 1
            call = self.calls[pair]
        if pair in UNSTABLE:
            return verdict_json("meets" if call % 2 else "missing", "flips")
        return verdict_json("meets" if word in prompt.response.split() else "missing", "stable")


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    dataset = write_jsonl(tmp_path / "dataset.jsonl", [RECORD])
    responses = write_jsonl(
        tmp_path / "responses.jsonl",
        [
            {"question_id": "q1", "model": "A", "setting": "multimodal", "response": ANSWER_A},
            {"question_id": "q1", "model": "B", "setting": "multimodal", "response": ANSWER_B},
        ],
    )
    return dataset, responses


def test_flip_rate_kappa_and_spread_by_hand(serve: StartServer, files: tuple[Path, Path]) -> None:
    policy = FlipPolicy()
    serve(policy)
    dataset, responses = files
    result = invoke(
        "stability", "--judge", JUDGE, "--backend", "fast", "--repeats", "3",
        "--dataset", str(dataset), "--responses", str(responses), "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    # Every repeat is a distinct run: each of the 10 pairs was asked 3 times, none cached.
    assert set(policy.calls.values()) == {3}
    assert (report["repeats"], report["checks"], report["compared"]) == (3, 10, 10)
    assert report["unscored"] == [0, 0, 0]
    # 3 unstable pairs of 10.
    assert report["flip_rate"] == pytest.approx(0.3)
    assert report["flip_rate_by_tier"] == {"answer_critical": pytest.approx(0.3)}
    assert sorted((f["model"], f["check_id"], *f["verdicts"]) for f in report["flipped"]) == [
        ("A", "c4", "meets", "missing", "meets"),
        ("A", "c5", "meets", "missing", "meets"),
        ("B", "c5", "meets", "missing", "meets"),
    ]
    # Repeats 1 and 3: meets 7 (A1-5, B1, B5), missing 3. Repeat 2: meets 4, missing 6.
    # kappa(1,2): p_o = 7/10, p_e = (7*4 + 3*6)/100 = 0.46, kappa = 0.24/0.54 = 4/9.
    # kappa(1,3) = 1; kappa(2,3) = 4/9. Mean (4/9 + 1 + 4/9)/3 = 17/27.
    kappas = {(p["first"], p["second"]): p["kappa"] for p in report["pairwise_kappa"]}
    assert kappas == {
        (1, 2): pytest.approx(4 / 9),
        (1, 3): pytest.approx(1.0),
        (2, 3): pytest.approx(4 / 9),
    }
    assert report["mean_kappa"] == pytest.approx(17 / 27)
    # All checks answer_critical, so Gamut = share of meets. A: 5/5, 3/5, 5/5; B: 2/5, 1/5, 2/5.
    # std (n - 1) of A: mean 13/15, deviations 2/15, -4/15, 2/15 -> sqrt((24/225)/2) = 0.23094.
    spread = {s["model"]: s for s in report["score_spread"]}
    assert spread["A"]["scores"] == pytest.approx([1.0, 0.6, 1.0])
    assert (spread["A"]["min"], spread["A"]["max"]) == pytest.approx((0.6, 1.0))
    assert spread["A"]["std"] == pytest.approx((12 / 225) ** 0.5)
    assert spread["B"]["scores"] == pytest.approx([0.4, 0.2, 0.4])
    assert spread["B"]["std"] == pytest.approx((3 / 225) ** 0.5)
    assert report["settings"]["temperature"] == 0.0


def test_a_stable_judge_flips_nothing(serve: StartServer, files: tuple[Path, Path]) -> None:
    serve("keyword")
    dataset, responses = files
    settings = JudgeSettings(judge=JUDGE, backend="fast", concurrency=4)
    report = judge_stability(load_dataset(dataset), responses, settings, repeats=2)
    assert report.flip_rate == 0.0
    assert report.flipped == []
    assert [p.kappa for p in report.pairwise_kappa] == [1.0]
    assert all(s.std == 0.0 for s in report.score_spread)


def test_kept_store_dir_resumes_each_repeat_without_new_requests(
    serve: StartServer, files: tuple[Path, Path], tmp_path: Path
) -> None:
    server = serve(FlipPolicy())
    dataset, responses = files
    settings = JudgeSettings(judge=JUDGE, backend="fast", concurrency=4)
    stores = tmp_path / "stores"
    first = judge_stability(load_dataset(dataset), responses, settings, 2, store_dir=stores)
    assert sorted(p.name for p in stores.glob("*.sqlite")) == ["repeat-1.sqlite", "repeat-2.sqlite"]
    asked = len(server.requests)
    again = judge_stability(load_dataset(dataset), responses, settings, 2, store_dir=stores)
    assert len(server.requests) == asked == 20
    assert again.flipped == first.flipped


def test_tables_and_exit_codes(serve: StartServer, files: tuple[Path, Path]) -> None:
    serve(FlipPolicy())
    dataset, responses = files
    args = ["stability", "--judge", JUDGE, "--backend", "fast", "--dataset", str(dataset)]
    shown = invoke(*args, "--responses", str(responses), "--repeats", "2")
    assert shown.exit_code == 0, shown.output
    assert "Flip rate 30.0%" in " ".join(shown.stdout.split())
    assert "Flipped checks" in shown.stdout
    assert invoke(*args, "--repeats", "1").exit_code == 2  # at least two repeats
    missing = invoke(*args)
    assert missing.exit_code == 2
    assert "--responses is required" in missing.stderr


def test_unscored_checks_are_left_out_and_fail_the_run(
    serve: StartServer, files: tuple[Path, Path]
) -> None:
    server = serve(FlipPolicy())
    # The provider rejects both "ember" checks (400: not retried): unscored in every repeat.
    server.set_faults([FaultRule("http_400", contains="Mentions ember.")])
    dataset, responses = files
    result = invoke(
        "stability", "--judge", JUDGE, "--backend", "fast", "--repeats", "2",
        "--dataset", str(dataset), "--responses", str(responses), "--json",
    )  # fmt: skip
    assert result.exit_code == 1
    assert "2 of 10 checks unscored" in " ".join(result.stderr.split())
    report = json.loads(result.stdout)  # the report is shown before the failure
    assert report["unscored"] == [2, 2]
    assert report["compared"] == 8
    # Of the 8 compared, only A/dahlia is unstable: 1/8.
    assert report["flip_rate"] == pytest.approx(1 / 8)
