"""Build the bundled sample benchmark from its sources in ``sample/<question id>/``.

Each question folder holds ``record.yaml`` (the dataset record with its meta-rubric and an
``image`` file name in the folder), ``answers.yaml`` (illustrative answers of the sample
systems in both settings) and ``gold.yaml`` (the reference labels written with the sample,
not annotations by independent raters: system -> setting ->
check id -> verdict). This script validates all of it and writes the package data in
``src/gamut_eval/data/sample/``: ``dataset.jsonl``, ``responses.jsonl``, ``gold.jsonl`` and
``images/``. ``--check`` validates and compares with the built files without writing.

    python scripts/build_sample.py [--check] [--only QID]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import yaml

from gamut_eval import compile_rubric, validate_meta_rubric

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ROOT / "sample"
OUT = ROOT / "src" / "gamut_eval" / "data" / "sample"
SYSTEMS = ("sample/thorough", "sample/brief", "sample/confused")
SETTINGS = ("multimodal", "text_only")
VERDICTS = {"meets", "partially_meets", "missing", "contradicts"}
RECORD_KEYS = {
    "id",
    "domain",
    "popularity",
    "entity",
    "question",
    "question_text_only",
    "image",
    "image_credit",
    "meta_rubric",
}


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def build_question(
    folder: Path,
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], Path, list[str]]:
    """One question's dataset row, response rows, gold rows, image path, and problems found."""
    problems: list[str] = []
    record = _load(folder / "record.yaml")
    qid = folder.name
    if set(record) != RECORD_KEYS:
        problems.append(
            f"record.yaml keys {sorted(set(record) ^ RECORD_KEYS)} missing or unexpected"
        )
    if record.get("id") != qid:
        problems.append(f"record id {record.get('id')!r} must equal the folder name {qid!r}")
    meta = validate_meta_rubric(
        record["meta_rubric"], file=folder / "record.yaml", prefix="meta_rubric"
    )
    if meta.id != qid or meta.question != record["question"]:
        problems.append(
            "meta_rubric.id and meta_rubric.question must equal the record's id and question"
        )
    checks = [c.id for c in compile_rubric(meta).checks]
    image = folder / record["image"]
    if not image.is_file():
        problems.append(f"image {image} not found")
    row = {
        "id": qid,
        "question": record["question"],
        "question_text_only": record["question_text_only"],
        "entity": record["entity"],
        "domain": record["domain"],
        "popularity": record["popularity"],
        "image": f"images/{qid}{image.suffix}",
        "meta_rubric": record["meta_rubric"],
        "metadata": {"image_credit": record["image_credit"]},
    }
    answers = _load(folder / "answers.yaml")
    responses = []
    pairs = set()
    for answer in answers:
        pairs.add((answer["model"], answer["setting"]))
        responses.append(
            {
                "question_id": qid,
                "model": answer["model"],
                "setting": answer["setting"],
                "response": answer["response"].strip(),
                "metadata": {"illustrative": True, "note": "written for the sample benchmark"},
            }
        )
    expected = {(m, s) for m in SYSTEMS for s in SETTINGS}
    if pairs != expected or len(answers) != len(expected):
        problems.append(
            f"answers.yaml must have exactly one answer per system and setting; got {sorted(pairs)}"
        )
    gold_src = _load(folder / "gold.yaml")
    gold = []
    for model in SYSTEMS:
        for setting in SETTINGS:
            labels = (gold_src.get(model) or {}).get(setting) or {}
            if set(labels) != set(checks):
                missing = sorted(set(checks) - set(labels))
                extra = sorted(set(labels) - set(checks))
                problems.append(f"gold {model}/{setting}: missing {missing}, unknown {extra}")
            for check_id in checks:
                verdict = labels.get(check_id)
                if verdict not in VERDICTS:
                    problems.append(f"gold {model}/{setting}/{check_id}: bad verdict {verdict!r}")
                gold.append(
                    {
                        "question_id": qid,
                        "model": model,
                        "setting": setting,
                        "check_id": check_id,
                        "verdict": verdict,
                    }
                )
    return row, responses, gold, image, problems


def candidates(dataset: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Candidate questions over the sample's images (sample/candidates.yaml), as rows of
    `gamut build questions`, for trying the review app's question round."""
    proposed = _load(SOURCES / "candidates.yaml")
    rows = []
    for record in dataset:
        questions = proposed.get(record["id"]) or []
        for n, question in enumerate(questions, start=1):
            rows.append(
                {
                    "candidate_id": f"{record['id']}-c{n}",
                    "image": record["image"],
                    "image_id": record["id"],
                    "entity": record["entity"],
                    "domain": record["domain"],
                    "popularity": record["popularity"],
                    "question": question,
                    "model": "sample/illustrative",
                    "prompt_version": "sample",
                }
            )
    unknown = sorted(set(proposed) - {r["id"] for r in dataset})
    if unknown:
        raise ValueError(f"candidates.yaml names questions the sample lacks: {unknown}")
    return rows


def _jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="validate and compare, write nothing")
    parser.add_argument("--only", help="validate one question folder only (no writing)")
    args = parser.parse_args()
    folders = sorted(p for p in SOURCES.iterdir() if p.is_dir() and (p / "record.yaml").exists())
    if args.only:
        folders = [SOURCES / args.only]
    dataset, responses, gold, images, problems = [], [], [], [], []
    for folder in folders:
        try:
            row, resp, labels, image, found = build_question(folder)
        except Exception as exc:  # report every folder, not just the first broken one
            problems.append(f"{folder.name}: {exc}")
            continue
        problems += [f"{folder.name}: {p}" for p in found]
        dataset.append(row)
        responses += resp
        gold += labels
        images.append((image, row["image"]))
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 2
    print(f"{len(dataset)} questions, {len(responses)} answers, {len(gold)} reference labels")
    if args.only:
        return 0
    files = {
        "candidates.jsonl": _jsonl(candidates(dataset)),
        "dataset.jsonl": _jsonl(dataset),
        "responses.jsonl": _jsonl(responses),
        "gold.jsonl": _jsonl(gold),
    }
    if args.check:
        stale = [
            n
            for n, text in files.items()
            if not (OUT / n).exists() or (OUT / n).read_text() != text
        ]
        stale += [
            dst
            for src, dst in images
            if not (OUT / dst).exists() or (OUT / dst).read_bytes() != src.read_bytes()
        ]
        if stale:
            print(f"out of date: {stale}; run python scripts/build_sample.py", file=sys.stderr)
            return 1
        return 0
    (OUT / "images").mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (OUT / name).write_text(text, encoding="utf-8")
    for src, dst in images:
        shutil.copyfile(src, OUT / dst)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
