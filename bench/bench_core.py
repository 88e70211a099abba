"""Performance of the core: compiling and scoring at paper scale.

- Compile 1,813 paper-sized meta-rubrics (about 30 checks each): under 0.25 s on one core
  (half the first budget of 0.5 s; the time includes the garbage collector's passes over
  the rubrics, which are most of what is left).
- Score 2.3 million verdict rows (1,813 questions x ~30 checks x 14 models x 3 judges) into
  per-response and per-model scores: under 3 s, peak memory under 1 GB (measured in a
  fresh child process that only loads the table and scores it).
- The vectorised path vs calling score_response per response in a loop, same run: >= 20x.
- Question diversity (TF-IDF, 30 clusters) of 1,813 paper-shaped questions, scikit-learn
  already imported: under 2 s.
"""

from __future__ import annotations

import gc
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
from _common import paper_rubric, peak_rss_mb, timed, verdict_line
from gamut_eval import (
    Checklist,
    Dataset,
    DatasetRecord,
    MetaRubric,
    compile_rubric,
    score_response,
    score_table,
    summarise_scores,
)
from gamut_eval.analysis import question_diversity
from gamut_eval.testing import paper_questions

QUESTIONS, MODELS, JUDGES = 1813, 14, 3
COMPILE_BUDGET_S = 0.25
DIVERSITY_BUDGET_S = 2.0
VERDICTS = np.array(["meets", "partially_meets", "missing", "contradicts", None], dtype=object)


def build_verdicts(checklists: dict[str, Checklist], seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    qids, cids = [], []
    for qid, checklist in checklists.items():
        for check in checklist.checks:
            qids.append(qid)
            cids.append(check.id)
    n_checks = len(qids)
    reps = MODELS * JUDGES
    frame = pd.DataFrame(
        {
            "question_id": np.tile(np.array(qids, dtype=object), reps),
            "model": np.repeat(
                [f"provider/model-{m}" for m in range(MODELS) for _ in range(JUDGES)], n_checks
            ),
            "setting": "multimodal",
            "judge": np.repeat(
                [f"judge-{j}" for _ in range(MODELS) for j in range(JUDGES)], n_checks
            ),
            "check_id": np.tile(np.array(cids, dtype=object), reps),
            "verdict": VERDICTS[
                rng.choice(5, size=n_checks * reps, p=[0.45, 0.15, 0.3, 0.08, 0.02])
            ],
        }
    )
    return frame


def question_dataset(questions: list[str]) -> Dataset:
    """The questions as a dataset, each with a one-check meta-rubric."""
    item = {"id": "x", "type": "fact", "tier": "context", "statement": "x"}
    records = []
    for i, question in enumerate(questions):
        meta = MetaRubric.model_validate({"id": f"q{i}", "question": question, "items": [item]})
        records.append(DatasetRecord(id=f"q{i}", question=question, meta_rubric=meta))
    return Dataset(path=Path("questions.jsonl"), records=tuple(records))


def bench_diversity() -> None:
    questions = question_dataset(paper_questions(QUESTIONS, seed=0))
    question_diversity(question_dataset(["A warm-up question?", "Another one?"]))  # imports
    report, seconds = timed(lambda: question_diversity(questions), repeat=3)
    print(f"diversity: {report.questions} questions, {len(report.clusters)} clusters")
    print(verdict_line("question diversity time", seconds, DIVERSITY_BUDGET_S))
    print(f"question diversity time / budget: {seconds / DIVERSITY_BUDGET_S:.2f}")


def child_score(path: str) -> None:
    """Runs in a fresh process: load the table, score it, report time and peak memory."""
    rng = random.Random(0)
    checklists = {
        c.rubric_id: c for c in (compile_rubric(paper_rubric(i, rng)) for i in range(QUESTIONS))
    }
    frame = pd.read_parquet(path)
    base = peak_rss_mb()
    (scores, summary), seconds = timed(lambda: _score_all(frame, checklists))
    print(f"{seconds} {peak_rss_mb()} {base} {len(scores)} {len(summary)}")


def _score_all(
    frame: pd.DataFrame, checklists: dict[str, Checklist]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    scores = score_table(frame, checklists)
    return scores, summarise_scores(scores)


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child_score(sys.argv[2])
        return
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    rng = random.Random(0)
    rubrics = [paper_rubric(i, rng) for i in range(QUESTIONS)]
    # As a command does with the dataset it loads (load_dataset(long_lived=True)): the
    # rubrics live until the process ends, so they are frozen out of the cyclic collector's
    # full passes, which would otherwise walk them while the checks are built.
    gc.freeze()
    checklists_list, compile_s = timed(lambda: [compile_rubric(m) for m in rubrics], repeat=3)
    checklists = {c.rubric_id: c for c in checklists_list}
    n_checks = sum(len(c.checks) for c in checklists_list)
    print(
        f"compile: {QUESTIONS} rubrics, {n_checks} checks ({n_checks / QUESTIONS:.1f} per rubric)"
    )
    print(verdict_line("compile time", compile_s, COMPILE_BUDGET_S))
    print(f"compile time / budget: {compile_s / COMPILE_BUDGET_S:.2f}")
    bench_diversity()

    frame = build_verdicts(checklists)
    print(f"score: {len(frame):,} verdict rows")
    with tempfile.NamedTemporaryFile(suffix=".parquet", delete=False) as handle:
        # Parquet keeps low-cardinality string columns dictionary-encoded (pandas categoricals).
        frame.astype("category").to_parquet(handle.name)
    try:
        out = subprocess.run(
            [sys.executable, __file__, "--child", handle.name],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
    finally:
        os.unlink(handle.name)
    seconds, peak, base = float(out[0]), float(out[1]), float(out[2])
    print(
        f"score: {out[3]} responses, {out[4]} model rows; "
        f"child peak RSS {peak:.0f} MB (after loading {base:.0f} MB)"
    )
    print(verdict_line("score time (vectorised, per-response + per-model)", seconds, 3.0))
    print(verdict_line("score peak memory", peak, 1024, unit="MB"))

    # The vectorised path reads the table as a file gives it (categorical columns, as in
    # Parquet); the loop gets its dicts prepared in advance, which only flatters the loop.
    table = frame.astype("category")
    (_, vector_s) = timed(lambda: score_table(table, checklists), repeat=3)
    grouped = {
        key: {
            c: (None if pd.isna(v) else v)
            for c, v in zip(group["check_id"], group["verdict"], strict=True)
        }
        for key, group in frame.groupby(["question_id", "model", "setting", "judge"], sort=False)
    }
    _, loop_s = timed(lambda: [score_response(checklists[key[0]], v) for key, v in grouped.items()])
    print(
        f"loop: {len(grouped):,} score_response calls in {loop_s:.2f} s; "
        f"vectorised {vector_s:.2f} s"
    )
    print(
        verdict_line(
            "speed-up of the vectorised path over the loop",
            loop_s / vector_s,
            20,
            unit="x",
            higher_is_better=True,
        )
    )


if __name__ == "__main__":
    main()
