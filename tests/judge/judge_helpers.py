"""Shared builders for the judge tests: small datasets, responses files, a recording policy.

Imported by the ``test_judge_*`` modules of this directory (pytest's default ``prepend``
import mode puts the directory on ``sys.path``); fixtures live in ``conftest.py``.
"""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gamut_eval.dataset import Dataset, load_dataset
from gamut_eval.judge import (
    BackendOptions,
    JudgeReport,
    JudgeSettings,
    OpenAIExecutor,
    judge_key,
    judge_responses,
    make_backend,
    resolve_endpoint,
)
from gamut_eval.testing import FakeOpenAIServer, KeywordPolicy, RequestContext

JUDGE = "openai-api/fake/fake-judge"
"""The judge as users name it; the fake server's URL comes from ``FAKE_BASE_URL``."""

ROOT = Path(__file__).resolve().parents[2]

StartServer = Callable[..., FakeOpenAIServer]
"""The ``serve`` fixture: start a fake judge server (policy, faults, latency_ms, api_key,
reply_tokens)."""

# -- datasets -------------------------------------------------------------------------------

# Every check names two distinct keywords, so the keyword stand-in judge gives "meets" when
# a response has both, "partially_meets" for one and "missing" for none.
_WORDS = (
    "amber basalt cobalt dahlia ember fjord garnet harbor indigo jasper kestrel lagoon "
    "marble nectar orchid pewter quartz russet saffron tundra umber velvet willow zephyr "
    "almond birch cedar dune falcon glacier heron iris juniper kelp lotus meadow nutmeg "
    "olive pepper quill raven sage thistle umbra violet walnut yarrow acorn bramble canyon "
    "delta fennel grotto hazel ivory"
)
VOCABULARY = tuple(_WORDS.split())


def fact_record(qid: str, question: str, facts: Mapping[str, str], **extra: Any) -> dict[str, Any]:
    """A dataset record whose meta-rubric has one ``fact`` item per entry of ``facts``."""
    items = [
        {"id": item, "type": "fact", "tier": "answer_critical" if i == 0 else "valuable"}
        | {"statement": statement}
        for i, (item, statement) in enumerate(facts.items())
    ]
    meta = {"id": qid, "question": question, "items": items}
    return {"id": qid, "question": question, "meta_rubric": meta, "entity": "a thing", **extra}


def synthetic_records(n_questions: int, n_checks: int) -> list[dict[str, Any]]:
    """``n_questions`` records of ``n_checks`` fact checks, each check two unique keywords."""
    words = iter(VOCABULARY)
    records = []
    for q in range(n_questions):
        facts = {f"c{k}": f"Mentions {next(words)} and {next(words)}." for k in range(n_checks)}
        records.append(fact_record(f"q-{q}", f"What is shown in picture {q}?", facts))
    return records


def check_words(record: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The two keywords of each check of a synthetic record, in order."""
    out = []
    for item in record["meta_rubric"]["items"]:
        first, second = re.findall(r"Mentions (\w+) and (\w+)\.", item["statement"])[0]
        out.append((first, second))
    return out


def synthetic_responses(
    records: list[dict[str, Any]], n_models: int, setting: str = "multimodal"
) -> list[dict[str, Any]]:
    """One response per (record, model); which keywords it names varies, so verdicts mix."""
    rows = []
    for q, record in enumerate(records):
        pairs = check_words(record)
        for m in range(n_models):
            said = []
            for k, (first, second) in enumerate(pairs):
                pick = (q + m + k) % 3  # 0: both words, 1: one word, 2: neither
                said += [first, second] if pick == 0 else [first] if pick == 1 else []
            text = f"Answer number {m} to question {q}: " + ", ".join(said) + "."
            rows.append(response_row(record["id"], f"lab/model-{m}", text, setting))
    return rows


def response_row(
    question_id: str, model: str, response: str, setting: str = "multimodal"
) -> dict[str, Any]:
    return {"question_id": question_id, "model": model, "setting": setting, "response": response}


def write_jsonl(path: Path, rows: Iterable[Mapping[str, Any] | str]) -> Path:
    """One JSON object (or a raw string, written as is) per line, newline-terminated."""
    lines = [row if isinstance(row, str) else json.dumps(row) for row in rows]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


PANDA = fact_record(
    "q-panda",
    "What is this animal and what does it eat?",
    {
        "identity": "Identifies the animal as a red panda.",
        "diet": "States that it eats mostly bamboo leaves and shoots.",
        "range": "Mentions the eastern Himalayas as its native range.",
    },
)
MOKA = fact_record(
    "q-moka",
    "What is this object and how does it work?",
    {
        "identity": "Identifies the object as a moka pot.",
        "steam": "Explains that steam pressure pushes water up through the coffee grounds.",
    },
)
SMALL_RESPONSES = [
    response_row(
        "q-panda",
        "lab/alpha",
        "A red panda from the eastern Himalayas; it eats bamboo leaves and shoots.",
    ),
    response_row("q-panda", "lab/beta", "Probably a raccoon. It eats fruit.", "text_only"),
    response_row("q-moka", "lab/alpha", "A moka pot: steam pressure pushes water up."),
    response_row("q-moka", "lab/beta", "A kettle.", "text_only"),
]
"""2 questions, 4 responses, 10 checks, with a mix of keyword-judge verdicts."""


# -- running the judge ----------------------------------------------------------------------


def settings(**overrides: Any) -> JudgeSettings:
    """Judge settings for the fake server: fast backend, small timeouts, no unscored limit,
    no probe request."""
    values: dict[str, Any] = {
        "judge": JUDGE,
        "backend": "fast",
        "concurrency": 4,
        "timeout_s": 5.0,
        "max_unscored_rate": 1.0,
        "probe": False,  # these tests count requests; the probe has tests of its own
    }
    return JudgeSettings.model_validate(values | overrides)


def quick_executor(judge_settings: JudgeSettings) -> OpenAIExecutor:
    """``make_client`` for the fast backend, with millisecond backoffs for fault tests."""
    quick = judge_settings.model_copy(update={"backoff_base_s": 0.01, "backoff_max_s": 0.05})
    endpoint = resolve_endpoint(judge_settings.judge, base_url=judge_settings.base_url)
    return OpenAIExecutor(endpoint, quick)


@dataclass
class Workspace:
    """A dataset, a responses file, a store and an output path in one directory."""

    root: Path
    records: list[dict[str, Any]]
    responses: list[dict[str, Any]]
    dataset_path: Path = field(init=False)
    responses_path: Path = field(init=False)
    store: Path = field(init=False)
    out: Path = field(init=False)

    def __post_init__(self) -> None:
        self.dataset_path = self.root / "dataset.jsonl"
        self.responses_path = self.root / "responses.jsonl"
        self.store = self.root / "verdicts.sqlite"
        self.out = self.root / "verdicts.jsonl"
        self.write()

    def write(self) -> None:
        write_jsonl(self.dataset_path, self.records)
        write_jsonl(self.responses_path, self.responses)

    def dataset(self) -> Dataset:
        return load_dataset(self.dataset_path)

    def run(
        self,
        judge_settings: JudgeSettings | None = None,
        executor_factory: Callable[[JudgeSettings], Any] | None = None,
        **kwargs: Any,
    ) -> JudgeReport:
        """``judge_responses`` on this workspace; ``executor_factory`` makes the client."""
        chosen = judge_settings or settings()
        if executor_factory is not None:
            options = BackendOptions(executor_factory=executor_factory)
            kwargs["backend"] = make_backend(chosen, options)
        return judge_responses(
            self.dataset(), self.responses_path, chosen, self.store, self.out, **kwargs
        )

    def rows(self, path: Path | None = None) -> list[dict[str, Any]]:
        return read_jsonl(path or self.out)

    @property
    def n_checks(self) -> int:
        per_question = {r["id"]: len(r["meta_rubric"]["items"]) for r in self.records}
        return sum(per_question[row["question_id"]] for row in self.responses)

    def check_texts(self) -> dict[tuple[str, str], str]:
        """(question id, check id) -> check text, as compiled from the dataset."""
        return {
            (qid, check.id): check.text
            for qid, checklist in self.dataset().checklists().items()
            for check in checklist.checks
        }

    def key_map(self, judge: str = JUDGE) -> dict[tuple[str, str], str]:
        """(response text, check text) -> store key, computed with ``judge_key``."""
        dataset = self.dataset()
        records = dataset.by_id()
        checklists = dataset.checklists()
        out = {}
        for row in self.responses:
            question = records[row["question_id"]].question_for(row["setting"])
            for check in checklists[row["question_id"]].checks:
                key = judge_key(judge, question, row["response"], check.text)
                out[(row["response"], check.text)] = key
        assert len(out) == self.n_checks, "test data must make (response, check) unique"
        return out


def verdicts_by_check(rows: Iterable[Mapping[str, Any]]) -> dict[tuple[str, ...], Any]:
    """(question, model, setting, check) -> (status, verdict); fails on a duplicate row."""
    out: dict[tuple[str, ...], Any] = {}
    for row in rows:
        ident = (row["question_id"], row["model"], row["setting"], row["check_id"])
        assert ident not in out, f"duplicate verdict row {ident}"
        out[ident] = (row["status"], row["verdict"])
    return out


def store_rows(path: Path) -> dict[str, tuple[str, str | None, str | None, int]]:
    """key -> (status, verdict, reason, attempts), read straight from the SQLite file."""
    with sqlite3.connect(path) as db:
        query = "SELECT key, status, verdict, reason, attempts FROM verdicts"
        rows = {r[0]: (r[1], r[2], r[3], r[4]) for r in db.execute(query)}
    db.close()
    return rows


# -- what the fake server was asked ---------------------------------------------------------

_FENCE = re.compile(
    r"^<<<RESPONSE (?P<nonce>[0-9a-f]+)>>>\n(?P<response>(?:.*\n)*?)<<<END RESPONSE (?P=nonce)>>>$",
    re.MULTILINE,
)


def user_text(message: Mapping[str, Any]) -> str:
    content = message["content"]
    if isinstance(content, str):
        return content
    return "".join(p["text"] for p in content if p.get("type") == "text")


@dataclass(frozen=True)
class Asked:
    """One judge request as the server saw it."""

    response: str
    """The fenced response (after the renderer made fence-like text inert)."""
    check: str
    nonce: str
    messages: int
    """Messages in the request: 2 for a first ask, 4, 6... for re-asks."""
    body: dict[str, Any]


def asked(request: Mapping[str, Any]) -> Asked:
    """Response, check and nonce of a judge request (re-asks read the first user message)."""
    messages = request["messages"]
    first_user = user_text(next(m for m in messages if m["role"] == "user"))
    match = _FENCE.search(first_user)
    assert match is not None, "judge request without a response fence"
    _, sep, check = first_user.rpartition("\n# Check\n")
    assert sep, "judge request without a check"
    response = match.group("response").removesuffix("\n")
    return Asked(response, check, match.group("nonce"), len(messages), dict(request))


class Recorder:
    """A fake-server policy that records every request, then answers like ``base``.

    ``base`` is a callable ``(request, ctx) -> str`` or an object with ``reply``; by
    default the keyword judge. Re-asks are answered as their first ask would be.
    """

    def __init__(self, base: Any = None) -> None:
        self.base: Any = base if base is not None else KeywordPolicy()
        self.calls: list[Asked] = []
        self._lock = threading.Lock()

    def __call__(self, request: dict[str, Any], ctx: RequestContext) -> str:
        call = asked(request)
        with self._lock:
            self.calls.append(call)
        if call.messages > 2:  # answer a re-ask as the original request
            request = {**request, "messages": request["messages"][:2]}
        reply = getattr(self.base, "reply", self.base)
        return str(reply(request, ctx))

    def pairs(self) -> Counter[tuple[str, str]]:
        """How often each (response, check) was asked (re-asks included)."""
        with self._lock:
            return Counter((c.response, c.check) for c in self.calls)

    def clear(self) -> None:
        with self._lock:
            self.calls.clear()


# -- time ---------------------------------------------------------------------------------


class FakeClock:
    """A monotonic clock that moves only when the executor sleeps on it.

    Each sleep is recorded with the clock time it would end at, and returns at once, so a
    test reads the waits the executor computed (Retry-After, rate buckets, backoff) without
    spending them and whatever the machine's load."""

    def __init__(self) -> None:
        self.start = self.now = 1000.0
        self.wakes: list[float] = []
        """When each sleep ends, in seconds since ``start``."""

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.wakes.append(self.now + seconds - self.start)
        self.now += seconds
        await asyncio.sleep(0)

    @property
    def elapsed(self) -> float:
        return self.now - self.start
