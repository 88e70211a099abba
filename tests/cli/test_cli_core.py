"""The core commands as a user runs them: validate, compile, score, schema."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from gamut_eval.cli._main import cli
from gamut_eval.rubric import meta_rubric_json_schema

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))

RUBRIC = """\
id: q-1
question: What dish is this?
evidence:
  - {id: s1, text: Bibimbap is a Korean rice dish.}
items:
  - {id: identity, type: fact, tier: answer_critical, statement: Identifies bibimbap., cites: [s1]}
  - id: toppings
    type: flexible_list
    tier: valuable
    name: toppings
    options: [beef, egg, tofu]
    min_required: 2
"""


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def rubric(tmp_path: Path) -> Path:
    path = tmp_path / "rubric.yaml"
    path.write_text(RUBRIC)
    return path


def test_examples_are_valid_and_cover_every_kind() -> None:
    assert len(EXAMPLES) >= 6
    code, out, _ = run("validate", *map(str, EXAMPLES))
    assert code == 0, out
    kinds = set()
    for path in EXAMPLES:
        code, out, _ = run("compile", str(path))
        kinds |= {c["kind"] for c in json.loads(out)["checks"]}
    assert kinds == {
        "fact",
        "list_item",
        "list_threshold",
        "list_option",
        "coverage_threshold",
        "step",
        "sequence",
        "sequence_full",
        "relation_entity",
        "relation_aspect",
        "meta_insight",
    }


def test_validate_reports_every_error_with_file_and_path(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        RUBRIC.replace("min_required: 2", "min_required: 5").replace("cites: [s1]", "cites: [s9]")
        + "  - {id: identity, type: fact, tier: vital, statement: x}\n"
    )
    code, _, err = run("validate", str(bad))
    assert code == 2
    assert f"{bad}:items[1].min_required: " in err
    assert "(found: 5)" in err
    assert f"{bad}:items[0].cites[0]" in err
    assert '(found: "s9")' in err
    assert f"{bad}:items[2].tier" in err
    assert "1 of 1 file(s) invalid" in err


def test_validate_mixed_good_and_bad_files(rubric: Path, tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    code, out, err = run("validate", str(rubric), str(missing))
    assert code == 2
    assert f"ok {rubric}" in out
    assert "file not found" in err


def test_compile_json_shape(rubric: Path) -> None:
    code, out, _ = run("compile", str(rubric))
    assert code == 0
    data = json.loads(out)
    assert set(data) == {"rubric_id", "config", "checks"}
    assert data["config"] == {"short_list_max": 7, "coverage_fractions": [0.5, 0.75]}
    assert [c["id"] for c in data["checks"]] == [
        "identity",
        "toppings/min-2",
        "toppings/option-1",
        "toppings/option-2",
        "toppings/option-3",
    ]
    assert set(data["checks"][0]) == {
        "id", "kind", "tier", "text", "item", "secondary", "cites", "target", "options", "at_least",
    }  # fmt: skip
    assert data["checks"][2]["tier"] == "context"
    assert data["checks"][2]["secondary"] is True


def test_compile_options_change_the_rules(rubric: Path) -> None:
    code, out, _ = run(
        "compile", str(rubric), "--short-list-max", "2", "--coverage-fraction", "1.0"
    )
    assert code == 0
    data = json.loads(out)
    # 3 options > 2: a long list, so one coverage threshold ceil(1.0 * 3) = 3 instead of options.
    assert [c["id"] for c in data["checks"]][1:] == ["toppings/min-2", "toppings/coverage-3"]
    assert data["config"]["short_list_max"] == 2


def test_compile_markdown_groups_by_tier(rubric: Path, tmp_path: Path) -> None:
    out_file = tmp_path / "out" / "c.md"
    code, _, _ = run("compile", str(rubric), "--format", "markdown", "-o", str(out_file))
    assert code == 0
    text = out_file.read_text()
    assert text.index("## Answer-Critical (1 checks)") < text.index("## Valuable (1 checks)")
    assert text.index("## Valuable") < text.index("## Context (3 checks)")
    assert "**toppings/option-2**" in text


def test_compile_dataset_gives_jsonl(tmp_path: Path) -> None:
    import yaml

    meta = yaml.safe_load(RUBRIC)
    lines = [
        {"id": qid, "question": "What dish is this?", "meta_rubric": {**meta, "id": qid}}
        for qid in ("q-1", "q-2")
    ]
    dataset = tmp_path / "d.jsonl"
    dataset.write_text("".join(json.dumps(line) + "\n" for line in lines))
    code, out, _ = run("compile", str(dataset))
    assert code == 0
    assert [json.loads(line)["rubric_id"] for line in out.splitlines()] == ["q-1", "q-2"]


def _checklist(rubric: Path, tmp_path: Path) -> Path:
    path = tmp_path / "checklist.json"
    assert run("compile", str(rubric), "-o", str(path))[0] == 0
    return path


def test_score_prints_card_and_json(rubric: Path, tmp_path: Path) -> None:
    verdicts = tmp_path / "v.json"
    verdicts.write_text(
        json.dumps(
            {
                "identity": "meets",
                "toppings/min-2": "contradicts",
                "toppings/option-1": "meets",
                "toppings/option-2": "missing",
                "toppings/option-3": None,
            }
        )
    )
    code, out, _ = run(
        "score",
        "--checklist",
        str(_checklist(rubric, tmp_path)),
        "--verdicts",
        str(verdicts),
        "--json",
    )
    assert code == 0
    card = json.loads(out)
    # AC 1.0; V -1.0; C: 1 meets, 1 missing -> 0.5. 0.6 - 0.3 + 0.05 = 0.35
    assert card["gamut"] == pytest.approx(0.35)
    assert card["counts"]["context"]["unscored"] == 1
    code, out, _ = run(
        "score", "--checklist", str(_checklist(rubric, tmp_path)), "--verdicts", str(verdicts)
    )
    assert code == 0
    assert "35.0" in out


def test_score_custom_params(rubric: Path, tmp_path: Path) -> None:
    verdicts = tmp_path / "v.json"
    ids = [
        "identity",
        "toppings/min-2",
        "toppings/option-1",
        "toppings/option-2",
        "toppings/option-3",
    ]
    verdicts.write_text(json.dumps(dict.fromkeys(ids, "partially_meets")))
    args = [
        "score",
        "--checklist",
        str(_checklist(rubric, tmp_path)),
        "--verdicts",
        str(verdicts),
        "--json",
    ]
    code, out, _ = run(*args, "--lam", "0.25", "--weight", "c=0")
    assert code == 0
    assert json.loads(out)["gamut"] == pytest.approx(0.25)
    code, _, err = run(*args, "--mu", "1")
    assert code == 2
    assert "mu" in err


def test_score_rejects_unknown_missing_and_bad_verdicts(rubric: Path, tmp_path: Path) -> None:
    verdicts = tmp_path / "v.json"
    verdicts.write_text(json.dumps({"identity": "mostly meets", "nope": "meets"}))
    code, out, err = run(
        "score", "--checklist", str(_checklist(rubric, tmp_path)), "--verdicts", str(verdicts)
    )
    assert code == 2
    assert out == ""
    assert f"{verdicts}:nope: no check with this id" in err
    assert f"{verdicts}:toppings/min-2: no verdict given" in err
    assert "mostly meets" in err


def test_schema_matches_committed_file_and_validates_examples() -> None:
    import jsonschema

    code, out, _ = run("schema")
    assert code == 0
    schema = json.loads(out)
    assert schema == meta_rubric_json_schema()
    committed = json.loads((ROOT / "schema" / "meta-rubric.schema.json").read_text())
    assert committed == schema, "regenerate with: gamut schema -o schema/meta-rubric.schema.json"
    import yaml

    for path in EXAMPLES:
        jsonschema.validate(yaml.safe_load(path.read_text()), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(
            {"id": "x", "question": "q", "items": [{"id": "a", "type": "fact"}]}, schema
        )


def test_entry_point_exit_code() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "gamut_eval", "validate", "/nonexistent.yaml"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert "file not found" in result.stderr


def test_a_library_error_names_the_setting_and_the_command_line_adds_its_option(
    tmp_path: Path,
) -> None:
    from gamut_eval.construct import ResearchSettings
    from gamut_eval.errors import InputError

    with pytest.raises(InputError) as caught:
        ResearchSettings(per_query=0)
    assert str(caught.value) == "per_query must be at least 1 (found: 0)"  # no option here
    assert caught.value.setting == "per_query"

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text("hello world\n")
    argv = ["build", "evidence", "--workdir", str(tmp_path / "w"), "--corpus", str(corpus)]
    result = CliRunner().invoke(cli, [*argv, "--per-query", "0"])
    assert result.exit_code == 2
    assert "per_query must be at least 1 (found: 0) (option --per-query)" in result.stderr
    assert not (tmp_path / "w").exists()


def test_validate_refuses_a_dataset_whose_image_leads_outside_its_folder(tmp_path: Path) -> None:
    from gamut_eval.data import sample_dir

    record = json.loads((sample_dir() / "dataset.jsonl").read_text().splitlines()[0])
    (tmp_path / "secret.txt").write_text("the key is 42")
    folder = tmp_path / "data"
    folder.mkdir()
    record["image"] = "../secret.txt"
    dataset = folder / "dataset.jsonl"
    dataset.write_text(json.dumps(record) + "\n")
    code, out, err = run("validate", str(dataset))
    assert code == 2
    assert f"{dataset}:1:image: leads outside {folder}" in out + err
    assert '"../secret.txt"' in out + err
