"""The assembled report: its JSON keys (documented), determinism, every output format,
escaping of untrusted text, loading a run folder, families, and question diversity."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gamut_eval.analysis import (
    TABLES,
    Report,
    ReportConfig,
    _report as report_module,
    build_report,
    load_families,
    load_run_data,
    model_family,
    render_html,
    render_markdown,
    write_report,
)
from gamut_eval.analysis._html import CSP
from gamut_eval.calibration import calibrate_run, write_calibration
from gamut_eval.errors import InputError, ValidationError
from gamut_eval.scoring import summarise_scores
from gamut_eval.testing import synthetic_run

ROOT = Path(__file__).resolve().parents[2]
EVIL_MODEL = "evil/<script>alert(1)</script>|x"
EVIL_DOMAIN = "<img src=x onerror=alert(2)>"
MODELS = ["openai/gpt-a", "google/gemini-b", "anthropic/claude-c", "vllm/Qwen/qwen-d", EVIL_MODEL]
JUDGES = ["google/judge-g", "anthropic/judge-a", "vllm/Qwen/judge-q"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = synthetic_run(
        tmp_path_factory.mktemp("run") / "run",
        models=MODELS,
        judges=JUDGES,
        questions=36,
        checks=8,
        domains=["plants", "food", EVIL_DOMAIN],
    )
    # the second judge calibrated with the first on a quarter of the questions
    write_calibration(calibrate_run(out, JUDGES[0], judge=JUDGES[1], fraction=0.25), out)
    return out


@pytest.fixture(scope="module")
def report(run_dir: Path) -> Report:
    return build_report(load_run_data(run_dir), ReportConfig(resamples=200))


# -- JSON keys -------------------------------------------------------------------------------


def test_json_has_meta_and_one_key_per_table(report: Report) -> None:
    data = json.loads(report.model_dump_json())
    assert set(data) == {"meta", *(spec.name for spec in TABLES)}
    assert set(Report.model_fields) == set(data)
    for spec in TABLES:
        if spec.name == "reference_agreement":  # needs gamut/reference (the demo has it)
            assert data[spec.name] == []
            continue
        assert data[spec.name], f"{spec.name} is empty on a 3-judge, 2-setting run"
        for row in data[spec.name]:
            assert list(row) == list(spec.row.model_fields)
    assert data["meta"]["seed"] == 0
    assert data["meta"]["resamples"] == 200
    assert data["meta"]["judges"] == JUDGES  # the run's order, primary first
    assert data["meta"]["scoring"] == {"lam": 0.5, "mu": -2.0, "weights": {
        "answer_critical": 0.6, "valuable": 0.3, "context": 0.1}}  # fmt: skip


def test_every_json_key_is_documented() -> None:
    docs = (ROOT / "docs" / "report.md").read_text()
    meta = report_module.ReportMeta
    for model in [meta, *(spec.row for spec in TABLES)]:
        for name, field in model.model_fields.items():
            assert field.description, f"{model.__name__}.{name} has no docstring"
            assert f"`{name}`" in docs, f"docs/report.md does not document `{name}`"
    for spec in TABLES:
        assert f"`{spec.name}`" in docs


def test_undefined_statistics_are_null_not_nan(report: Report) -> None:
    text = report.model_dump_json()
    assert "NaN" not in text
    assert "Infinity" not in text


# -- what the tables say ---------------------------------------------------------------------


def test_leaderboard_means_equal_the_run_summary(run_dir: Path, report: Report) -> None:
    summary = summarise_scores(load_run_data(run_dir).scores)
    expected = {(r.model, r.setting, r.judge): r.gamut for r in summary.itertuples()}
    assert len(report.leaderboard) == len(expected) == 5 * 3 * 2
    for row in report.leaderboard:
        assert row.gamut == pytest.approx(expected[(row.model, row.setting, row.judge)])
        assert row.gamut_low <= row.gamut <= row.gamut_high
        shares = (row.share_meets, row.share_partially_meets, row.omission_rate,
                  row.contradiction_rate)  # fmt: skip
        assert sum(shares) == pytest.approx(1.0)


def test_breakdowns_cover_every_domain_and_band(report: Report) -> None:
    groups = {(r.dimension, r.group) for r in report.breakdowns}
    assert groups == {
        ("domain", "plants"), ("domain", "food"), ("domain", EVIL_DOMAIN),
        ("popularity", "head"), ("popularity", "torso"), ("popularity", "tail"),
    }  # fmt: skip
    (row,) = [r for r in report.breakdowns if r.group == "food" and r.model == MODELS[0]
              and r.setting == "multimodal" and r.judge == JUDGES[0]]  # fmt: skip
    assert row.questions == 12  # every third of 36 questions


def test_robustness_tables_cover_every_pair_and_judge(report: Report) -> None:
    assert len(report.judge_pairs) == 3 * 2  # 3 pairs x 2 settings
    assert len(report.leniency) == len(report.self_preference) == 3 * 2
    assert len([r for r in report.check_agreement if r.scope == "all"]) == 2
    families = {f.model: f.family for f in report.families}
    assert families["vllm/Qwen/judge-q"] == "qwen"
    assert families[EVIL_MODEL] == "evil"
    # Judge k is 0.15 * k more lenient in the synthetic run: the offsets increase.
    offsets = [r.offset for r in report.leniency if r.setting == "multimodal"]
    assert offsets == sorted(offsets)


def test_same_seed_same_report_other_seed_other_intervals(run_dir: Path) -> None:
    run = load_run_data(run_dir)
    dumps = [
        build_report(run, ReportConfig(seed=seed, resamples=100)).model_dump(exclude={"meta"})
        for seed in (5, 5, 6)
    ]
    assert dumps[0] == dumps[1]
    assert dumps[0] != dumps[2]
    first, other = dumps[0]["leaderboard"][0], dumps[2]["leaderboard"][0]
    assert first["gamut"] == other["gamut"]  # the point estimate does not depend on it
    assert first["gamut_low"] != other["gamut_low"]


# -- diversity -------------------------------------------------------------------------------


def test_question_diversity_is_included(report: Report) -> None:
    (summary,) = report.diversity_summary
    assert summary.questions == 36
    assert summary.method == "tfidf"
    assert sum(t.count for t in report.diversity_templates) == 36
    assert sum(c.size for c in report.diversity_clusters) == 36


def test_report_without_the_diversity_module(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(report_module, "_diversity_module", lambda: None)
    report = build_report(load_run_data(run_dir), ReportConfig(resamples=20))
    assert report.diversity_templates == []
    assert any("diversity is not available" in n for n in report.meta.notes)
    assert "Question diversity is not available" in render_html(report)


# -- outputs ---------------------------------------------------------------------------------


def test_html_is_self_contained_and_escapes_untrusted_text(report: Report) -> None:
    html = render_html(report)
    assert f'<meta http-equiv="Content-Security-Policy" content="{CSP}">' in html
    assert "default-src 'none'" in CSP
    # two script elements: the drill-down's JSON data and its script, admitted by hash
    assert re.findall(r"<script[^>]*>", html.lower()) == [
        '<script type="application/json" id="gamut-data">',
        "<script>",
    ]
    assert "script-src 'sha256-" in CSP
    data = html.split('id="gamut-data">')[1].split("</script>")[0]
    assert "<" not in data  # the planted model id is escaped inside the JSON block
    assert "\\u003cscript\\u003ealert(1)\\u003c/script\\u003e" in data
    assert "<img" not in html.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    # No resource is referenced: the only URL is the SVG namespace (not fetched).
    urls = set(re.findall(r"https?://[^\s\"'<>]+", html))
    assert urls == {"http://www.w3.org/2000/svg"}
    assert not re.search(r"\s(src|href)=\"(?!#)", html)
    for kind in ("scores", "verdicts", "heatmap", "scatter", "modality"):
        assert f'data-plot="{kind}"' in html
    for spec in TABLES:  # reference_agreement: the demo's report has it
        if spec.name != "reference_agreement":
            assert f'data-table="{spec.name}"' in html


def test_markdown_escapes_untrusted_text(report: Report) -> None:
    text = render_markdown(report)
    assert "<script>" not in text
    assert "&lt;script&gt;" in text
    assert "\\|x" in text  # the pipe in the model id cannot end a cell
    lines = [line for line in text.splitlines() if "## Leaderboard" in line]
    assert lines == ["## Leaderboard"]
    table = text.split("## Leaderboard")[1].split("##")[0]
    rows = [line for line in table.splitlines() if line.startswith("| ")]
    widths = {len(re.findall(r"(?<!\\)\|", line)) for line in rows}
    assert len(widths) == 1  # every row has as many cells as the header


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_folder_formats_write_one_file_per_table(report: Report, tmp_path: Path, fmt: str) -> None:
    written = write_report(report, fmt, tmp_path / "out")
    names = sorted(p.name for p in written)
    assert names == sorted([*(f"{spec.name}.{fmt}" for spec in TABLES), "meta.json"])
    path = tmp_path / "out" / f"leaderboard.{fmt}"
    frame = pd.read_csv(path) if fmt == "csv" else pd.read_parquet(path)
    assert len(frame) == len(report.leaderboard)
    assert list(frame.columns) == list(TABLES[0].row.model_fields)
    assert json.loads((tmp_path / "out" / "meta.json").read_text())["seed"] == 0


def test_parquet_schema_is_typed_even_for_an_empty_table(tmp_path: Path, report: Report) -> None:
    empty = report.model_copy(update={"rank_swaps": []})
    write_report(empty, "parquet", tmp_path)
    schema = pq.read_schema(tmp_path / "rank_swaps.parquet")
    assert str(schema.field("gap_a").type) == "double"
    assert str(schema.field("adjacent").type) == "bool"
    clusters = pq.read_schema(tmp_path / "diversity_clusters.parquet")
    assert clusters.field("top_terms").type == pa.list_(pa.string())


def test_single_file_formats_refuse_a_folder(report: Report, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is a folder"):
        write_report(report, "json", tmp_path)
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="must be a folder"):
        write_report(report, "csv", tmp_path / "file")


# -- loading a run folder ----------------------------------------------------------------------


def test_load_run_refuses_what_is_not_a_finished_run(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such run folder"):
        load_run_data(tmp_path / "missing")
    (tmp_path / "f").write_text("")
    with pytest.raises(InputError, match="is a file"):
        load_run_data(tmp_path / "f")
    with pytest.raises(InputError, match=r"no scores\.jsonl"):
        load_run_data(tmp_path)


def test_load_run_names_the_line_that_does_not_parse(tmp_path: Path, run_dir: Path) -> None:
    lines = (run_dir / "scores.jsonl").read_text().splitlines()[:3]
    (tmp_path / "scores.jsonl").write_text("\n".join(lines) + '\n{"question_id": "q-1", "mod')
    with pytest.raises(ValidationError, match=r"line 4.*torn-line"):
        load_run_data(tmp_path)


def test_load_run_reports_a_moved_dataset(tmp_path: Path, run_dir: Path) -> None:
    for name in ("scores.jsonl", "verdicts.jsonl"):
        (tmp_path / name).write_text((run_dir / name).read_text())
    config = json.loads((run_dir / "run.json").read_text())
    config["dataset"] = str(tmp_path / "gone.jsonl")
    (tmp_path / "run.json").write_text(json.dumps(config))
    run = load_run_data(tmp_path)
    assert run.dataset is None
    assert any("gone.jsonl" in note for note in run.notes)
    assert load_run_data(tmp_path, dataset=run_dir / "dataset.jsonl").dataset is not None
    config["scoring"] = {"lam": 2}
    (tmp_path / "run.json").write_text(json.dumps(config))
    with pytest.raises(ValidationError, match=r"scoring\.lam"):
        load_run_data(tmp_path)


# -- families ----------------------------------------------------------------------------------


def test_model_family_from_the_provider_part() -> None:
    assert model_family("openai/gpt-4.1") == "openai"
    assert model_family("google/gemini-3.1-pro") == "google"
    assert model_family("vllm/Qwen/Qwen3-VL-235B") == "qwen"
    assert model_family("openrouter/anthropic/claude-opus") == "anthropic"
    assert model_family("openai-api/deepseek/deepseek-chat") == "deepseek"
    assert model_family("vllm/local-model") == "vllm"  # nothing after the gateway
    overrides = {"vllm/Qwen/*": "alibaba", "openai/gpt-4.1": "OpenAI-GPT"}
    assert model_family("vllm/Qwen/Qwen3-VL-235B", overrides) == "alibaba"
    assert model_family("openai/gpt-4.1", overrides) == "openai-gpt"


def test_load_families_from_yaml(tmp_path: Path) -> None:
    path = tmp_path / "families.yaml"
    path.write_text('google/gemini-3.1-pro: google\n"vllm/Qwen/*": qwen\n')
    assert load_families(path) == {"google/gemini-3.1-pro": "google", "vllm/Qwen/*": "qwen"}
    path.write_text("- a\n- b\n")
    with pytest.raises(ValidationError, match="families-mapping"):
        load_families(path)
    path.write_text("a: 1\nb: ''\n")
    with pytest.raises(ValidationError, match=r"a: the family must be a name.*\n.*b: "):
        load_families(path)
