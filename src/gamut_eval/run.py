"""A whole evaluation as a user runs it: answers, verdicts from each judge, scores.

    RUN_DIR/run.json          the manifest: what makes this run this run, and how it was made
    RUN_DIR/responses.jsonl   one row per (question, model, setting)
    RUN_DIR/store.sqlite      the verdict store (what makes a rerun continue, not restart)
    RUN_DIR/logs/             Inspect logs with every judge's scores (`inspect view`)
    RUN_DIR/verdicts.jsonl    one row per (response, check, judge), as `gamut judge` writes
    RUN_DIR/scores.jsonl      one row per (response, judge): gamut, tiers, counts
    RUN_DIR/summary.json      per (model, setting, judge): mean scores and unscored counts
    RUN_DIR/.finished.json    what the last invocation that finished made its files from

The folder is owned by one run (``_folder.py``) and locked by it while it runs (a second
process on it is refused, naming the first): rerun with the same inputs, it continues
where it stopped (the eval set keeps finished samples, the store finished verdicts); a
different run into it is refused unless ``overwrite``. A rerun that finds nothing to judge
after a run that finished, with the same code, rewrites neither ``verdicts.jsonl`` nor the
logs of given answers (``RunResult.up_to_date``). Every expected answer must be
there (questions x models x settings) unless ``fill_missing`` scores a missing one as an
empty answer, recorded in run.json.
"""

from __future__ import annotations

import dataclasses
import json
import platform
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from gamut_eval import __version__
from gamut_eval._extras import extra_installed, model_extras, require_extras
from gamut_eval._files import atomic_writer, write_json
from gamut_eval._folder import (
    DERIVED,
    Finished,
    claim_folder,
    file_sha256,
    finished_digest,
    lock_folder,
    record_finished,
    take_finished,
)
from gamut_eval._lock import Held
from gamut_eval._tables import json_records, write_rows
from gamut_eval._usage import Usage, answer_usage, priced
from gamut_eval._verdict_table import read_verdict_table
from gamut_eval.dataset import Dataset, load_dataset
from gamut_eval.errors import InputError
from gamut_eval.judge import (
    PROMPT_VERSION,
    Cells,
    JudgePlan,
    JudgeReport,
    JudgeSettings,
    OnEvent,
    ResolvedJudge,
    UnscoredRateExceeded,
    VerdictStore,
    check_unscored_rate,
    judge_pass,
    make_backend,
    probe_judges,
    require_judge_extras,
    resolve_judge,
    tally,
    verdict_rows,
    write_verdict_rows,
)
from gamut_eval.records import FilledAnswer, RunIdentity, RunManifest, score_rows
from gamut_eval.responses import (
    SETTINGS,
    CompleteResponses,
    ResponseRow,
    complete_responses,
    iter_responses,
)
from gamut_eval.scoring import ScoringParams, score_table, summarise_scores

if TYPE_CHECKING:
    from gamut_eval.generate import GenerationSettings
    from gamut_eval.judge import DryRunReport
    from gamut_eval.prices import PriceTable

__all__ = ["RunResult", "estimate_run", "run_benchmark", "score_rows", "score_run_folder"]


@dataclass(frozen=True)
class RunResult:
    out_dir: Path
    summary: pd.DataFrame
    reports: dict[str, JudgeReport] = field(default_factory=dict)
    filled: tuple[FilledAnswer, ...] = ()
    """Answers that were missing and were scored as empty answers."""
    manifest: RunManifest | None = None
    """What was written to run.json, usage and cost included."""
    up_to_date: bool = False
    """Nothing was judged and the run had finished before with these inputs and this code:
    its verdicts, the files derived from them and its logs were kept as they were."""


def _complete(
    rows: list[ResponseRow],
    dataset: Dataset,
    models: Sequence[str] | None,
    setting: str,
    fill_missing: bool,
    source: Path,
) -> CompleteResponses:
    """The answers checked against the grid (dataset questions x models x settings)."""
    wanted = list(SETTINGS) if setting == "both" else [setting]
    kept = [r for r in rows if r.setting in wanted]
    return complete_responses(
        kept, [r.id for r in dataset], models, wanted, fill_missing=fill_missing, source=source
    )


def _given_answers(source: Path, dataset: Dataset, setting: str, fill: bool) -> CompleteResponses:
    """An answers file (JSONL, JSON or Parquet), validated and checked against the grid of
    the models it names, before anything is written."""
    from gamut_eval.responses import check_responses

    check_responses(source, set(dataset.by_id()))
    rows = [row for _, row in iter_responses(source)]
    return _complete(rows, dataset, None, setting, fill, source)


def _identity(
    dataset: Dataset,
    models: Sequence[str],
    responses: Path | None,
    setting: str,
    judges: Sequence[JudgeSettings],
    params: ScoringParams,
    fill_missing: bool,
    generation: GenerationSettings | None,
    calibration: Mapping[str, Any] | None = None,
) -> RunIdentity:
    return RunIdentity(
        dataset_sha256=file_sha256(dataset.path),
        responses_sha256=file_sha256(responses) if responses else None,
        models=list(models),
        setting=setting,
        judges=[j.verdict_identity() for j in judges],
        prompt_version=PROMPT_VERSION,
        scoring=params,
        fill_missing=fill_missing,
        generation=generation.identity() if generation else {},
        calibration=(
            {key: calibration.get(key) for key in ("calibrated_with", "seed")}
            if calibration is not None
            else {}
        ),
    )


def _manifest(
    identity: RunIdentity,
    dataset: Dataset,
    responses: Path | None,
    judges: Sequence[JudgeSettings],
    generation: GenerationSettings | None,
    probed: Sequence[ResolvedJudge],
) -> RunManifest:
    return RunManifest(
        identity=identity,
        gamut_eval_version=__version__,
        python=platform.python_version(),
        started_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        dataset=str(dataset.path),
        questions=len(dataset),
        models=identity.models,
        responses_from=str(responses) if responses else "generated",
        setting=identity.setting,
        prompt_version=PROMPT_VERSION,
        judges=[j.model_dump(mode="json") for j in judges],
        scoring=identity.scoring,
        requests={
            judge.judge: dataclasses.asdict(judge.shape)
            for judge in probed
            if judge.shape is not None
        },
        generation=generation.recorded() if generation else None,
    )


def run_benchmark(
    dataset_path: Path,
    out_dir: Path,
    judges: Sequence[JudgeSettings],
    *,
    models: Sequence[str] = (),
    responses: Path | None = None,
    setting: str = "both",
    params: ScoringParams | None = None,
    on_event: OnEvent | None = None,
    max_connections: int | None = None,
    wait_for_store_s: float = 0.0,
    fill_missing: bool = False,
    overwrite: bool = False,
    long_lived: bool = False,
    generation: GenerationSettings | None = None,
    prices: PriceTable | None = None,
    probe: bool = True,
    sampled: Mapping[str, Collection[str]] | None = None,
    calibration: Mapping[str, Any] | None = None,
    image_root: Path | None = None,
) -> RunResult:
    """Generate (or take) answers, judge them with every judge, score, write RUN_DIR.

    Everything that can be checked before work starts is: the dataset, the answers given
    (every expected answer present, unless ``fill_missing``), and that ``out_dir`` is
    empty, holds this same run (which then continues), or ``overwrite`` is given.
    Refused input raises ``InputError`` with the folder untouched. ``long_lived``: the
    process ends with the run (a command), see ``load_dataset``. ``generation``: how the
    answers are generated (default: the providers' defaults); a run scores one answer per
    (question, model, setting), so more than one epoch is refused. ``probe``: each
    answering model gets one tiny request first (``ProbeFailed`` before anything is
    written); each judge's own ``probe`` setting decides for it. ``sampled``: the judges
    that grade only the answers to some questions (every model and setting of each), and
    those questions (the strong judge of calibrated scores, ``gamut_eval.calibration``).
    ``calibration``: recorded in run.json as drawn before anything is judged; its
    ``calibrated_with`` and ``seed`` are part of the run's identity. ``image_root``: the folder
    the dataset's image paths are relative to (default: the dataset file's folder).
    """
    params = params or ScoringParams()
    sampled = dict(sampled or {})
    if bool(models) == (responses is not None):
        raise InputError(
            "give the models to generate answers with (models), or existing answers "
            "(responses), not both",
            setting=("models", "responses"),
        )
    if not judges:
        raise InputError("give at least one judge (judges)", setting="judges")
    generation = _check_generation(generation, responses)
    # What an extra must bring is checked first: a missing one ends the run with nothing
    # written, probe or not.
    require_extras(
        (e for m in models for e in model_extras(m)), "answering with " + ", ".join(models)
    )
    unprobed = [resolve_judge(settings) for settings in judges]
    require_judge_extras(unprobed)
    dataset = load_dataset(dataset_path, long_lived=long_lived, image_root=image_root)
    given = _given_answers(responses, dataset, setting, fill_missing) if responses else None
    identity = _identity(
        dataset, models, responses, setting, judges, params, fill_missing, generation, calibration
    )
    note = _noter(on_event)

    def probed() -> list[ResolvedJudge]:
        # Each judge is resolved once; the probe returns it with the request shape it
        # learned (a dead endpoint ends the run here, with nothing written), and the
        # passes read that.
        resolved = probe_judges(unprobed)
        if given is None and probe:
            from gamut_eval.generate import probe_models

            probe_models(models, setting, generation)
        return resolved

    # A folder in use is locked (after a read-only check that it can be this run's) before
    # the probes, so a second run on it is refused at once; a new one is made and locked
    # only once they passed. Nothing is deleted or written before the lock is held.
    resolved = None if out_dir.exists() else probed()
    locked = lock_folder(out_dir, identity, overwrite=overwrite, wait_s=wait_for_store_s, note=note)
    with locked as held:
        if resolved is None:
            resolved = probed()
        claim_folder(out_dir, identity, overwrite=overwrite, note=note)
        previous = take_finished(out_dir)
        manifest = _manifest(identity, dataset, responses, judges, generation, resolved)
        if calibration is not None:
            manifest = manifest.model_copy(update={"calibration": dict(calibration)})
        write_json(out_dir / "run.json", manifest.model_dump(mode="json"))
        answers = out_dir / "responses.jsonl"
        if given is None:
            from gamut_eval.generate import generate_responses

            generate_responses(
                dataset.path,
                models,
                setting,
                out_dir / "logs",
                answers,
                max_connections=max_connections,
                generation=generation,
                probe=False,
                image_root=image_root,
            )
            generated = [row for _, row in iter_responses(answers)]
            given = _complete(generated, dataset, models, setting, fill_missing, answers)
        write_rows(answers, (row.model_dump(mode="json", exclude_none=True) for row in given.rows))
        filled = tuple(FilledAnswer(**key._asdict()) for key in given.filled)
        if filled:
            manifest = manifest.model_copy(update={"filled_missing": list(filled)})
            write_json(out_dir / "run.json", manifest.model_dump(mode="json"))
        reports, finished, up_to_date = _judge_all(
            dataset, answers, resolved, out_dir, on_event, identity, previous, held, sampled
        )
        summary = score_run_folder(dataset, out_dir, params)
        if extra_installed("inspect"):  # given answers are graded without it; logs need it
            from gamut_eval.generate import write_run_logs

            write_run_logs(dataset, given.rows, judges, out_dir, responses, params, keep=up_to_date)
        plan = JudgePlan(dataset, answers, judges[0])
        manifest = _with_usage(manifest, plan, given.rows, judges, out_dir, prices, sampled)
        write_json(out_dir / "run.json", manifest.model_dump(mode="json"))
        record_finished(out_dir, finished)
        return RunResult(out_dir, summary, reports, filled, manifest, up_to_date)


def _noter(on_event: OnEvent | None) -> Callable[[str], object] | None:
    """A message for the user, as a pass's note."""
    if on_event is None:
        return None
    from gamut_eval.judge import JudgeStats, PassEvent

    return lambda message: on_event(PassEvent("note", "", JudgeStats(), message))


def estimate_run(
    dataset_path: Path,
    out_dir: Path,
    judges: Sequence[JudgeSettings],
    responses: Path,
    *,
    setting: str = "both",
    fill_missing: bool = False,
    prices: PriceTable | None = None,
    image_root: Path | None = None,
) -> list[DryRunReport]:
    """What judging ``responses`` with each judge would send and cost, sending and writing
    nothing (``gamut run --dry-run``): the same checks the run would make, including its
    refusals, and the store of ``out_dir``, if it has one, for what is already judged."""
    from gamut_eval.judge import VERDICT_OUTPUT_TOKENS, DryRunBackend, MemoryStore

    dataset = load_dataset(dataset_path, image_root=image_root)
    given = _given_answers(responses, dataset, setting, fill_missing)
    store_path = out_dir / "store.sqlite"
    reports = []
    for settings in judges:
        backend = DryRunBackend(resolve_judge(settings, "dry-run"), prices, VERDICT_OUTPUT_TOKENS)
        plan = JudgePlan(dataset, list(given.rows), settings)
        if store_path.is_file():
            with VerdictStore(store_path, writer=False) as store:
                judge_pass(plan, backend, store)
        else:
            judge_pass(plan, backend, MemoryStore())
        assert backend.report is not None
        reports.append(backend.report)
    return reports


def _with_usage(
    manifest: RunManifest,
    plan: JudgePlan,
    answers: Sequence[ResponseRow],
    judges: Sequence[JudgeSettings],
    out_dir: Path,
    prices: PriceTable | None,
    sampled: Mapping[str, Collection[str]],
) -> RunManifest:
    """The manifest with what the run's answers and verdicts cost (summed over the stored
    verdicts of this run's checks, so earlier, interrupted invocations count too)."""
    judge_usage = {}
    with VerdictStore(out_dir / "store.sqlite", writer=False) as store:
        for settings in judges:
            own = plan.for_judge(settings, sampled.get(settings.judge))
            keys = (answer.keys for answer in own)
            prompt, cached, written, completion = store.usage(keys)
            used = Usage(
                input=prompt, cached_input=cached, cache_write_input=written, output=completion
            )
            judge_usage[settings.judge] = priced(settings.judge, used, prices)
    model_usage = {m: priced(m, u, prices) for m, u in answer_usage(answers).items()}
    return manifest.model_copy(
        update={
            "model_usage": model_usage,
            "judge_usage": judge_usage,
            "currency": prices.currency if prices is not None else None,
        }
    )


def _check_generation(
    generation: GenerationSettings | None, responses: Path | None
) -> GenerationSettings | None:
    """The generation settings of a run: none with given answers, one epoch."""
    if responses is not None:
        if generation is not None and generation.identity():
            raise InputError(
                "the generation settings (temperature, max tokens, system message, epochs, "
                "model arguments) apply to generated answers; with responses given they would "
                "be ignored",
                setting="responses",
            )
        return None
    if generation is None:
        from gamut_eval.generate import GenerationSettings

        return GenerationSettings()
    if generation.epochs > 1:
        raise InputError(
            f"epochs {generation.epochs}: a run scores one answer per question, model and "
            "setting; generate several epochs with `gamut generate --epochs N` (one row per "
            "epoch) and analyse them there",
            setting="epochs",
        )
    return generation


def _judge_all(
    dataset: Dataset,
    answers: Path,
    judges: Sequence[ResolvedJudge],
    out_dir: Path,
    on_event: OnEvent | None,
    identity: RunIdentity,
    previous: Finished | None,
    held: Held,
    sampled: Mapping[str, Collection[str]],
) -> tuple[dict[str, JudgeReport], Finished, bool]:
    """Judge with every judge and write ``verdicts.jsonl``; return each judge's report,
    the record to write when the run finishes, and whether the verdicts are those the
    run's last finished invocation wrote (``previous``: then nothing is rewritten).
    ``sampled``: the questions a judge grades the answers to, when not all."""
    # The answers are validated once, for every judge.
    plan = JudgePlan(dataset, answers, judges[0].settings)
    plans = [plan.for_judge(judge.settings, sampled.get(judge.judge)) for judge in judges]
    reports: dict[str, JudgeReport] = {}
    with VerdictStore(out_dir / "store.sqlite", held=held) as store:
        passes = [
            judge_pass(p, make_backend(judge), store, on_event)
            for p, judge in zip(plans, judges, strict=True)
        ]
        # The questions sampled are part of what the verdict file is written from (a rerun
        # with a smaller fraction judges nothing new, but writes fewer of the strong judge's).
        chosen = {judge: sorted(questions) for judge, questions in sampled.items()}
        state = store.state() + (json.dumps(chosen, sort_keys=True) if chosen else "")
        digest = finished_digest(identity, state)
        up_to_date = (
            previous is not None
            and previous.digest == digest
            and set(previous.verdicts) == {j.judge for j in judges}
            and (out_dir / "verdicts.jsonl").is_file()
        )
        if previous is not None and up_to_date:
            for judge_plan, stats in zip(plans, passes, strict=True):
                name = judge_plan.settings.judge
                count, unscored = previous.verdicts[name]
                kept = previous.cells.get(name, {})
                reports[name] = JudgeReport(stats, count, unscored, kept)
        else:
            for name in DERIVED:  # about to be older than the verdicts: never left so
                (out_dir / name).unlink(missing_ok=True)
            with atomic_writer(out_dir / "verdicts.jsonl") as handle:
                for judge_plan, stats in zip(plans, passes, strict=True):
                    cells: Cells = {}
                    tallied = tally(verdict_rows(judge_plan, store), cells)
                    count, unscored = write_verdict_rows(tallied, handle)
                    reports[judge_plan.settings.judge] = JudgeReport(stats, count, unscored, cells)
    failures = []
    for judge in judges:
        try:
            check_unscored_rate(reports[judge.judge], judge.settings)
        except UnscoredRateExceeded as exc:
            failures.append(str(exc))
    if failures:
        raise UnscoredRateExceeded("\n".join(failures), setting="max_unscored_rate")
    record = Finished(
        digest,
        {name: (r.rows, r.unscored) for name, r in reports.items()},
        {name: dict(r.cells) for name, r in reports.items()},
    )
    return reports, record, up_to_date


def score_run_folder(dataset: Dataset, out_dir: Path, params: ScoringParams) -> pd.DataFrame:
    """``gamut run``'s scoring step: the run folder's verdicts.jsonl (read once, the scored
    fields only) scored into scores.jsonl and summary.json; returns the summary."""
    verdicts = read_verdict_table(out_dir / "verdicts.jsonl").frame
    scores = score_table(verdicts, dataset.checklists(), params)
    write_rows(out_dir / "scores.jsonl", score_rows(scores))
    summary = summarise_scores(scores)
    write_json(out_dir / "summary.json", json_records(summary))
    return summary
