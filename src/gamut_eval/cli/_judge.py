"""``gamut judge``: grade every (response, check) with an LLM judge."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
import pydantic

from gamut_eval.cli._common import err_console
from gamut_eval.cli._judge_scale import run_scaled, scale_options, take_scale_options
from gamut_eval.cli._progress import judge_progress
from gamut_eval.dataset import load_dataset
from gamut_eval.errors import ValidationError
from gamut_eval.judge._engine import JudgeStats
from gamut_eval.judge._run import judge_responses
from gamut_eval.judge._settings import JudgeSettings
from gamut_eval.rubric._load import pydantic_details

_file = click.Path(dir_okay=False, path_type=Path)


F = TypeVar("F", bound=Callable[..., Any])


def judge_options(command: F) -> F:
    """Options shared by ``gamut judge`` and ``gamut run``."""
    options = [
        click.option(
            "--backend",
            type=click.Choice(["auto", "fast", "inspect"]),
            default="auto",
            show_default=True,
            help="fast: aiohttp client for OpenAI-compatible APIs; inspect: any Inspect provider.",
        ),
        click.option("--base-url", help="Override the judge endpoint's base URL (fast backend)."),
        click.option(
            "--concurrency",
            type=click.IntRange(1, 4096),
            default=64,
            show_default=True,
            help="Judge requests in flight.",
        ),
        click.option("--rpm", type=click.IntRange(min=1), help="Requests-per-minute limit."),
        click.option("--tpm", type=click.IntRange(min=1), help="Tokens-per-minute limit."),
        click.option(
            "--timeout",
            "timeout_s",
            type=click.FloatRange(min=0, min_open=True),
            default=120.0,
            show_default=True,
            help="Seconds per request.",
        ),
        click.option(
            "--max-retries",
            type=click.IntRange(0, 20),
            default=6,
            show_default=True,
            help="Transport retries (429, 5xx, timeouts).",
        ),
        click.option(
            "--max-reasks",
            type=click.IntRange(0, 10),
            default=2,
            show_default=True,
            help="Re-asks after a malformed verdict before a check is unscored.",
        ),
        click.option(
            "--max-unscored-rate",
            type=click.FloatRange(0, 1),
            default=0.02,
            show_default=True,
            help="Fail the run if more checks than this share cannot be graded.",
        ),
        click.option(
            "--judge-image/--no-judge-image",
            default=False,
            show_default=True,
            help="Show the judge the image (multimodal setting).",
        ),
        click.option(
            "--inspect-batch",
            is_flag=True,
            help="inspect backend: use the provider's batch API (Anthropic, Google...).",
        ),
        click.option(
            "--structured-output/--no-structured-output",
            default=True,
            show_default=True,
            help="Request the verdict JSON schema via response_format.",
        ),
        click.option(
            "--wait-for-store",
            type=click.FloatRange(min=0),
            default=0.0,
            show_default=True,
            help="Seconds to wait if another process is using the store.",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def warn_flagged(stats: JudgeStats) -> None:
    """Name the responses that carry invisible (zero-width or bidi) characters."""
    if not stats.flagged:
        return
    err_console.print(
        f"[yellow]warning:[/yellow] {len(stats.flagged)} response(s) contain zero-width or bidi "
        "control characters (judged as written; review them):"
    )
    for question, model, setting, chars in stats.flagged[:20]:
        err_console.print(f"  {question} / {model} / {setting}: {' '.join(chars)}")


def settings_from(judge: str, **options: object) -> JudgeSettings:
    options.pop("wait_for_store", None)
    try:
        return JudgeSettings.model_validate({"judge": judge, **options})
    except pydantic.ValidationError as exc:
        raise ValidationError([d.in_file("judge options") for d in pydantic_details(exc)]) from None


@click.command()
@click.option("--dataset", type=_file, required=True, help="Dataset JSONL (questions and rubrics).")
@click.option(
    "--responses",
    type=_file,
    required=True,
    help="Responses JSONL: question_id, model, setting, response.",
)
@click.option(
    "--judge",
    "judge",
    required=True,
    help="Judge model, e.g. openai/gpt-4.1-mini or openai-api/vllm/qwen3.",
)
@click.option(
    "--store",
    type=_file,
    help="Verdict store (SQLite). Default: verdicts.sqlite beside --out, else here.",
)
@click.option("--out", type=_file, help="Verdict rows JSONL (default: standard output).")
@scale_options  # issue 8: --backend batch|ray, --dry-run (cli/_judge_scale.py)
@judge_options
def judge(
    dataset: Path,
    responses: Path,
    judge: str,
    store: Path | None,
    out: Path | None,
    **options: object,
) -> None:
    """Grade every check of every response independently, with four verdicts.

    Runs resume: verdicts already in the store are not requested again, and editing one
    check re-sends only that check. Checks the judge cannot grade are recorded as unscored
    with a reason, never as a model failure; past --max-unscored-rate the run fails (exit 1).
    """
    scale = take_scale_options(options)  # issue 8
    wait = float(options.get("wait_for_store") or 0.0)  # type: ignore[arg-type]
    settings = settings_from(judge, **options)
    store = store or (out.parent if out else Path.cwd()) / "verdicts.sqlite"
    if scale.active:  # issue 8: dry run, batch or ray pass
        run_scaled(scale, dataset, responses, settings, store, out, wait)
        return
    data = load_dataset(dataset)
    with judge_progress(f"judging with {judge}") as progress:
        report = judge_responses(
            data,
            responses,
            settings,
            store,
            out,
            wait_for_store_s=wait,
            on_progress=progress.update,
            on_start=progress.start,
        )
        progress.update(report.stats, force=True)
    stats = report.stats
    warn_flagged(stats)
    err_console.print(
        f"{report.rows} verdict rows ({stats.cached} from the store, {stats.judged} judged now in "
        f"{stats.calls} calls; {report.unscored} unscored); store: {store}"
    )


COMMANDS = [judge]
