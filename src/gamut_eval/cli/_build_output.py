"""What a build stage printed: its counts, notes, tokens, files and errors (on stderr)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape

from gamut_eval.cli._common import err_console

if TYPE_CHECKING:
    from gamut_eval.construct import StageReport

__all__ = ["print_report", "say"]


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
    for error in report.errors:
        say("  [red]error[/red] ", f"{error.id} [{error.kind}] {error.message}")
        for detail in error.details[:5]:
            say("    - ", detail)
    if report.errors:
        say("  ", f"errors recorded in {report.outputs['errors']}; a rerun retries them")
