"""Your own rubrics without code: a meta-rubric file (or a folder of them) wherever a
dataset is taken, `gamut dataset`, the dataset and responses schemas, and the
docs/own-benchmark.md page run as written."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from gamut_eval import ValidationError, load_dataset, write_dataset
from gamut_eval.cli._main import cli
from gamut_eval.data import sample_dir

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "own-benchmark.md"
PNG = sample_dir() / "images" / "sample-bibimbap.png"

RUBRIC = """\
id: {id}
question: What dish is this?
question_text_only: What is bibimbap?
entity: Bibimbap
image: {image}
domain: food
evidence:
  - {{id: s1, text: Bibimbap is a Korean rice dish.}}
items:
  - {{id: identity, type: fact, tier: answer_critical, statement: Names it., cites: [s1]}}
  - {{id: rice, type: fact, tier: valuable, statement: Mentions rice., cites: [s1]}}
"""


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def _rubric(folder: Path, qid: str, image: str = "dish.png") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / "dish.png").exists():
        shutil.copyfile(PNG, folder / "dish.png")
    path = folder / f"{qid}.yaml"
    path.write_text(RUBRIC.format(id=qid, image=image))
    return path


def test_a_rubric_file_is_a_one_question_dataset_with_its_record_fields(tmp_path: Path) -> None:
    dataset = load_dataset(_rubric(tmp_path, "q-1"))
    (record,) = dataset.records
    assert (record.id, record.question, record.entity) == ("q-1", "What dish is this?", "Bibimbap")
    assert record.question_text_only == "What is bibimbap?"
    assert record.domain == "food"
    assert dataset.image_path(record) == tmp_path / "dish.png"
    assert [c.id for c in dataset.checklists()["q-1"].checks] == ["identity", "rice"]


def test_a_json_rubric_and_a_json_table_are_told_apart(tmp_path: Path) -> None:
    record = load_dataset(_rubric(tmp_path, "q-1")).records[0]
    rubric = tmp_path / "q-2.json"
    rubric.write_text(json.dumps({**record.meta_rubric.model_dump(mode="json"), "id": "q-2"}))
    assert [r.id for r in load_dataset(rubric).records] == ["q-2"]
    table = tmp_path / "table.json"
    table.write_text(json.dumps([record.model_dump(mode="json")]))
    assert [r.id for r in load_dataset(table).records] == ["q-1"]


def test_a_folder_is_a_dataset_of_its_rubric_files_in_name_order(tmp_path: Path) -> None:
    folder = tmp_path / "rubrics"
    _rubric(folder, "q-b")
    _rubric(folder, "q-a")
    (folder / "notes.txt").write_text("not a rubric")
    dataset = load_dataset(folder)
    assert [r.id for r in dataset.records] == ["q-a", "q-b"]
    assert dataset.image_path(dataset.records[0]) == folder / "dish.png"


def test_every_problem_of_every_rubric_file_is_named(tmp_path: Path) -> None:
    folder = tmp_path / "rubrics"
    _rubric(folder, "q-a")
    (folder / "q-b.yaml").write_text(
        RUBRIC.format(id="q-a", image="../outside.png").replace("answer_critical", "critical")
    )
    with pytest.raises(ValidationError) as caught:
        load_dataset(folder)
    text = str(caught.value)
    assert f"{folder / 'q-b.yaml'}:items[0].tier" in text
    assert f"{folder / 'q-b.yaml'}:image" in text
    assert "[image-inside]" in text
    code, _, err = run("validate", str(folder))
    assert code == 2
    assert "items[0].tier" in err


def test_an_empty_folder_is_refused(tmp_path: Path) -> None:
    code, _, err = run("validate", str(tmp_path))
    assert code == 2
    assert "no meta-rubric files here" in err


def test_gamut_dataset_writes_a_table_with_images_beside_it(tmp_path: Path) -> None:
    _rubric(tmp_path / "a", "q-1")
    _rubric(tmp_path / "b", "q-2")
    out = tmp_path / "bench" / "dataset.jsonl"
    code, stdout, err = run(
        "dataset", str(tmp_path / "a"), str(tmp_path / "b" / "q-2.yaml"), "-o", str(out)
    )
    assert code == 0, err
    assert "2 questions" in stdout
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["q-1", "q-2"]
    # both folders' dish.png (the same bytes) land once in images/
    assert [r["image"] for r in rows] == ["images/dish.png", "images/dish.png"]
    dataset = load_dataset(out)
    assert dataset.image_path(dataset.records[0]).read_bytes() == PNG.read_bytes()


def test_gamut_dataset_refuses_a_question_id_twice_and_writes_nothing(tmp_path: Path) -> None:
    _rubric(tmp_path / "a", "q-1")
    _rubric(tmp_path / "b", "q-1")
    out = tmp_path / "dataset.jsonl"
    code, _, err = run("dataset", str(tmp_path / "a"), str(tmp_path / "b"), "-o", str(out))
    assert code == 2
    assert "duplicate question id" in err
    assert not out.exists()
    with pytest.raises(ValidationError):
        write_dataset([load_dataset(tmp_path / "a"), load_dataset(tmp_path / "b")], out)


@pytest.mark.parametrize("kind", ["dataset", "responses"])
def test_the_dataset_and_responses_schemas_are_shipped_and_hold_the_sample(kind: str) -> None:
    import jsonschema

    code, out, _ = run("schema", "--kind", kind)
    assert code == 0
    schema = json.loads(out)
    committed = json.loads((ROOT / "schema" / f"{kind}.schema.json").read_text())
    assert committed == schema, (
        f"regenerate with: gamut schema --kind {kind} -o schema/{kind}.schema.json"
    )
    rows = (sample_dir() / f"{kind}.jsonl").read_text().splitlines()
    assert len(rows) > 10
    for line in rows:
        jsonschema.validate(json.loads(line), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"question_id": "x", "unknown": 1}, schema)


def _page() -> tuple[dict[str, str], list[list[str]]]:
    """The page's files (the block after 'Save this as `NAME`') and its commands."""
    text = PAGE.read_text()
    files = dict(re.findall(r"Save this as\s+`([^`]+)`:\s*\n+```\w+\n(.*?)```", text, re.S))
    commands = [
        shlex.split(line)
        for block in re.findall(r"```sh\n(.*?)```", text, re.S)
        for line in block.splitlines()
        if line.strip()
    ]
    return files, commands


def test_the_own_benchmark_page_works_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files, commands = _page()
    assert set(files) == {"sourdough.yaml", "answers.jsonl"}
    monkeypatch.chdir(tmp_path)
    for name, body in files.items():
        Path(name).write_text(body)
    shutil.copyfile(PNG, "sourdough.png")  # the page asks for a photo of the loaf
    gamut = [c for c in commands if c[0] == "gamut"]
    assert [c[1] for c in gamut] == [
        "validate",
        "compile",
        "judge",
        "score",
        "run",
        "report",
        "dataset",
        "validate",
    ]
    for command in commands:
        if command[0] == "mkdir":
            Path(command[-1]).mkdir(parents=True, exist_ok=True)
            continue
        if command[0] == "cp":  # `cp A B DIR/`
            for source in command[1:-1]:
                shutil.copy(source, command[-1])
            continue
        code, out, err = run(*command[1:])
        assert code == 0, (command, out, err)
    verdicts = [json.loads(line) for line in Path("verdicts.jsonl").read_text().splitlines()]
    assert len(verdicts) == 2 * 10  # two answers x the rubric's ten checks
    scores = [
        json.loads(line) for line in Path("runs/sourdough/scores.jsonl").read_text().splitlines()
    ]
    assert sorted(s["model"] for s in scores) == ["lab/model-a", "lab/model-b"]
    # as the page says: model-a meets every check, model-b none
    assert {s["model"]: s["gamut"] for s in scores} == {"lab/model-a": 1.0, "lab/model-b": 0.0}
    assert "lab/model-a" in Path("report.md").read_text()
    assert [r.id for r in load_dataset("bench/dataset.jsonl").records] == ["sourdough"]
