"""The built-in judges, ``gamut/offline`` and ``gamut/reference``, and their backends.

The offline judge: deterministic, no network, a low-fidelity stand-in for an LLM judge.
``grade_check`` grades a response against a ``Check`` with the structure the compiler put on
it (``target``, ``options``, ``at_least``): for "mentions at least N of the following" it
counts the listed options the response names; for an ordered sequence it compares the order
in which the steps are described; for everything else it looks for the content words of
what the check asks for. A check without that data (written or edited by hand) is graded
on the content words of its text. It cannot know facts, so the only contradiction it finds
is steps in the wrong order. Its one threshold (``MEETS_AT``) is fitted on the tuning half
of the sample's reference labels (``data.TUNING_QUESTIONS``); its agreement with the
held-out half is measured by the test suite and stated in docs/sample.md. The ``offline``
backend hands it each answer and check directly: no prompt is rendered,
so nothing in an answer can change which check is graded.

The reference judge (``gamut/reference``): the bundled sample's reference labels, replayed.
The sample ships a verdict for every (answer, check) pair of its illustrative answers
(``data/sample/gold.jsonl``). Those labels were written with the sample, alongside its
answers and rubrics; they are reference labels, not annotations by independent raters.
Replayed as a judge, they let a run compare another judge with them through the same
tables as any two judges (Table 2, per-check agreement).

A label is replayed only for the content it was written for: the question as asked in
its setting, the answer's exact text and the check's exact text. Any other (answer,
check) pair has no reference label and is left unscored with that reason, so the
reference judge never grades an answer it has not seen.

Revisions: the built-in judges' revisions are part of their store keys. A model judge's
verdict depends on the model and the prompt, which the store key hashes (judge id, prompt
version, question, answer, image, check text). A built-in judge's verdict also depends on
code or data that ships with the package: the offline judge's rules and threshold, the
reference judge's labels. Their revisions go into the key, so that a store filled by an
earlier version is not reused for verdicts this version would give differently (the checks
are simply graded again, which takes a second).

The backends. ``offline`` grades the built-in judge (``gamut/offline``) in process: each
pending check is graded by ``grade_check`` from the answer's text and the check's
structured data; the verdict is settled and recorded like any judge's reply, so the store,
the rows and the scores are the same as for a model judge. No prompt is rendered and no
request is sent. ``reference`` gives each pending check the bundled sample's reference
label for exactly that question, answer and check, settled and recorded like any judge's reply,
so the store, the rows, the scores and every report table treat it as one more judge. A
check without a label is unscored with the reason. Nothing is rendered or sent.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from gamut_eval.data import sample_dir
from gamut_eval.dataset import load_dataset
from gamut_eval.judge._client import Completion
from gamut_eval.judge._prompt import settle
from gamut_eval.judge._registry import OFFLINE_JUDGE, REFERENCE_JUDGE
from gamut_eval.judge._store import StoredVerdict
from gamut_eval.scoring import Verdict

if TYPE_CHECKING:
    from gamut_eval.judge._pass import JudgeWork
    from gamut_eval.judge._resolve import BackendOptions, ResolvedJudge
    from gamut_eval.rubric import Check

_WORD = re.compile(r"[a-z0-9]+(?:['-][a-z0-9]+)*")
# fmt: off
_STOP = frozenset((
    "a", "an", "the", "of", "and", "or", "to", "in", "on", "at", "by", "for", "with", "as", "is",
    "are", "was", "were", "be", "been", "being", "it", "its", "this", "that", "these", "those",
    "from", "into", "than", "then", "there", "their", "them", "they", "which", "who", "whom",
    "whose", "what", "when", "where", "how", "why", "about", "also", "very", "more", "most",
    "such", "other", "some", "any", "each", "both", "either", "usually", "often", "typically",
    "commonly", "generally", "can", "may", "might", "one", "two", "mentions", "mention", "names",
    "identifies", "identify", "states", "state", "explains", "explain", "notes", "note",
    "describes", "describe", "says", "say", "gives", "give", "answer", "response", "least",
    "following", "among", "related", "entity", "presents", "these", "steps", "relative", "order",
    "step", "part", "parts",
))
# fmt: on

MEETS_AT = 0.45
"""Share of a check's content words the response must contain: of the grid 0.30, 0.35, ...,
0.80, the value with the highest Cohen's kappa on the reference labels of the sample's
tuning half (``quality.fit_meets_at``; a test refits it). A band of "partially meets"
below it lowered agreement: word overlap cannot tell an imprecise statement from an
unrelated one."""


def _stem(word: str) -> str:
    """A crude stem: long words compared on their first six letters ("originated" and
    "origins" both give "origin"), plural s dropped from short ones."""
    if len(word) > 6:
        return word[:6]
    return word[:-1] if word.endswith("s") and len(word) > 3 else word


def _words(text: str) -> list[str]:
    return [_stem(w) for w in _WORD.findall(text.lower())]


def _content(text: str) -> list[str]:
    seen: dict[str, None] = {}
    for word in _words(text):
        if word not in _STOP and (len(word) > 2 or word.isdigit()):
            seen[word] = None
    return list(seen)


@dataclass(frozen=True)
class _Response:
    tokens: list[str]
    vocabulary: frozenset[str]

    @classmethod
    def of(cls, text: str) -> _Response:
        tokens = _words(text)
        return cls(tokens, frozenset(tokens))

    def coverage(self, key: Sequence[str]) -> float:
        return sum(w in self.vocabulary for w in key) / len(key) if key else 0.0

    def located(self, key: Sequence[str], window: int = 30) -> int | None:
        """Where ``key`` is described: the first position from which at least half of its
        words occur within ``window`` tokens (a lone early mention does not count)."""
        wanted = set(key)
        need = max(1, (len(wanted) + 1) // 2)
        hits = [i for i, t in enumerate(self.tokens) if t in wanted]
        for start in hits:
            found = {self.tokens[i] for i in hits if start <= i < start + window}
            if len(found) >= need:
                return start
        return None


def _present(response: _Response, text: str) -> float:
    return response.coverage(_content(text))


def _by_coverage(response: _Response, text: str, meets_at: float) -> tuple[Verdict, str]:
    key = _content(text)
    if not key:
        return Verdict.MISSING, "nothing to look for"
    covered = response.coverage(key)
    verdict = Verdict.MEETS if covered >= meets_at else Verdict.MISSING
    return verdict, f"{covered:.0%} of the key words found"


def _threshold(
    response: _Response, n: int, options: Sequence[str], meets_at: float
) -> tuple[Verdict, str]:
    named = [o for o in options if _present(response, o) >= meets_at]
    verdict = Verdict.MEETS if len(named) >= n else Verdict.MISSING
    return verdict, f"names {len(named)} listed options (needs {n})"


def _sequence(response: _Response, steps: Sequence[str], meets_at: float) -> tuple[Verdict, str]:
    keys = [_content(s) for s in steps]
    # Words shared by several steps say nothing about where one step is mentioned.
    counts = Counter(word for key in keys for word in key)
    positions = [
        response.located([w for w in key if counts[w] == 1] or key)
        if _present(response, step) >= meets_at
        else None
        for step, key in zip(steps, keys, strict=True)
    ]
    found = [p for p in positions if p is not None]
    if len(found) < len(steps):
        if len(found) >= max(2, len(steps) // 2) and found == sorted(found):
            return Verdict.PARTIALLY_MEETS, f"{len(found)} of {len(steps)} steps found, in order"
        return Verdict.MISSING, f"{len(found)} of {len(steps)} steps found"
    if found == sorted(found):
        return Verdict.MEETS, "every step found, in this order"
    return Verdict.CONTRADICTS, "every step found, but not in this order"


_THRESHOLDS = frozenset(("list_threshold", "coverage_threshold"))
_SEQUENCES = frozenset(("sequence", "sequence_full"))


def grade_check(
    response_text: str, check: Check, *, meets_at: float = MEETS_AT
) -> tuple[Verdict, str]:
    """Verdict and explanation for one check, from its structured data; deterministic.

    A threshold or coverage check counts the ``options`` the response names against
    ``at_least``; a sequence check compares the order of its ``options`` (the steps); any
    other check looks for the content words of its ``target``. A check without structured
    data (a hand-written or edited one) is graded on the content words of its ``text``.
    ``meets_at``: the share of content words that counts as present (fitting it is the
    only reason to pass another value).
    """
    response = _Response.of(response_text)
    if not response.tokens:
        return Verdict.MISSING, "empty response"
    kind = str(check.kind)
    if kind in _THRESHOLDS and check.options and check.at_least is not None:
        return _threshold(response, check.at_least, check.options, meets_at)
    if kind in _SEQUENCES and check.options:
        return _sequence(response, check.options, meets_at)
    return _by_coverage(
        response, check.target if check.target is not None else check.text, meets_at
    )


NO_LABEL = (
    "no reference label: gamut/reference replays the bundled sample's labels, and this "
    "question, answer and check are not the sample's"
)
"""Why a check the reference judge cannot grade is unscored."""

ContentKey = tuple[str, str, str]
"""(question as asked, answer text, check text)."""


class ReferenceLabels:
    """Reference verdicts by the content they were written for."""

    def __init__(self, labels: dict[ContentKey, str]) -> None:
        self._labels = labels

    def __len__(self) -> int:
        return len(self._labels)

    def verdict(self, question: str, answer: str, check_text: str) -> str | None:
        """The reference verdict of this (question, answer, check), or None."""
        return self._labels.get((question, answer, check_text))

    @classmethod
    def from_folder(cls, folder: Path) -> ReferenceLabels:
        """Labels of a sample folder: ``dataset.jsonl``, ``responses.jsonl`` and
        ``gold.jsonl`` (one row per question, model, setting and check id)."""
        dataset = load_dataset(folder / "dataset.jsonl")
        records = dataset.by_id()
        checks = {
            (qid, check.id): check.text
            for qid, checklist in dataset.checklists().items()
            for check in checklist.checks
        }
        answers = {}
        for row in _rows(folder / "responses.jsonl"):
            answers[(row["question_id"], row["model"], row["setting"])] = row["response"]
        labels: dict[ContentKey, str] = {}
        for row in _rows(folder / "gold.jsonl"):
            qid, setting = row["question_id"], row["setting"]
            key = (
                records[qid].question_for(setting),
                answers[(qid, row["model"], setting)],
                checks[(qid, row["check_id"])],
            )
            if labels.setdefault(key, row["verdict"]) != row["verdict"]:
                raise ValueError(f"{folder / 'gold.jsonl'}: two labels for one content: {key}")
        return cls(labels)


def _rows(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


@lru_cache(maxsize=1)
def reference_labels() -> ReferenceLabels:
    """The bundled sample's reference labels (read once per process)."""
    return ReferenceLabels.from_folder(sample_dir())


OFFLINE_RULES = 2
"""Revision of the offline judge's rules; raise it when a change to them changes verdicts
(the threshold is part of the key on its own)."""


@lru_cache(maxsize=1)
def _labels_digest() -> str:
    return hashlib.sha256((sample_dir() / "gold.jsonl").read_bytes()).hexdigest()[:16]


def keyed_judge(judge: str) -> str:
    """The judge as the store key names it: a built-in judge with its revision
    (``gamut/offline@rules-2,meets-at-0.45``, ``gamut/reference@labels-<sha256>``),
    any other judge as given."""
    if judge == OFFLINE_JUDGE:
        return f"{judge}@rules-{OFFLINE_RULES},meets-at-{MEETS_AT}"
    if judge == REFERENCE_JUDGE:
        return f"{judge}@labels-{_labels_digest()}"
    return judge


def _offline(question: str, text: str, check: Check) -> Completion:
    verdict, why = grade_check(text, check)
    return Completion(json.dumps({"explanation": why, "verdict": verdict}))


EXPLANATION = "reference label written with the sample"


def _reference(question: str, text: str, check: Check) -> Completion | str:
    verdict = reference_labels().verdict(question, text, check.text)
    if verdict is None:
        return NO_LABEL
    return Completion(json.dumps({"explanation": EXPLANATION, "verdict": verdict}))


@dataclass
class BuiltinBackend:
    """Grades every pending check in process (``grade``: the offline rules, or the
    sample's reference labels); deterministic and instant."""

    judge: ResolvedJudge
    name: str
    grade: Callable[[str, str, Check], Completion | str]
    """(question as asked, answer text, check) -> the reply, or why it is unscored."""
    writes_store: bool = True
    exports_rows: bool = True
    probed: bool = False

    async def run(self, work: JudgeWork) -> None:
        for answer in work.pending():
            question, text = answer.plan.question, answer.plan.row.response
            for key, check in answer.checks:
                row = settle(key, self.grade(question, text, check), None, work.settings)
                assert isinstance(row, StoredVerdict)  # a verdict or a reason is never re-asked
                work.record(row)


def offline_backend(judge: ResolvedJudge, options: BackendOptions) -> BuiltinBackend:
    return BuiltinBackend(judge, "offline", _offline)


def reference_backend(judge: ResolvedJudge, options: BackendOptions) -> BuiltinBackend:
    return BuiltinBackend(judge, "reference", _reference)
