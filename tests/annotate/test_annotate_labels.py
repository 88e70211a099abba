"""People's verdicts for calibrated scores: the answers of a calibration sample imported
from a run folder, labelled through the app, exported as the verdict file
``gamut calibrate --with`` reads, and the refusals of the import."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from annotate_helpers import Client
from click.testing import CliRunner
from markupsafe import escape
from sqlalchemy import select

from gamut_eval.annotate import Database, export_labels, import_answers
from gamut_eval.annotate._db import AnswerLabel, LabelAnswer, LabelQuestion, User
from gamut_eval.annotate._labels import VERDICTS
from gamut_eval.cli import cli
from gamut_eval.data import sample_dir
from gamut_eval.dataset import load_dataset

SAMPLE = ["sample-espresso", "sample-falcon-9", "sample-sunflower"]
"""What ``gamut calibration-sample --dataset sample --fraction 0.25 --seed 1`` draws."""


def run(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args))


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A demo-like run: the bundled sample's answers graded by the offline judge."""
    out = tmp_path_factory.mktemp("labels") / "RUN"
    result = run("run", "--dataset", "sample", "--responses",
                 str(sample_dir() / "responses.jsonl"), "--judge", "gamut/offline",
                 "--out", str(out))  # fmt: skip
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture
def sample_list(tmp_path: Path) -> Path:
    out = tmp_path / "sample.txt"
    result = run("calibration-sample", "--dataset", "sample", "--fraction", "0.25",
                 "--seed", "1", "-o", str(out))  # fmt: skip
    assert result.exit_code == 0, result.output
    assert out.read_text().split() == SAMPLE
    return out


def _answers(run_dir: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (run_dir / "responses.jsonl").read_text().splitlines()]
    return [r for r in rows if r["question_id"] in SAMPLE]


def _checks() -> dict[str, list[str]]:
    checklists = load_dataset(sample_dir() / "dataset.jsonl").checklists()
    return {q: [c.id for c in checklists[q].checks] for q in SAMPLE}


def _answer_ids(db: Database) -> dict[tuple[str, str, str], int]:
    with db.read() as session:
        rows = session.execute(
            select(
                LabelQuestion.question_id, LabelAnswer.model, LabelAnswer.setting, LabelAnswer.id
            ).join(LabelQuestion, LabelQuestion.id == LabelAnswer.question_id)
        ).all()
    return {(q, m, s): i for q, m, s, i in rows}


def test_import_label_export_then_calibrate(
    db: Database, tokens: dict[str, str], run_dir: Path, sample_list: Path, tmp_path: Path
) -> None:
    """Every answer of the run to the sampled questions is imported with its question's
    checklist; two people label them over HTTP; the export is what `gamut calibrate`
    reads, and calibrating the offline judge with it runs."""
    summary = import_answers(db, run_dir, sample_list)
    answers = _answers(run_dir)
    assert (summary.questions, summary.answers_new) == (3, len(answers)) == (3, 18)
    again = import_answers(db, run_dir, sample_list)  # the same run again: nothing new
    assert (again.answers_new, again.answers_present) == (0, 18)
    ids = _answer_ids(db)
    assert set(ids) == {(a["question_id"], a["model"], a["setting"]) for a in answers}
    checks = _checks()

    ann1 = Client(db).login(tokens["ann1"], "ann1")
    first = ann1.get("/labels")
    assert first.status_code == 303
    assert first.headers["location"] == f"/labels/{min(ids.values())}"
    order = sorted(ids.items(), key=lambda kv: kv[1])
    (question, model, setting), answer_id = order[0]
    page = ann1.get(f"/labels/{answer_id}")
    assert page.status_code == 200
    response = next(
        a["response"]
        for a in answers
        if (a["question_id"], a["model"], a["setting"]) == order[0][0]
    )
    assert str(escape(response[:60])) in page.text
    assert "0 of 18 answers labelled" in page.text
    assert model not in page.text  # the labeller does not see which model answered
    assert page.text.count('type="radio"') == 4 * len(checks[question])

    # ann1 labels every answer but the last: those of one model and setting all "meets",
    # the others a mix; the first answer "contradicts" on its first check, "meets" on the
    # rest. The first save leaves one check open.
    clean = next(
        (m, s) for (_, m, s), _ in order if (m, s) not in {(model, setting), order[-1][0][1:]}
    )
    n = len(checks[question])
    partial = {f"verdict-{i}": "meets" for i in range(1, n)}
    saved = ann1.post(f"/labels/{answer_id}", {**partial, "note": "first pass"})
    assert saved.status_code == 303
    assert saved.headers["location"] == f"/labels/{answer_id}?done=partial"
    for (q, m, s), other in order[:-1]:
        verdicts = [VERDICTS[(i + other) % 4] for i in range(len(checks[q]))]
        if (m, s) == clean:
            verdicts = ["meets"] * len(checks[q])
        if other == answer_id:
            verdicts = ["contradicts"] + ["meets"] * (len(checks[q]) - 1)
        saved = ann1.post(f"/labels/{other}", {f"verdict-{i}": v for i, v in enumerate(verdicts)})
        assert saved.status_code == 303, saved.text
        assert saved.headers["location"] == f"/labels?after={other}&done=saved"
    assert ann1.get("/labels").headers["location"] == f"/labels/{order[-1][1]}"
    assert "17 of 18 answers labelled" in ann1.get(f"/labels/{order[-1][1]}").text

    # ann2 labels the last answer partially, then whole: "missing" everywhere.
    ann2 = Client(db).login(tokens["ann2"], "ann2")
    (last_q, last_model, last_setting), last_id = order[-1]
    ann2.post(f"/labels/{last_id}", {"verdict-0": "missing"})
    out = tmp_path / "labels.jsonl"
    export = export_labels(db, out)
    assert (export.answers, export.left_out, export.several) == (17, 1, 0)
    assert "1 answers left out (not every check labelled)" in export.describe()
    ann2.post(f"/labels/{last_id}", {f"verdict-{i}": "missing" for i in range(len(checks[last_q]))})
    ann1.post(f"/labels/{last_id}", {f"verdict-{i}": "meets" for i in range(len(checks[last_q]))})
    done = ann1.get("/labels?after=0&done=saved")
    assert done.status_code == 200
    assert "every check of all 18 answers imported" in done.text

    result = run("annotate", "export-labels", "--out", str(out), "--db", db.url)
    assert result.exit_code == 0, result.output
    assert "0 answers left out" in result.output
    assert "1 answers labelled whole by several people" in result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == sum(len(checks[a["question_id"]]) for a in answers)
    assert rows[0] == {
        "question_id": question,
        "model": model,
        "setting": setting,
        "judge": "people",
        "check_id": checks[question][0],
        "verdict": "contradicts",
        "labeller": "ann1",
    }
    # The last answer: ann2 completed it first, so theirs is exported.
    last = [r for r in rows if (r["question_id"], r["model"], r["setting"]) == order[-1][0]]
    assert {(r["verdict"], r["labeller"]) for r in last} == {("missing", "ann2")}
    assert (last_model, last_setting) == (last[0]["model"], last[0]["setting"])

    # One person's labels, named after them.
    own = tmp_path / "ann2.jsonl"
    result = run("annotate", "export-labels", "--out", str(own), "--labeller", "ann2",
                 "--db", db.url)  # fmt: skip
    assert result.exit_code == 0, result.output
    assert {json.loads(line)["judge"] for line in own.read_text().splitlines()} == {"ann2"}

    with db.read() as session:
        who = session.execute(
            select(User.name, AnswerLabel.note).join(User, User.id == AnswerLabel.user_id)
            .where(AnswerLabel.answer_id == answer_id)
        ).all()  # fmt: skip
    assert who == [("ann1", "")]  # the whole save replaced the first pass and its note

    calibrated_json = tmp_path / "cal.json"
    result = run("calibrate", str(run_dir), "--with", str(out), "--dataset", "sample",
                 "--judge", "gamut/offline", "--json", "-o", str(calibrated_json))  # fmt: skip
    assert result.exit_code == 0, result.output
    calibrated = json.loads(calibrated_json.read_text())
    assert calibrated["calibrated_with"] == str(out)
    assert sorted(calibrated["sample"]) == SAMPLE
    # People said "meets" to every check of every answer of one model and setting:
    # their plain mean over the sample is 1.0 there, and below it for the first answer's.
    rows_by = {(r["model"], r["setting"]): r for r in calibrated["rows"]}
    assert rows_by[clean]["naive_calibrated_with"] == pytest.approx(1.0)
    assert rows_by[(model, setting)]["naive_calibrated_with"] < 1.0
    assert rows_by[clean]["n_calibration"] == 3


def test_the_labelling_form_is_checked_and_guarded(
    db: Database, tokens: dict[str, str], run_dir: Path, sample_list: Path
) -> None:
    """A verdict that is not one of the four is refused (422, nothing saved); a post
    without the CSRF token is refused (403); signed out, the page asks to sign in."""
    ann1 = Client(db).login(tokens["ann1"], "ann1")
    assert "No answers have been imported for labelling yet" in ann1.get("/labels").text
    import_answers(db, run_dir, sample_list)
    answer_id = min(_answer_ids(db).values())
    bad = ann1.post(f"/labels/{answer_id}", {"verdict-0": "<b>great</b>"})
    assert bad.status_code == 422
    assert "is not a verdict" in bad.text
    assert "<b>great</b>" not in bad.text
    forged = ann1.http.post(f"/labels/{answer_id}", data={"verdict-0": "meets"})
    assert forged.status_code == 403
    stranger = Client(db)
    assert stranger.get(f"/labels/{answer_id}").headers["location"] == "/login"
    assert ann1.get("/labels/99999").status_code == 404
    with db.read() as session:
        assert session.scalars(select(AnswerLabel)).all() == []
    assert 'href="/labels"' in ann1.get("/").text  # linked from the dashboard


def test_migrations_add_the_label_tables_to_an_older_database(db: Database) -> None:
    """Down to 0002 and up again: the three tables come and go."""
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import inspect

    config = Config()
    config.set_main_option(
        "script_location", str(Path(__file__).parents[2] / "src/gamut_eval/annotate/migrations")
    )
    with db.engine.begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, "0002")
    assert "label_answers" not in inspect(db.engine).get_table_names()
    db.migrate()
    tables = set(inspect(db.engine).get_table_names())
    assert {"label_questions", "label_answers", "answer_labels"} <= tables


def test_import_refusals(run_dir: Path, sample_list: Path, tmp_path: Path) -> None:
    """Exit 2 with one line naming the file, line and value; nothing imported."""
    db = str(tmp_path / "a.sqlite")
    bad = tmp_path / "bad.txt"
    bad.write_text("sample-espresso\n\nsample-nowhere\n")
    result = run("annotate", "import-answers", str(run_dir), "--sample", str(bad), "--db", db)
    assert result.exit_code == 2
    assert f"{bad}:3: question id 'sample-nowhere' is not in the dataset" in result.output
    assert "Traceback" not in result.output

    empty = tmp_path / "no-answers"
    empty.mkdir()
    shutil.copy(run_dir / "run.json", empty / "run.json")
    result = run("annotate", "import-answers", str(empty), "--sample", str(sample_list), "--db", db)
    assert result.exit_code == 2
    assert "the run folder has no answers" in result.output

    partial = tmp_path / "partial"
    partial.mkdir()
    shutil.copy(run_dir / "run.json", partial / "run.json")
    kept = [
        line
        for line in (run_dir / "responses.jsonl").read_text().splitlines(keepends=True)
        if '"sample-falcon-9"' not in line
    ]
    (partial / "responses.jsonl").write_text("".join(kept))
    result = run("annotate", "import-answers", str(partial), "--sample", str(sample_list),
                 "--db", db)  # fmt: skip
    assert result.exit_code == 2
    assert f"{sample_list}:2: question 'sample-falcon-9' has no answers in" in result.output

    no_manifest = tmp_path / "no-manifest"
    no_manifest.mkdir()
    shutil.copy(run_dir / "responses.jsonl", no_manifest / "responses.jsonl")
    result = run("annotate", "import-answers", str(no_manifest), "--sample", str(sample_list),
                 "--db", db)  # fmt: skip
    assert result.exit_code == 2
    assert "--dataset" in result.output
    result = run("annotate", "import-answers", str(no_manifest), "--sample", str(sample_list),
                 "--dataset", "sample", "--db", db)  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "18 answers to 3 sampled questions (18 new, 0 already imported)" in result.output

    result = run("annotate", "export-labels", "--out", str(tmp_path / "l.jsonl"), "--db", db)
    assert result.exit_code == 2
    assert "no answer has all its checks labelled yet (18 answers imported)" in result.output
    assert not (tmp_path / "l.jsonl").exists()

    changed = tmp_path / "changed"
    changed.mkdir()
    shutil.copy(run_dir / "run.json", changed / "run.json")
    rows = [json.loads(line) for line in (run_dir / "responses.jsonl").read_text().splitlines()]
    edited = next(r for r in rows if r["question_id"] == "sample-espresso")
    edited["response"] += " (edited)"
    (changed / "responses.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = run("annotate", "import-answers", str(changed), "--sample", str(sample_list),
                 "--db", db)  # fmt: skip
    assert result.exit_code == 2
    assert "differs from the one imported from" in result.output


def test_a_hostile_answer_renders_as_text(
    db: Database, tokens: dict[str, str], run_dir: Path, sample_list: Path, tmp_path: Path
) -> None:
    """An answer is model output: its markup is escaped on the labelling page."""
    hostile = tmp_path / "RUN"
    hostile.mkdir()
    shutil.copy(run_dir / "run.json", hostile / "run.json")
    rows = [json.loads(line) for line in (run_dir / "responses.jsonl").read_text().splitlines()]
    for row in rows:
        row["response"] = "<script>alert(1)</script><img src=x onerror=alert(2)> " + row["response"]
    (hostile / "responses.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    import_answers(db, hostile, sample_list)
    ann1 = Client(db).login(tokens["ann1"], "ann1")
    page = ann1.get(f"/labels/{min(_answer_ids(db).values())}").text
    assert "<script>alert(1)" not in page
    assert "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;" in page
