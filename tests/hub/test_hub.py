"""Datasets and runs on the Hugging Face Hub, offline: a folder-backed fake Hub
(``gamut_eval.testing.FakeHubServer``) that huggingface_hub talks to through HF_ENDPOINT."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from gamut_eval import load_dataset, load_run
from gamut_eval.cli import cli
from gamut_eval.data import sample_dir
from gamut_eval.errors import InputError
from gamut_eval.hub import download, parse_hub_path, push
from gamut_eval.testing import FakeHubServer

OFFLINE = "gamut/offline"


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHubServer]:
    with FakeHubServer(tmp_path / "hub") as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
        monkeypatch.setenv("HF_TOKEN", "hf_test_token")
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        yield server


def cli_run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), terminal_width=200)
    return result.exit_code, result.stdout, result.stderr


def test_hub_paths_parse_and_bad_ones_name_the_form() -> None:
    where = parse_hub_path("hf://datasets/alice/bench@v1/data/dataset.jsonl")
    assert (where.repo_id, where.revision) == ("alice/bench", "v1")
    assert where.path == "data/dataset.jsonl"
    assert str(where) == "hf://datasets/alice/bench@v1/data/dataset.jsonl"
    assert parse_hub_path("hf://datasets/alice/bench").path == ""
    for bad in ("hf://models/alice/m/x", "hf://datasets/alice", "hf://datasets/a/b/../c"):
        with pytest.raises(InputError, match="hf://"):
            parse_hub_path(bad)


def test_a_pushed_dataset_is_read_back_with_its_images(hub: FakeHubServer) -> None:
    url = push(sample_dir(), "hf://datasets/alice/bench/data", message="the sample")
    assert url.startswith(f"{hub.url}/datasets/alice/bench/commit/")
    stored = hub.repo_dir("alice/bench") / "data"
    assert (stored / "dataset.jsonl").read_bytes() == (sample_dir() / "dataset.jsonl").read_bytes()
    local = download("hf://datasets/alice/bench/data/dataset.jsonl")
    assert local.name == "dataset.jsonl"
    assert local.read_bytes() == (sample_dir() / "dataset.jsonl").read_bytes()
    images = sorted(p.name for p in (sample_dir() / "images").iterdir())
    assert sorted(p.name for p in (local.parent / "images").iterdir()) == images
    assert ("POST", "/api/datasets/alice/bench/commit/main") in hub.requests


def test_gamut_run_reads_its_dataset_from_the_hub(hub: FakeHubServer, tmp_path: Path) -> None:
    push(sample_dir(), "hf://datasets/alice/bench")
    out = tmp_path / "run"
    responses = str(sample_dir() / "responses.jsonl")
    dataset = "hf://datasets/alice/bench/dataset.jsonl"
    code, stdout, err = cli_run("run", "--dataset", dataset, "--responses", responses,
                                "--judge", OFFLINE, "--out", str(out))  # fmt: skip
    assert code == 0, err + stdout
    local = json.loads((out / "run.json").read_text())
    assert Path(local["dataset"]).read_bytes() == (sample_dir() / "dataset.jsonl").read_bytes()
    tables = load_run(out)
    assert len(tables.scores) > 0


def test_gamut_push_uploads_a_run_without_its_store_and_load_run_reads_it_back(
    hub: FakeHubServer, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    code, _, err = cli_run("run", "--dataset", "sample", "--responses",
                           str(sample_dir() / "responses.jsonl"), "--judge", OFFLINE,
                           "--out", str(out))  # fmt: skip
    assert code == 0, err
    assert (out / "store.sqlite").exists()
    (out / ".verdicts.jsonl.4242.k2j3.tmp").write_text("half a verdict file")  # a killed export
    (out / "logs" / ".x.eval.ab12.tmp").write_text("half a log")
    code, stdout, err = cli_run("push", str(out), "hf://datasets/alice/runs/demo")
    assert code == 0, err
    assert stdout.startswith(f"pushed {out} to hf://datasets/alice/runs/demo: {hub.url}/")
    pushed = hub.repo_dir("alice/runs") / "demo"
    assert (pushed / "verdicts.jsonl").read_bytes() == (out / "verdicts.jsonl").read_bytes()
    assert not list(pushed.glob("store.sqlite*"))  # the local verdict cache stays local
    assert (out / ".finished.json").is_file()
    assert not (pushed / ".finished.json").exists()  # it describes that local cache
    assert not [p for p in pushed.rglob("*") if p.name.endswith(".tmp")]  # never uploaded
    remote = load_run("hf://datasets/alice/runs/demo")
    here = load_run(out)
    for name in ("answers", "verdicts", "scores"):
        assert getattr(remote, name).equals(getattr(here, name)), name


def test_missing_repository_file_and_revision_are_input_errors(hub: FakeHubServer) -> None:
    push(sample_dir() / "dataset.jsonl", "hf://datasets/alice/bench/dataset.jsonl")
    with pytest.raises(InputError, match="no such dataset repository"):
        download("hf://datasets/alice/other/dataset.jsonl")
    with pytest.raises(InputError, match="no such file or folder"):
        download("hf://datasets/alice/bench/nothing.jsonl")
    with pytest.raises(InputError, match="no revision 'v9'"):
        download("hf://datasets/alice/bench@v9/dataset.jsonl")
    code, _, err = cli_run("validate", "hf://datasets/alice/other/dataset.jsonl")
    assert code == 2
    assert "error: hf://datasets/alice/other/dataset.jsonl: no such dataset repository" in err


def test_without_the_hub_extra_the_command_names_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    shutil.copy(sample_dir() / "dataset.jsonl", tmp_path / "d.jsonl")
    code, _, err = cli_run("push", str(tmp_path / "d.jsonl"), "hf://datasets/alice/bench/d.jsonl")
    assert code == 2
    assert "pip install 'gamut-eval[hub]'" in " ".join(err.split())


def test_gamut_report_reads_a_pushed_run_and_writes_into_the_working_folder(
    hub: FakeHubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "run"
    code, _, err = cli_run("run", "--dataset", "sample", "--responses",
                           str(sample_dir() / "responses.jsonl"), "--judge", OFFLINE,
                           "--out", str(out))  # fmt: skip
    assert code == 0, err
    push(out, "hf://datasets/alice/runs/demo")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    # The dataset recorded in run.json is the bundled sample's path, readable here too.
    code, stdout, err = cli_run("report", "hf://datasets/alice/runs/demo", "--resamples", "20")
    assert code == 0, err
    assert (work / "report.html").read_text().startswith("<!DOCTYPE html>")
    assert "report: report.html" in stdout or f"report: {work / 'report.html'}" in stdout
    cached = download("hf://datasets/alice/runs/demo")
    assert not (cached / "report.html").exists()  # nothing written into the Hub cache


def _front_matter(card: str) -> dict[str, object]:
    import yaml

    assert card.startswith("---\n")
    front: dict[str, object] = yaml.safe_load(card.split("---\n")[1])
    return front


def test_a_pushed_benchmark_has_a_card_and_loads_with_datasets(
    hub: FakeHubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Hub's viewer and ``datasets.load_dataset(REPO)`` read the card's configs; the
    images come back as images."""
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "datasets"))
    code, _, err = cli_run(
        "push", str(sample_dir()), "hf://datasets/alice/bench/data", "--license", "cc-by-4.0"
    )
    assert code == 0, err
    repo = hub.repo_dir("alice/bench")
    front = _front_matter((repo / "README.md").read_text())
    assert front["license"] == "cc-by-4.0"
    table = "data/viewer/test-00000-of-00001.parquet"
    assert front["configs"] == [
        {"config_name": "default", "data_files": [{"split": "test", "path": table}]}
    ]
    info = front["dataset_info"]
    assert isinstance(info, dict)
    assert {"name": "image", "dtype": "image"} in info["features"]
    assert (repo / table).is_file()
    assert (repo / "data" / "dataset.jsonl").is_file()  # gamut's own file, as it was

    loaded = datasets.load_dataset("alice/bench")  # no arguments beyond the repository
    split = loaded["test"]
    records = {r.id: r for r in load_dataset(sample_dir() / "dataset.jsonl")}
    assert sorted(split["id"]) == sorted(records)
    assert type(split.features["image"]).__name__ == "Image"
    row = split[0]
    record = records[row["id"]]
    from PIL import Image

    with Image.open(sample_dir() / str(record.image)) as original:
        assert row["image"].size == original.size
    assert json.loads(row["meta_rubric"]) == record.meta_rubric.model_dump(mode="json")
    checklist = json.loads(row["checklist"])
    assert row["checks"] == len(checklist["checks"])
    # the same card read from the pushed folder, as the Hub's viewer reads it
    local = datasets.load_dataset(str(repo))
    assert local["test"].num_rows == len(records)


def test_an_owners_card_is_kept_and_a_run_gets_none(hub: FakeHubServer, tmp_path: Path) -> None:
    hub.add_file("alice/bench", "README.md", b"# My benchmark\n\nWritten by hand.\n")
    code, _, err = cli_run("push", str(sample_dir()), "hf://datasets/alice/bench")
    assert code == 0, err
    repo = hub.repo_dir("alice/bench")
    assert (repo / "README.md").read_bytes() == b"# My benchmark\n\nWritten by hand.\n"
    assert (repo / "viewer" / "test-00000-of-00001.parquet").is_file()
    out = tmp_path / "run"
    argv = ["run", "--responses", str(sample_dir() / "responses.jsonl"),
            "--judge", OFFLINE, "--out", str(out)]  # fmt: skip
    assert cli_run(*argv)[0] == 0
    assert cli_run("push", str(out), "hf://datasets/alice/runs/r")[0] == 0
    assert not (hub.repo_dir("alice/runs") / "README.md").exists()


def test_an_invalid_dataset_is_refused_before_anything_is_sent(
    hub: FakeHubServer, tmp_path: Path
) -> None:
    bad = tmp_path / "bench"
    bad.mkdir()
    (bad / "dataset.jsonl").write_text('{"id": "q"}\n')
    code, _, err = cli_run("push", str(bad), "hf://datasets/alice/bench")
    assert code == 2
    assert f"{bad / 'dataset.jsonl'}:1" in err
    assert not any(method == "POST" for method, _ in hub.requests)
