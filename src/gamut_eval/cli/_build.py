"""``gamut build ...``: the construction pipeline, one subcommand per stage, plus ``all``.

Exit status: 0 done; 1 some questions failed (their errors are in ``<stage>/errors.jsonl``;
a rerun retries them); 2 bad input; 3 stopped because images await human decisions.

The options' defaults are read from construct's settings (``BuildSettings``,
``ModelSettings``, ``ResearchSettings``, ``FetchSettings``, ``PipelineOptions``): plain
dataclasses, imported when this command loads (``gamut --help`` does not load it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
from rich.markup import escape

from gamut_eval._extras import model_extras, require_extras
from gamut_eval.cli._common import (
    DATASET_PATH,
    console,
    err_console,
    option_stack,
    with_options,
)
from gamut_eval.cli._main import GroupedCommand, GroupedGroup
from gamut_eval.construct import (
    BuildSettings,
    FetchSettings,
    ModelSettings,
    PipelineOptions,
    ResearchSettings,
)

if TYPE_CHECKING:
    from gamut_eval.construct import (
        BuildSession,
        PipelineReport,
        SearchProvider,
        StageReport,
    )

EXIT_NEEDS_REVIEW = 3
"""The build stopped where people must decide (not a failure, but not finished either)."""

F = TypeVar("F", bound=Callable[..., Any])
R = TypeVar("R")

_dir = click.Path(file_okay=False, path_type=Path)
_file = click.Path(dir_okay=False, exists=True, path_type=Path)
_BUILD, _MODEL, _RESEARCH = BuildSettings(), ModelSettings(), ResearchSettings()
_FETCH, _PIPELINE = FetchSettings(), PipelineOptions()


_common = option_stack(
    click.option("--workdir", type=_dir, default=Path("build"),
                 help="The build folder (stage files, cache)."),
    click.option("--model", default=None,
                 help="Inspect model, e.g. anthropic/claude-sonnet-4-5 (multimodal for "
                 "questions and review)."),
    click.option("--max-repairs", type=int, default=_BUILD.max_repairs,
                 help="Validation errors fed back to the model at most this many times."),
    click.option("--max-concurrency", type=int, default=_BUILD.max_concurrency,
                 help="Images or questions in flight at once."),
    click.option("--max-tokens", type=int, default=_MODEL.max_tokens,
                 help="Completion tokens per model call."),
    click.option("--timeout", type=click.IntRange(min=1), default=_MODEL.timeout_s,
                 help="Seconds per model call attempt."),
    click.option("--probe/--no-probe", default=True,
                 help="Send the model one tiny request (with an image for the stages "
                 "that show images) before any work, so a dead URL, a silent server, a "
                 "rejected key or a model that cannot take images ends the command in "
                 "seconds (exit 2)."),
    click.option("--temperature", type=float, default=_MODEL.temperature,
                 help="Sampling temperature (default: the provider's)."),
    click.option("--structured-output/--no-structured-output",
                 default=_MODEL.structured_output,
                 help="Send the reply's JSON Schema to providers that support it."),
    click.option("--refresh", is_flag=True,
                 help="Ignore cached results and redo every unit of the stage."),
    click.option("--prices", type=_file, default=None,
                 help="Price table (YAML/JSON, USD per million tokens, the format of "
                 "docs/scaling.md) for cost accounting."),
)  # fmt: skip
"""Options every stage takes: folder, model, repairs, concurrency, cache, prices."""

_search = option_stack(
    click.option("--search", default="local",
                 type=click.Choice(["local", "tavily", "brave"]),
                 help="Search provider; web APIs read TAVILY_API_KEY / BRAVE_API_KEY."),
    click.option("--corpus", type=_dir, default=None,
                 help="Folder of .txt/.md/.html documents for --search local."),
    click.option("--per-query", type=int, default=_RESEARCH.per_query,
                 help="Hits kept per query."),
    click.option("--max-snippets", type=int, default=_RESEARCH.max_snippets,
                 help="Snippets kept per question."),
    click.option("--max-queries", type=int, default=_RESEARCH.max_queries,
                 help="Queries the model may plan per question."),
)  # fmt: skip
"""Options of the stages that search: provider, corpus, how much to gather."""

_fetch = option_stack(
    click.option("--fetch-timeout", type=float, default=_FETCH.timeout_s,
                 help="Seconds per source fetched by the audit."),
    click.option("--fetch-max-bytes", type=int, default=_FETCH.max_bytes,
                 help="Bytes read at most per source."),
)  # fmt: skip
"""Limits of the fetcher the audit uses to re-read sources."""


def _run(
    opts: dict[str, Any],
    body: Callable[[BuildSession], Awaitable[R]],
    *,
    images: bool = False,
) -> R:
    """Probe the model (with an image when the stage shows images), open the session the
    options describe, run ``body`` in one event loop."""
    _require_inspect(opts)
    from gamut_eval.construct import BuildSession, probe_build_model
    from gamut_eval.prices import load_prices

    if opts["probe"] and opts["model"]:
        probe_build_model(opts["model"], images=images)
    settings = BuildSettings(
        max_repairs=opts["max_repairs"],
        max_concurrency=opts["max_concurrency"],
        refresh=opts["refresh"],
        model=ModelSettings(
            max_tokens=opts["max_tokens"],
            temperature=opts["temperature"],
            structured_output=opts["structured_output"],
            timeout_s=opts["timeout"],
        ),
    )

    async def main() -> R:
        async with BuildSession(
            opts["workdir"], opts["model"], settings, load_prices(opts["prices"], currency="USD")
        ) as session:
            return await body(session)

    return asyncio.run(main())


def _require_inspect(opts: dict[str, Any]) -> None:
    """The build drives its model through Inspect AI (the ``inspect`` extra, which also
    brings its text extraction and search), checked before a stage writes anything."""
    model = opts.get("model")
    require_extras(model_extras(model) if model else ("inspect",), "gamut build")


def _research(opts: dict[str, Any]) -> ResearchSettings:
    return ResearchSettings(opts["per_query"], opts["max_snippets"], opts["max_queries"])


def _fetcher(opts: dict[str, Any]) -> Any:
    from gamut_eval.construct import Fetcher

    local = opts["search"] == "local"
    return Fetcher(FetchSettings(opts["fetch_timeout"], opts["fetch_max_bytes"], local))


def _searching(
    opts: dict[str, Any],
    body: Callable[[BuildSession, SearchProvider], Awaitable[R]],
    *,
    images: bool = False,
    fetcher: Any = None,
) -> R:
    """``_run`` with the search provider the options describe; it and ``fetcher`` (when
    given) are closed when ``body`` ends."""
    _require_inspect(opts)
    from gamut_eval.construct import make_search_provider

    index = opts["workdir"] / "search" / "local.sqlite"
    provider = make_search_provider(opts["search"], corpus=opts["corpus"], index_path=index)

    async def main(session: BuildSession) -> R:
        try:
            return await body(session, provider)
        finally:
            await provider.aclose()
            if fetcher is not None:
                await fetcher.aclose()

    return _run(opts, main, images=images)


def _running() -> click.Command | None:
    """The command running, whose options the settings named in messages map to."""
    ctx = click.get_current_context(silent=True)
    return ctx.command if ctx is not None else None


def _finish(
    reports: list[StageReport],
    next_step: str | None,
    waiting: bool,
    settings: tuple[str, ...] = (),
) -> None:
    for report in reports:
        print_report(report)
    if next_step:
        step = with_options(next_step, settings, _running())
        console.print("[bold]next:[/bold] " + escape(step), soft_wrap=True)
    if any(r.failed for r in reports):
        raise SystemExit(1)
    if waiting:
        raise SystemExit(EXIT_NEEDS_REVIEW)


@click.group(cls=GroupedGroup, name="build")
def build() -> None:
    """Build a GAMUT-style benchmark over your own images, stage by stage.

    \b
    gamut build import TABLE --map question=COL ...   or start from an existing question set
    gamut build questions --images DIR --model M      candidate questions per image
    gamut build review --model M [--decisions D]      LLM review (stranger test) + people
    gamut build evidence --corpus DOCS [--model M]    snippets with sources
    gamut build draft --model M                       meta-rubrics grounded in snippets
    gamut build refine --model M --corpus DOCS        audit, re-research, verified superset
    gamut build text-only --model M                   text-only questions; dataset.jsonl
    gamut build refine --input revised.jsonl ...      refine a human round's export again
    gamut build diff OLD NEW                          is NEW a superset of OLD?
    gamut build all --images DIR --model M --corpus DOCS [--decisions D]

    Every stage is resumable and cached: a rerun makes no model call for finished work.
    """


def _images(images_help: str) -> Callable[[F], F]:
    """Options of the stages that start from the images: where they are, questions per image."""
    return option_stack(
        click.option("--images", type=click.Path(exists=True, path_type=Path), required=True,
                     help=images_help),
        click.option("--per-image", type=int, default=_PIPELINE.per_image,
                     help="Candidate questions per image."),
    )  # fmt: skip


def _reviewing(rounds_help: str, proposals_help: str) -> Callable[[F], F]:
    """Options of the stages that review candidates: people's decisions, rounds, proposals."""
    return option_stack(
        click.option("--decisions", type=_file, multiple=True,
                     help="Human decisions (JSONL exported by the annotation app); repeatable, "
                     "later rows win."),
        click.option("--max-rounds", type=int, default=_PIPELINE.max_rounds, help=rounds_help),
        click.option("--proposals", type=int, default=_PIPELINE.proposals, help=proposals_help),
    )  # fmt: skip


def _done(report: StageReport) -> None:
    """Print a stage's report and exit as its outcome says (it never waits for people)."""
    _finish([report], report.next_step, False, report.next_step_settings)


@build.command()
@_images("A folder of images, or a JSONL manifest (image, entity, domain, popularity).")
@_common
def questions(images: Path, per_image: int, **opts: Any) -> None:
    """Propose candidate questions for each image (a multimodal model)."""
    from gamut_eval.construct import run_questions

    _done(_run(opts, lambda s: run_questions(s, images, per_image), images=True))


@build.command()
@_reviewing(
    "LLM review rounds per image in one run (new proposals are reviewed).",
    "New candidates proposed for an image with no passing, specific one.",
)
@_common
def review(decisions: tuple[Path, ...], max_rounds: int, proposals: int, **opts: Any) -> None:
    """Review candidates (the stranger test first), merge human decisions."""
    from gamut_eval.construct import run_review

    report = _run(opts, lambda s: run_review(s, decisions, max_rounds, proposals), images=True)
    _finish([report], report.next_step, report.next_step is not None, report.next_step_settings)


@build.command()
@_search
@_common
def evidence(**opts: Any) -> None:
    """Gather snippets with sources for every accepted question (--model plans queries)."""
    from gamut_eval.construct import run_evidence

    research = _research(opts)  # bad settings are refused before the workdir is touched
    _done(_searching(opts, lambda s, p: run_evidence(s, p, research)))


@build.command()
@_common
def draft(**opts: Any) -> None:
    """Draft a meta-rubric per question, grounded in its snippets; validate; compile."""
    from gamut_eval.construct import run_draft

    _done(_run(opts, run_draft))


@build.command()
@click.option(
    "--input",
    "source",
    type=DATASET_PATH,
    default=None,
    help="Refine the rubrics of this file instead of the build folder's drafts: "
    "drafts, refine's own output (refine/refined.jsonl or refine/rubrics.jsonl), a "
    "dataset (`sample` for the bundled one) or the annotation app's export.",
)
@_search
@_fetch
@_common
def refine(source: Path | None, **opts: Any) -> None:
    """Audit, re-research independently, rebuild as a verified superset, re-compile.

    \b
    Reads the build folder's drafts, or with --input FILE any rubric file:
      draft/drafts.jsonl, refine/refined.jsonl, refine/rubrics.jsonl, a dataset, or
      `gamut annotate export` after a human round (its revised checklists included).
    Writes, in --workdir:
      refine/refined.jsonl   audit, searches, restored changes, diffs, people's edits
      refine/rubrics.jsonl   dataset records for `gamut annotate import` (next round)

    The rebuild may only add: anything of the rubric refined it removes or changes
    (items, elements and their positions, nested meta-insights, citations, tiers,
    thresholds, required flags, wording) is restored and listed, except the drops the
    audit allows. rubrics.jsonl has no checklist: the annotation app re-compiles it and
    re-applies the previous round's edits where the refinement left a check unchanged;
    people's revised checklist is kept in metadata.refine.revised_checklist, and each
    edit that no longer fits is listed. Use one --workdir per round.
    """
    from gamut_eval.construct import run_refine

    if source is not None:  # bad input stops before the build folder is touched
        from gamut_eval.construct import read_rubric_file

        read_rubric_file(source)
    research, fetcher = _research(opts), _fetcher(opts)  # refused before the workdir is touched
    _done(
        _searching(opts, lambda s, p: run_refine(s, p, fetcher, research, source), fetcher=fetcher)
    )


@build.command(name="text-only")
@click.option("--input", "source", type=_file, default=None, help="Rows to rewrite (see above).")
@_common
def text_only(source: Path | None, **opts: Any) -> None:
    """Write the text-only version of each question; assemble dataset.jsonl.

    With --input FILE (the app's export, refine/rubrics.jsonl): a new one for each row with
    none, a stale one or one not naming the entity; rows go to text-only/rubrics.jsonl.
    """
    from gamut_eval.construct import run_text_only, run_text_only_input

    _done(_run(opts, (lambda s: run_text_only_input(s, source)) if source else run_text_only))


@build.command(name="all")
@_images("A folder of images, or a JSONL manifest.")
@_reviewing(
    "LLM review rounds per image in one run.", "New candidates proposed per round when needed."
)
@_search
@_fetch
@_common
def all_stages(
    images: Path,
    per_image: int,
    decisions: tuple[Path, ...],
    max_rounds: int,
    proposals: int,
    **opts: Any,
) -> None:
    """Run every stage in order, stopping where human review is needed (exit status 3)."""
    from gamut_eval.construct import run_all

    options = PipelineOptions(per_image, decisions, max_rounds, proposals, _research(opts))
    fetcher = _fetcher(opts)
    result: PipelineReport = _searching(
        opts, lambda s, p: run_all(s, images, p, options, fetcher), images=True, fetcher=fetcher
    )
    if result.stopped_at:
        say("", f"stopped after {result.stopped_at}")
    _finish(list(result.reports), result.next_step, result.incomplete, result.next_step_settings)


# -- what a build stage prints (on stderr): counts, notes, tokens, files, errors -----------


def _tokens(report: StageReport) -> str:
    usage = report.usage
    fresh = usage.fresh
    text = f"{fresh.input:,} tokens in, {fresh.output:,} out ({fresh.calls} call(s))"
    if usage.cost_usd is not None:
        text += f", ${usage.cost_usd:.4f}"
    elif fresh.calls:
        text += ", cost unknown (pass --prices)"
    return text


def say(label: str, text: str) -> None:
    """``label`` (Rich markup) then ``text`` (verbatim: ids like ``[not-json]`` and paths
    are not markup), unwrapped so paths and commands stay on one line."""
    err_console.print(label + escape(text), soft_wrap=True)


def print_report(report: StageReport) -> None:
    """A stage's summary on stderr: counts, notes, tokens, files, errors."""
    say(
        f"[bold]{escape(report.stage)}[/bold]: ",
        f"{report.done} of {report.units} done ({report.cached} from the cache), "
        f"{report.failed} failed; {_tokens(report)}",
    )
    for note in report.notes:
        say("  ", note)
    for name, path in report.outputs.items():
        if name not in ("errors", "usage"):
            say("  ", f"wrote {path}")
    command = _running()
    for error in report.errors:
        message = with_options(error.message, [error.setting] if error.setting else [], command)
        say("  [red]error[/red] ", f"{error.id} [{error.kind}] {message}")
        for detail in error.details[:5]:
            say("    - ", detail)
    if report.errors:
        say("  ", f"errors recorded in {report.outputs['errors']}; a rerun retries them")


# -- gamut build diff ----------------------------------------------------------------------
# The comparison is ``gamut_eval.rubric._superset`` (the one refinement enforces); this
# command reads the two files, prints every difference and exits 0 (additions only), 1
# (something removed or changed) or 2 (bad input).


@click.command(cls=GroupedCommand, name="diff")
@click.argument("old", type=DATASET_PATH)
@click.argument("new", type=DATASET_PATH)
@click.option(
    "--allow-rewording",
    is_flag=True,
    help="Accept changed wording of an otherwise unchanged item or element (listed).",
)
def build_diff(old: Path, new: Path, allow_rewording: bool) -> None:
    """Is NEW a superset of OLD? Every removal or change of a meta-rubric, with its path.

    \b
    OLD and NEW: a meta-rubric (YAML/JSON), or rows with `meta_rubric` (JSONL, JSON,
    Parquet): dataset records (`sample`, dataset.jsonl, the annotation app's export,
    refine/rubrics.jsonl) or build records (draft/drafts.jsonl, refine/refined.jsonl).
    Rubrics are matched by question id.

    \b
    Every item, list element (in its position: check ids count positions), process step
    and its required flag, relationship aspect, nested meta-insight, citation, evidence
    snippet, tier and threshold of OLD must stand unchanged in NEW; NEW may only add.
    Prints one line per difference, `QUESTION PATH: KIND ...` (KIND: removed, changed,
    moved, reworded, added), then the edits people made to OLD's checklists, if any.

    Exit status: 0 NEW is a superset (additions only), 1 something was removed or changed,
    2 bad input.
    """
    from gamut_eval.construct import read_rubric_file
    from gamut_eval.rubric import checklist_edits, diff_rubric_sets, superset_problems

    before, after = read_rubric_file(old), read_rubric_file(new)
    changes = diff_rubric_sets(
        {k: r.meta for k, r in before.items()}, {k: r.meta for k, r in after.items()}
    )
    problems = superset_problems(changes, allow_rewording=allow_rewording)
    for change in changes:
        allowed = change.kind == "reworded" and allow_rewording
        console.print(escape(change.line() + (" (allowed)" if allowed else "")), soft_wrap=True)
    edits = [
        edit
        for qid, row in before.items()
        if row.kind == "dataset" and row.checklist is not None
        for edit in checklist_edits(
            row.meta, row.checklist, after[qid].meta if qid in after else None
        )
    ]
    for edit in edits:
        console.print(escape(edit.line()), soft_wrap=True)
    counts = {
        k: sum(c.kind == k for c in changes)
        for k in ("removed", "changed", "moved", "reworded", "added")
    }
    summary = ", ".join(f"{n} {k}" for k, n in counts.items())
    if edits:
        summary += f"; {len(edits)} checklist edit(s) by people in OLD"
    if problems:
        err_console.print(
            f"{summary}: NEW is not a superset of OLD ({len(problems)} removal(s) or change(s))",
            soft_wrap=True,
        )
        raise SystemExit(1)
    err_console.print(f"{summary}: NEW is a superset of OLD", soft_wrap=True)


# -- gamut build import --------------------------------------------------------------------


@click.command(cls=GroupedCommand, name="import")
@click.argument("source")
@click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("build"),
    help="The build folder the next stages read.",
)
@click.option(
    "--map",
    "mapping",
    multiple=True,
    metavar="FIELD=COLUMN",
    help="The column of a field (question, image, id, entity, answer, domain, "
    "popularity); repeatable. A field not mapped is read from the column of its "
    "own name. A dotted COLUMN reads nested values (turns.0.query).",
)
@click.option("--limit", type=int, default=None, help="Import only the first N rows.")
def import_table(source: str, workdir: Path, mapping: tuple[str, ...], limit: int | None) -> None:
    """Import image + question rows from SOURCE as accepted questions.

    SOURCE is a .jsonl, .json, .parquet or .csv table, or a Hugging Face dataset file
    hf://datasets/OWNER/NAME[@REVISION]/FILE (needs the `hub` extra). Image paths are
    relative to the table; image bytes (Parquet, Hugging Face Image columns) are written
    under WORKDIR/import/images/. The questions skip the question and review stages: go on
    with `gamut build evidence`, then draft, refine and text-only.

    \b
    gamut build import crag.parquet --map question=query --map image=image_path \\
        --map answer=ans_full --map id=interaction_id --map entity=entity_name

    A bad row or column stops the import (exit 2) naming the file, row and column, and
    nothing is written.
    """
    from gamut_eval.construct import import_questions, parse_mapping

    report = import_questions(workdir, source, parse_mapping(mapping), limit=limit)
    err_console.print(f"import: {report.summary()}", highlight=False, soft_wrap=True)
    if report.with_entity < report.rows:
        err_console.print(
            f"import: {report.rows - report.with_entity} question(s) have no entity: the "
            "text-only stage skips them (map one with --map entity=COLUMN)",
            highlight=False,
            soft_wrap=True,
        )
    err_console.print(f"next: gamut build evidence --workdir {workdir} ...", highlight=False)


build.add_command(build_diff)
build.add_command(import_table)

COMMANDS = [build]
