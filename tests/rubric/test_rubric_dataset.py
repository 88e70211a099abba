"""Datasets (docs/method.md [R12], [C15], and the validation rules [R1]-[R11]): one JSONL
record per question; errors name ``file:LINE`` and the JSON path inside the record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gamut_eval.dataset import load_dataset
from gamut_eval.errors import ErrorDetail, ValidationError
from gamut_eval.rubric import Checklist, CompileConfig, compile_rubric

AC, V, C = "answer_critical", "valuable", "context"


def meta(qid: str, *items: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": qid,
        "question": "What dish is this?",
        "evidence": [{"id": "s1", "text": "snippet"}],
        "items": list(items)
        or [
            {
                "id": "identity",
                "type": "fact",
                "tier": AC,
                "statement": "Names it.",
                "cites": ["s1"],
            },
            {
                "id": "dishes",
                "type": "flexible_list",
                "tier": V,
                "name": "dishes",
                "options": ["a", "b", "c"],
                "min_required": 1,
            },
        ],
    }


def record(qid: str, **extra: Any) -> dict[str, Any]:
    return {"id": qid, "question": "What dish is this?", "meta_rubric": meta(qid), **extra}


REVISED = {
    "rubric_id": "q2",
    "checks": [
        {
            "id": "identity",
            "kind": "fact",
            "tier": AC,
            "text": "Names the dish as bibimbap.",
            "item": "identity",
            "secondary": False,
            "cites": ["s1"],
        },
        {
            "id": "extra",
            "kind": "fact",
            "tier": C,
            "text": "Mentions the stone bowl.",
            "item": "extra",
        },
    ],
}


def write(
    tmp_path: Path, *lines: Any, trailing_newline: bool = True, name: str = "d.jsonl"
) -> Path:
    path = tmp_path / name
    text = "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines)
    path.write_text(text + ("\n" if trailing_newline else ""), encoding="utf-8")
    return path


def details_of(path: Path) -> list[ErrorDetail]:
    with pytest.raises(ValidationError) as info:
        load_dataset(path)
    assert info.value.details
    return info.value.details


def test_good_dataset_loads(tmp_path: Path) -> None:
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "q1.jpg").write_bytes(b"\xff\xd8\xff\xe0" + bytes(12))
    path = write(
        tmp_path,
        record("q1", image="img/q1.jpg", domain="food", popularity="head", entity="Bibimbap"),
        "",
        record("q2", checklist=REVISED, metadata={"source": "crag-mm"}),
    )
    dataset = load_dataset(path)
    assert len(dataset) == 2
    assert [r.id for r in dataset] == ["q1", "q2"]
    assert set(dataset.by_id()) == {"q1", "q2"}
    q1, q2 = dataset.records
    assert dataset.image_path(q1) == tmp_path / "img" / "q1.jpg"
    assert dataset.image_path(q2) is None
    assert q1.popularity == "head"
    assert q2.metadata == {"source": "crag-mm"}
    assert dataset.path == path


def test_effective_checklist_prefers_the_revised_one(tmp_path: Path) -> None:
    dataset = load_dataset(write(tmp_path, record("q1"), record("q2", checklist=REVISED)))
    q1, q2 = dataset.records
    # q1: no revision, so the compiled checklist (hand-derived: 1 fact, 1 threshold, 3 options).
    compiled = q1.effective_checklist()
    assert compiled == compile_rubric(q1.meta_rubric)
    assert [(c.id, c.tier.value, c.secondary) for c in compiled.checks] == [
        ("identity", AC, False),
        ("dishes/min-1", V, False),
        ("dishes/option-1", C, True),
        ("dishes/option-2", C, True),
        ("dishes/option-3", C, True),
    ]
    # q2: the revised checklist wins over what the meta-rubric compiles to.
    revised = q2.effective_checklist()
    assert revised == Checklist.model_validate(REVISED)
    assert [c.id for c in revised.checks] == ["identity", "extra"]
    assert revised.checks[0].text == "Names the dish as bibimbap."
    assert revised != compile_rubric(q2.meta_rubric)
    # A config reaches the compiler only when there is no revision.
    config = CompileConfig(short_list_max=2)
    assert [c.id for c in q1.effective_checklist(config).checks] == [
        "identity",
        "dishes/min-1",
        "dishes/coverage-2",
        "dishes/coverage-3",
    ]
    assert q2.effective_checklist(config) == revised
    assert dataset.checklists() == {"q1": compiled, "q2": revised}


def test_errors_name_file_line_and_path_inside_the_record(tmp_path: Path) -> None:
    bad = record("q2")
    bad["meta_rubric"]["items"][1]["min_required"] = 4
    path = write(tmp_path, record("q1"), bad)
    (detail,) = details_of(path)
    assert detail.file == f"{path}:2"
    assert (detail.path, detail.rule, detail.value) == (
        "meta_rubric.items[1].min_required",
        "threshold-range",
        4,
    )
    assert detail.render().startswith(f"{path}:2:meta_rubric.items[1].min_required: ")


def test_structural_meta_rubric_errors_are_prefixed(tmp_path: Path) -> None:
    bad = record("q1")
    bad["meta_rubric"]["items"][0]["tier"] = "urgent"
    bad["meta_rubric"]["items"].append(
        {"id": "x", "type": "fact", "tier": V, "statement": "S", "y": 1}
    )
    path = write(tmp_path, bad)
    found = {(d.file, d.path, d.rule) for d in details_of(path)}
    assert {
        (f"{path}:1", "meta_rubric.items[0].tier", "allowed-value"),
        (f"{path}:1", "meta_rubric.items[2].y", "unknown-field"),
    } <= found


def test_record_level_errors(tmp_path: Path) -> None:
    path = write(tmp_path, record("q1", popularity="famous", colour="red"))
    found = {(d.path, d.rule, d.value) for d in details_of(path)}
    assert found == {
        ("popularity", "allowed-value", "famous"),
        ("colour", "unknown-field", "colour"),
    }


def test_duplicate_question_ids(tmp_path: Path) -> None:
    path = write(tmp_path, record("q1"), record("q2"), record("q1"), record("q1"))
    details = details_of(path)
    assert [(d.file, d.path, d.rule, d.value) for d in details] == [
        (f"{path}:3", "id", "unique-id", "q1"),
        (f"{path}:4", "id", "unique-id", "q1"),
    ]
    assert all("line 1" in d.message for d in details)


def test_meta_rubric_id_mismatch(tmp_path: Path) -> None:
    rec = record("q1")
    rec["meta_rubric"]["id"] = "q-other"
    path = write(tmp_path, rec)
    (detail,) = details_of(path)
    assert (detail.file, detail.path, detail.rule, detail.value) == (
        f"{path}:1",
        "meta_rubric.id",
        "id-match",
        "q-other",
    )
    assert "'q1'" in detail.message


def test_checklist_rubric_id_mismatch(tmp_path: Path) -> None:
    path = write(tmp_path, record("q1", checklist=REVISED))
    (detail,) = details_of(path)
    assert (detail.path, detail.rule, detail.value) == ("checklist.rubric_id", "id-match", "q2")


def test_missing_image_file(tmp_path: Path) -> None:
    path = write(tmp_path, record("q1", image="missing.jpg"))
    (detail,) = details_of(path)
    assert (detail.file, detail.path, detail.rule, detail.value) == (
        f"{path}:1",
        "image",
        "image-exists",
        "missing.jpg",
    )
    assert str(tmp_path) in detail.message


def test_torn_last_line(tmp_path: Path) -> None:
    path = write(
        tmp_path, record("q1"), record("q2"), '{"id": "q3", "quest', trailing_newline=False
    )
    (detail,) = details_of(path)
    assert detail.rule == "torn-line"
    assert detail.path == "line 3"
    assert detail.file == str(path)
    assert f"{path}:line 3:" in detail.render()


def test_bad_json_in_the_middle_is_a_syntax_error_not_torn(tmp_path: Path) -> None:
    path = write(tmp_path, record("q1"), '{"id": ', record("q2"))
    (detail,) = details_of(path)
    assert (detail.path, detail.rule) == ("line 2", "json-syntax")


def test_a_bad_last_line_with_its_newline_is_not_torn(tmp_path: Path) -> None:
    path = write(tmp_path, record("q1"), '{"id": ')
    (detail,) = details_of(path)
    assert (detail.path, detail.rule) == ("line 2", "json-syntax")


def test_complete_last_line_without_newline_loads(tmp_path: Path) -> None:
    path = write(tmp_path, record("q1"), record("q2"), trailing_newline=False)
    assert [r.id for r in load_dataset(path)] == ["q1", "q2"]


def test_every_bad_line_is_reported_in_one_error(tmp_path: Path) -> None:
    bad_rubric = record("q1")
    bad_rubric["meta_rubric"]["items"][0]["cites"] = ["s9"]
    mismatch = record("q3")
    mismatch["meta_rubric"]["id"] = "zzz"
    path = write(
        tmp_path,
        bad_rubric,
        record("q2"),
        mismatch,
        "",
        record("q4", image="nope.png"),
        [1, 2],
        record("q2"),
    )
    with pytest.raises(ValidationError) as info:
        load_dataset(path)
    found = [(d.file, d.path, d.rule) for d in info.value.details]
    assert found == [
        (f"{path}:1", "meta_rubric.items[0].cites[0]", "cite-exists"),
        (f"{path}:3", "meta_rubric.id", "id-match"),
        (f"{path}:5", "image", "image-exists"),
        (f"{path}:6", "$", "record-object"),
        (f"{path}:7", "id", "unique-id"),
    ]
    rendered = str(info.value).splitlines()
    assert len(rendered) == 5
    assert rendered[0].startswith(f"{path}:1:meta_rubric.items[0].cites[0]: ")


def test_empty_dataset(tmp_path: Path) -> None:
    path = write(tmp_path, "", "")
    (detail,) = details_of(path)
    assert detail.rule == "non-empty"


def test_record_without_meta_rubric_is_an_error(tmp_path: Path) -> None:
    rec = record("q2")
    del rec["meta_rubric"]
    path = write(tmp_path, record("q1"), rec)
    details = details_of(path)
    assert [(d.file, d.path, d.rule) for d in details] == [(f"{path}:2", "meta_rubric", "required")]


def test_record_errors_are_reported_beside_meta_rubric_rule_errors(tmp_path: Path) -> None:
    rec = record("q1", popularity="famous")
    rec["meta_rubric"]["items"][0]["cites"] = ["s9"]
    found = {(d.path, d.rule) for d in details_of(write(tmp_path, rec))}
    assert found == {
        ("meta_rubric.items[0].cites[0]", "cite-exists"),
        ("popularity", "allowed-value"),
    }


def test_syntax_errors_do_not_hide_other_bad_lines(tmp_path: Path) -> None:
    bad = record("q1", popularity="famous")
    path = write(tmp_path, bad, '{"id": ', record("q3"), '{"id": "q4"', trailing_newline=False)
    found = [(d.file, d.path, d.rule) for d in details_of(path)]
    assert (f"{path}:1", "popularity", "allowed-value") in found
    assert (str(path), "line 2", "json-syntax") in found
    assert (str(path), "line 4", "torn-line") in found


JPEG = b"\xff\xd8\xff\xe0" + bytes(12)


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("../secret.txt", "image-inside"),
        ("img/../../secret.txt", "image-inside"),
        ("img/link.jpg", "image-inside"),
        ("/etc/passwd", "image-relative"),
        ("img/notes.jpg", "image-content"),
        ("img/none.jpg", "image-exists"),
        ("img/\x00.jpg", "image-exists"),
    ],
)
def test_an_image_outside_the_dataset_folder_or_not_an_image_is_refused(
    tmp_path: Path, name: str, rule: str
) -> None:
    root = tmp_path / "data"
    (root / "img").mkdir(parents=True)
    (tmp_path / "secret.txt").write_text("the key is 42", encoding="utf-8")
    (tmp_path / "outside.jpg").write_bytes(JPEG)
    (root / "img" / "link.jpg").symlink_to(tmp_path / "outside.jpg")
    (root / "img" / "notes.jpg").write_text("not a picture", encoding="utf-8")
    path = write(root, record("q1", image=name))
    details = details_of(path)
    assert [(d.path, d.rule, d.value) for d in details] == [("image", rule, name)]
    assert str(path) in str(details[0].file)


def test_an_image_root_widens_where_images_may_lie(tmp_path: Path) -> None:
    root = tmp_path / "data"
    root.mkdir()
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "q1.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(8))
    path = write(root, record("q1", image="q1.png"))
    assert details_of(path)[0].rule == "image-exists"
    dataset = load_dataset(path, image_root=tmp_path / "shared")
    assert dataset.image_path(dataset.records[0]) == tmp_path / "shared" / "q1.png"


def test_an_image_larger_than_the_limit_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gamut_eval.dataset as dataset_module

    monkeypatch.setattr(dataset_module, "IMAGE_MAX_BYTES", 100)
    (tmp_path / "big.jpg").write_bytes(JPEG + bytes(200))
    (tmp_path / "ok.jpg").write_bytes(JPEG)
    path = write(tmp_path, record("q1", image="big.jpg"), record("q2", image="ok.jpg"))
    details = details_of(path)
    assert [(d.rule, d.value) for d in details] == [("image-size", "big.jpg")]
