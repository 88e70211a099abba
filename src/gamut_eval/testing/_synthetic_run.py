"""A synthetic run folder, deterministic for a seed: the fake that tests and benchmarks use.

Writes what ``gamut run`` writes (dataset.jsonl, verdicts.jsonl, scores.jsonl, run.json)
for any number of models, judges, settings and questions, without any model or judge: a
verdict is drawn from a latent quality of (model, question, check) plus the judge's
leniency and noise, so judges agree partly, text-only scores higher, and some models
contradict more than others. At paper scale (14 models, 1,813 questions, 3 judges, 2
settings, about 30 checks per question) that is about 4.6 million verdict rows, written in
chunks so generating them stays within a few hundred MB.

Scores come from ``score_table`` on the generated verdicts, exactly as in a real run.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from gamut_eval._files import atomic_writer
from gamut_eval._tables import write_rows
from gamut_eval.analysis import VERDICT_ORDER, AuditReport
from gamut_eval.judge import JudgeSettings
from gamut_eval.rubric import TIERS
from gamut_eval.run import score_rows
from gamut_eval.scoring import Verdict, score_table

DOMAINS: tuple[str, ...] = (
    "plants", "food", "animals", "vehicles", "local places",
    "everyday objects", "consumer products", "landmarks", "art", "text",
)  # fmt: skip
"""The paper's ten domains of everyday life (names approximate)."""
_POPULARITY = ("head", "torso", "tail")
_VERDICTS = np.array([*VERDICT_ORDER, None], dtype=object)
"""By verdict code (worst first); code -1 (unscored) picks the last entry, null."""
_TEMPLATES = (
    "What is this {d}, where does it come from, and how is it made?",
    "What kind of {d} is this and what is it used for?",
    "How did this {d} get its shape, and what makes it unusual?",
    "Which {d} is this, and why do people seek it out?",
    "Where would you find this {d}, and how has it changed over time?",
)


_WORDS = (
    "red", "old", "tall", "small", "carved", "painted", "wooden", "metal", "glass", "stone",
    "woven", "ancient", "modern", "rare", "common", "local", "coastal", "alpine", "desert",
    "tropical", "urban", "rural", "festive", "daily", "sacred", "colourful", "plain",
    "striped", "spotted", "curved", "flat", "round", "square", "bright", "dark",
)  # fmt: skip


def _question_text(i: int, domain: str, rng: np.random.Generator, previous: str) -> str:
    """Varied questions; every 37th nearly repeats the one before (a near duplicate)."""
    if i % 37 == 1:
        return previous.replace("?", ", please?", 1)
    words = " ".join(rng.choice(_WORDS, size=3, replace=False))
    return _TEMPLATES[i % len(_TEMPLATES)].format(d=f"{words} {domain}")


def _dataset(
    questions: int, domains: Sequence[str], rng: np.random.Generator, tiers: npt.NDArray[np.object_]
) -> Iterator[dict[str, Any]]:
    """Valid records: ids, domains, popularity, question texts and a meta-rubric of one fact
    per check (``c-00``...), in the check's tier, so the checklist names every check."""
    text = ""
    for i in range(questions):
        qid = f"q-{i:05d}"
        domain = domains[i % len(domains)]
        text = _question_text(i, domain, rng, text)
        yield {
            "id": qid,
            "question": text,
            "entity": f"entity {i}",
            "domain": domain,
            "popularity": _POPULARITY[(i // len(domains)) % 3],
            "meta_rubric": {
                "id": qid,
                "question": text,
                "items": [
                    {
                        "id": f"c-{c:02d}",
                        "type": "fact",
                        "tier": tier,
                        "statement": f"States fact {c + 1} about entity {i}.",
                    }
                    for c, tier in enumerate(tiers[i])
                ],
            },
        }


def _latent(
    rng: np.random.Generator, shape: tuple[int, int, int, int], models: int
) -> npt.NDArray[np.float64]:
    """(S, M, Q, C) quality of each response's check; text-only adds 0.3-0.6."""
    settings, _, questions, checks = shape
    quality = np.linspace(0.9, -0.5, models)[None, :, None, None]
    difficulty = rng.normal(0, 0.5, size=(1, 1, questions, 1))
    check = rng.normal(0, 0.6, size=(1, 1, questions, checks))
    bonus = np.zeros((settings, models, 1, 1))
    if settings > 1:
        bonus[1] = rng.uniform(0.3, 0.6, size=(models, 1, 1))
    noise = rng.normal(0, 0.5, size=shape)
    return np.asarray(quality + difficulty + check + bonus + noise)


def _verdict_codes(
    rng: np.random.Generator, latent: npt.NDArray[np.float64], leniency: float, models: int
) -> npt.NDArray[np.int8]:
    """0 contradicts, 1 missing, 2 partially_meets, 3 meets; -1 unscored (0.3%)."""
    taste = rng.normal(0, 0.08, size=(1, models, 1, 1))  # how this judge sees each model
    seen = latent + leniency + taste + rng.normal(0, 0.35, size=latent.shape)
    codes = np.digitize(seen, [-1.4, 0.35, 0.6]).astype(np.int8)
    confident = np.linspace(0.02, 0.3, models)[::-1][None, :, None, None]
    flip = (codes == 1) & (rng.random(latent.shape) < confident)
    codes[flip] = 0
    codes[rng.random(latent.shape) < 0.003] = -1
    return codes


def synthetic_run(
    out_dir: str | Path,
    *,
    models: Sequence[str],
    judges: Sequence[str],
    questions: int,
    settings: Sequence[str] = ("multimodal", "text_only"),
    checks: int = 30,
    domains: Sequence[str] = DOMAINS,
    seed: int = 0,
    chunk_rows: int = 400_000,
    answers: bool = True,
    reasoning_chars: int = 0,
) -> Path:
    """Write a run folder and return it. Judge k is 0.15 * k more lenient than judge 0.

    With ``answers`` it holds responses.jsonl too: each answer is a few sentences from a
    fixed pool, and an explanation of a met (or contradicted) check quotes the start of one
    of that answer's sentences in double quotes, as real judges often do. With
    ``reasoning_chars``, each explanation goes on with about that many characters of
    reasoning, different in every row (real judges' explanations are long and distinct:
    about 600 characters makes a paper-scale verdicts.jsonl about 1.2 GB a judge)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    shape = (len(settings), len(models), questions, checks)
    latent = _latent(rng, shape, len(models))
    tiers = np.array([t.value for t in TIERS], dtype=object)[
        rng.choice(3, size=(questions, checks), p=[0.35, 0.4, 0.25])
    ]
    dataset_rng = np.random.default_rng([seed, 1])
    write_rows(out / "dataset.jsonl", _dataset(questions, domains, dataset_rng, tiers))
    sentences = _sentences(np.random.default_rng([seed, 2]), shape[:3])
    if answers:
        write_rows(out / "responses.jsonl", _responses(sentences, settings, models))
    frames = []
    with atomic_writer(out / "verdicts.jsonl") as handle:
        for j, judge in enumerate(judges):
            codes = _verdict_codes(rng, latent, 0.15 * j, len(models))
            frame = _frame(codes, settings, models, judge, tiers)
            texts = _explanations(codes, sentences)
            if reasoning_chars:
                texts = _with_reasoning(texts, reasoning_chars, np.random.default_rng([seed, 3, j]))
            _write_rows(handle, frame, chunk_rows, texts)
            frames.append(frame)
    scores = score_table(pd.concat(frames, ignore_index=True))
    write_rows(out / "scores.jsonl", score_rows(scores))
    _run_json(out, judges, models, settings, questions)
    _audit(out / "audit.json", judges[0])
    return out


def _categorical(codes: npt.NDArray[np.intp], names: Sequence[str]) -> pd.Categorical[str]:
    return pd.Categorical.from_codes(codes.astype(np.int64), categories=pd.Index(list(names)))


def _frame(
    codes: npt.NDArray[np.int8],
    settings: Sequence[str],
    models: Sequence[str],
    judge: str,
    tiers: npt.NDArray[np.object_],
) -> pd.DataFrame:
    """One judge's verdict rows, in (setting, model, question, check) order."""
    s, m, q, c = np.indices(codes.shape).reshape(4, -1)
    return pd.DataFrame(
        {
            "question_id": _categorical(q, [f"q-{i:05d}" for i in range(codes.shape[2])]),
            "model": _categorical(m, list(models)),
            "setting": _categorical(s, list(settings)),
            "judge": judge,
            "check_id": _categorical(c, [f"c-{k:02d}" for k in range(codes.shape[3])]),
            "tier": tiers[q, c],
            "verdict": _VERDICTS[codes.ravel()],
        }
    )


_SENTENCES_PER_ANSWER = 8
_POOL = 64


def _pool() -> list[str]:
    """The sentences answers are made of; each starts with a distinct 5-word phrase."""
    return [
        f"Sentence {k} says the {_WORDS[k % len(_WORDS)]} {_WORDS[(3 * k + 1) % len(_WORDS)]} "
        f"{DOMAINS[k % len(DOMAINS)]} is known for its history and its many uses, "
        "and people often mention it."
        for k in range(_POOL)
    ]


def _quote(sentence: str) -> str:
    return " ".join(sentence.split()[:5])


def _sentences(rng: np.random.Generator, shape: tuple[int, ...]) -> npt.NDArray[np.int64]:
    """(S, M, Q, sentences) pool indices: the sentences of each answer."""
    return rng.integers(0, _POOL, size=(*shape, _SENTENCES_PER_ANSWER))


def _responses(
    sentences: npt.NDArray[np.int64], settings: Sequence[str], models: Sequence[str]
) -> Iterator[dict[str, Any]]:
    pool = _pool()
    for s, m, q in np.ndindex(*sentences.shape[:3]):
        text = " ".join(pool[k] for k in sentences[s, m, q])
        yield {"question_id": f"q-{q:05d}", "model": models[m], "setting": settings[s],
               "response": text}  # fmt: skip


def _explanations(
    codes: npt.NDArray[np.int8], sentences: npt.NDArray[np.int64]
) -> npt.NDArray[np.object_]:
    """One explanation per verdict (codes' order): a quote of the answer for met, partly
    met and contradicted checks, a plain sentence for missing ones, none when unscored."""
    pool = _pool()
    said = np.array(
        [f'The answer says "{_quote(t)}", which covers the check.' for t in pool]
        + ["The answer does not state this.", ""],
        dtype=object,
    )
    slot = np.arange(codes.shape[3]) % _SENTENCES_PER_ANSWER
    picks = sentences[:, :, :, slot]  # (S, M, Q, C): the sentence each check would quote
    choice = np.where(codes == 1, _POOL, np.where(codes < 0, _POOL + 1, picks))
    out: npt.NDArray[np.object_] = said[choice.ravel()]
    return out


def _with_reasoning(
    texts: npt.NDArray[np.object_], chars: int, rng: np.random.Generator
) -> npt.NDArray[np.object_]:
    """Each text followed by about ``chars`` characters of reasoning, distinct per row."""
    clauses = [
        f"the {a} {b} detail in the answer {verb} what the check asks"
        for a in _WORDS
        for b in _WORDS[::3]
        for verb in ("matches", "partly covers", "leaves out", "goes against")
    ]
    per = max(1, round(chars / (len(clauses[0]) + 2)))
    picks = rng.integers(0, len(clauses), size=(len(texts), per))
    pool = np.array(clauses, dtype=object)
    tail = pool[picks[:, 0]]
    for k in range(1, per):
        tail = tail + "; " + pool[picks[:, k]]
    numbers = np.char.mod(" (point %d)", np.arange(len(texts))).astype(object)
    out: npt.NDArray[np.object_] = texts + " Reasoning: " + tail + numbers
    return out


def _write_rows(
    handle: IO[str], frame: pd.DataFrame, chunk_rows: int, explanations: npt.NDArray[np.object_]
) -> None:
    """JSON lines with the fields a real run writes (status, explanation, attempts...)."""
    out = frame.drop(columns="tier").astype(
        {"question_id": str, "model": str, "setting": str, "check_id": str}
    )
    unscored = out["verdict"].isna()
    out["status"] = unscored.map({True: "unscored", False: "ok"})
    out["reason"] = unscored.map({True: "unparseable judge reply", False: None})
    out["explanation"] = explanations
    out["attempts"] = np.where(unscored, 3, 1)
    for start in range(0, len(out), chunk_rows):
        text = out.iloc[start : start + chunk_rows].to_json(orient="records", lines=True)
        handle.write(text if text.endswith("\n") else text + "\n")


def _run_json(
    out: Path, judges: Sequence[str], models: Sequence[str], settings: Sequence[str], n: int
) -> None:
    config = {
        "dataset": str((out / "dataset.jsonl").resolve()),
        "questions": n,
        "models": list(models),
        "responses_from": "synthetic",
        "setting": "both" if len(settings) > 1 else settings[0],
        "judges": [{"judge": judge} for judge in judges],
        "scoring": {
            "lam": 0.5,
            "mu": -2.0,
            "weights": {"answer_critical": 0.6, "valuable": 0.3, "context": 0.1},
        },
    }
    with atomic_writer(out / "run.json") as handle:
        json.dump(config, handle, indent=2)
        handle.write("\n")


def _audit(path: Path, judge: str) -> None:
    """A judge audit as ``gamut audit-judge --out`` writes it: one null probe that passes and
    one injection probe that flips a tenth of the verdicts upwards."""

    def probe(name: str, kind: str, **rates: float | None) -> dict[str, object]:
        return {
            "name": name, "kind": kind, "description": name, "answers": 10, "checks": 300,
            "unscored": 0, "verdicts": {Verdict.MISSING.value: 300}, "examples": [],
            "flip_rate": rates.get("flip"), "upward_rate": rates.get("upward"),
            "null_pass_rate": rates.get("null"), "passed": name == "empty", "failures": [],
        }  # fmt: skip

    audit = AuditReport.model_validate(
        {
            "created_at": "2026-01-01T00:00:00Z",
            "passed": False,
            "settings": JudgeSettings(judge=judge).model_dump(),
            "dataset": "dataset.jsonl",
            "responses": None,
            "models": ["synthetic"],
            "setting": "multimodal",
            "thresholds": {},
            "clean": {
                "answers": 10,
                "checks": 300,
                "unscored": 0,
                "verdicts": {Verdict.MEETS.value: 300},
            },
            "failures": ["ignore_instructions: flip rate 10.0% is above 5.0%"],
            "probes": [
                probe("empty", "null", null=0.0),
                probe("ignore_instructions", "perturbation", flip=0.1, upward=0.1),
            ],
            "skipped": [],
            "null_pass_rate": 0.0,
            "worst_flip_rate": 0.1,
        }
    )
    with atomic_writer(path) as handle:
        handle.write(audit.model_dump_json(by_alias=True, indent=2))


def paper_questions(count: int = 1813, seed: int = 0) -> list[str]:
    """``count`` questions in four "What is this X ..." templates, as an LLM tends to write
    them (the question-diversity analysis at paper scale, in tests and benches)."""
    rng = random.Random(seed)
    frames = (
        "What is this {n}, how is it {v}, and why do people {w} it near {e}?",
        "What kind of {n} is this, and how is it {v} in {e}?",
        "How does this {n} get {v}, and what makes it differ from {e}?",
        "Which {n} is this, where is it {v}, and how has {e} changed?",
    )
    nouns = [f"noun{i}" for i in range(300)]
    verbs = [f"verb{i}" for i in range(20)]
    extra = [f"extra{i}" for i in range(3000)]
    return [
        rng.choice(frames).format(
            n=rng.choice(nouns), v=rng.choice(verbs), w=rng.choice(verbs), e=rng.choice(extra)
        )
        for _ in range(count)
    ]
