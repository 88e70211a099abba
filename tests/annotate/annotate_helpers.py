"""Helpers shared by the annotation app tests: import rows, a small client that signs in
and carries CSRF tokens, the checklist editor's form, and the expected result of the edits
the tests make (fixtures live in conftest.py)."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from gamut_eval.annotate import Database, create_app
from gamut_eval.rubric import Checklist, MetaRubric, Tier, compile_rubric

BASE_URL = "http://127.0.0.1:8700"
PNG_MAGIC = b"\x89PNG"

RUBRIC: dict[str, Any] = {
    "id": "q-dish",
    "question": "What is this dish and what goes into it?",
    "entity": "Bibimbap",
    "evidence": [
        {"id": "s1", "text": "Bibimbap is a Korean rice dish.", "source": "https://example.org/b"},
    ],
    "items": [
        {
            "id": "identity",
            "type": "fact",
            "tier": "answer_critical",
            "statement": "Identifies the dish as bibimbap.",
            "cites": ["s1"],
        },
        {
            "id": "core",
            "type": "strict_list",
            "tier": "answer_critical",
            "name": "core parts",
            "items": ["steamed rice", "gochujang"],
        },
        {
            "id": "toppings",
            "type": "flexible_list",
            "tier": "valuable",
            "name": "toppings",
            "options": ["beef", "fried egg", "spinach"],
            "min_required": 2,
        },
    ],
}
"""Compiles to: identity, core/item-1, core/item-2, toppings/min-2, toppings/option-1..3."""

CANDIDATES = [
    ("c-dish-1", "dish", "What is this dish, and how is it usually made?"),
    ("c-dish-2", "dish", "Where does this dish come from and how is it eaten?"),
    ("c-plant-1", "plant", "What plant is this and how do you care for it?"),
    ("c-plant-2", "plant", "Why do the leaves of this plant have holes?"),
    ("c-clock-1", "clock", "What kind of clock is this and how does it keep time?"),
    ("c-clock-2", "clock", "How is a clock like this one wound?"),
]
IMAGES = {
    "dish": "sample-bibimbap.png",
    "plant": "sample-monstera.png",
    "clock": "sample-wall-clock.png",
}
ENTITIES = {"dish": "Bibimbap", "plant": "Monstera deliciosa", "clock": "Wall clock"}


def image_url(image: str) -> str:
    """The app's address of a sample image: ``/images/`` and the SHA-256 of its bytes."""
    from gamut_eval.data import sample_dir

    data = (sample_dir() / "images" / IMAGES[image]).read_bytes()
    return f"/images/{hashlib.sha256(data).hexdigest()}"


def candidate_row(candidate_id: str, image: str, question: str) -> dict[str, Any]:
    """A row as `gamut build questions` writes it."""
    return {
        "candidate_id": candidate_id,
        "image": f"images/{IMAGES[image]}",
        "image_id": f"img-{image}",
        "entity": ENTITIES[image],
        "domain": "test",
        "popularity": "head",
        "question": question,
        "model": "mockllm/model",
        "prompt_version": "questions-v1",
    }


def rubric_row(rubric: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """A dataset-record-like row as `gamut build draft` writes it."""
    meta = rubric or RUBRIC
    return {
        "id": meta["id"],
        "question": meta["question"],
        "entity": meta.get("entity"),
        "image": "images/sample-bibimbap.png",
        "domain": "food",
        "popularity": "torso",
        "meta_rubric": meta,
        "metadata": {"candidate_id": "c-dish-1", "drafted_by": "mockllm/model"},
        **extra,
    }


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@dataclass
class Workspace:
    root: Path
    candidates: Path
    rubrics: Path


_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


class Client:
    """A browser stand-in: its own cookie jar, signs in, puts the CSRF token in forms."""

    def __init__(self, db: Database) -> None:
        self.http = TestClient(create_app(db), base_url=BASE_URL, follow_redirects=False)
        self.csrf = ""

    def login(self, token: str, name: str = "") -> Client:
        page = self.http.get("/login")
        form = {"token": token, "name": name, "csrf_token": _csrf(page.text)}
        response = self.http.post("/login", data=form)
        assert response.status_code == 303, response.text
        self.csrf = _csrf(self.http.get("/").text)
        return self

    def get(self, path: str) -> Any:
        return self.http.get(path)

    def post(self, path: str, data: dict[str, Any] | None = None, **kwargs: Any) -> Any:
        return self.http.post(path, data={"csrf_token": self.csrf, **(data or {})}, **kwargs)


def _csrf(html: str) -> str:
    match = _CSRF.search(html)
    assert match, html[:500]
    return match[1]


def editor(
    checklist: Checklist,
    version: int,
    *,
    text: dict[str, str] | None = None,
    tier: dict[str, str] | None = None,
    remove: tuple[str, ...] = (),
    new: tuple[dict[str, str], ...] = (),
    comment: str = "",
) -> dict[str, str]:
    """The editor form as the page showing ``checklist`` would submit it, with the changes."""
    form = {"version": str(version), "comment": comment}
    for i, check in enumerate(checklist.checks):
        form[f"check-{i}-id"] = check.id
        form[f"check-{i}-base-text"] = check.text  # what the page showed: merges stale saves
        form[f"check-{i}-base-tier"] = check.tier.value
        form[f"check-{i}-text"] = (text or {}).get(check.id, check.text)
        form[f"check-{i}-tier"] = (tier or {}).get(check.id, check.tier.value)
        if check.id in remove:
            form[f"check-{i}-remove"] = "1"
    for j, row in enumerate(new):
        form.update({f"new-{j}-{key}": value for key, value in row.items()})
    return form


KIMCHI = {
    "item": "toppings",
    "kind": "list_option",
    "tier": "context",
    "text": "Mentions kimchi among the toppings.",
}
NEW_IDENTITY = "Identifies the dish as bibimbap, a Korean mixed-rice dish."


def expected_checklist() -> Checklist:
    """The compiled checklist of ``RUBRIC`` after the edits the tests make: identity's text,
    core/item-2 down to Valuable, toppings/option-3 removed, the kimchi check added."""
    compiled = compile_rubric(MetaRubric.model_validate(RUBRIC))
    checks = []
    for check in compiled.checks:
        if check.id == "toppings/option-3":
            continue
        if check.id == "identity":
            # An edited text loses the compiler's structured data.
            check = check.without_structure().model_copy(update={"text": NEW_IDENTITY})
        if check.id == "core/item-2":
            check = check.model_copy(update={"tier": Tier.VALUABLE})
        checks.append(check.model_dump(mode="json"))
    checks.append({"id": "toppings/added-1", **KIMCHI})
    return Checklist.model_validate({"rubric_id": "q-dish", "checks": checks})
