"""The dry-run report of ``gamut judge --dry-run`` as a table."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.table import Table

if TYPE_CHECKING:
    from gamut_eval.judge import DryRunReport

__all__ = ["dry_run_table"]


def _money(amount: float) -> str:
    return f"{amount:,.2f}" if amount >= 1 else f"{amount:.4f}"


def dry_run_table(report: DryRunReport) -> Table:
    """The dry-run report as a two-column table."""
    table = Table(title=f"Dry run: {report.judge} (nothing sent)", show_header=False)
    table.add_column("what")
    table.add_column("value", justify="right")
    money = report.currency or ""
    rows = [
        ("checks in the responses file", f"{report.total_checks:,}"),
        ("already in the store / repeated", f"{report.cached:,}"),
        ("requests to send", f"{report.requests:,}"),
        ("prompt tokens (estimated)", f"{report.prompt_tokens:,}"),
        ("output tokens (estimated)", f"{report.output_tokens:,}"),
        ("output tokens (at most)", f"{report.max_output_tokens:,}"),
        ("shared-prefix fraction", f"{100 * report.shared_prefix_fraction:.1f}%"),
        ("prompt tokens a prefix cache can serve", f"{report.cacheable_tokens:,}"),
    ]
    for label, cost in (
        ("cost: standard", report.cost_standard),
        ("cost: with prompt caching", report.cost_cached),
        ("cost: batch API", report.cost_batch),
    ):
        rows.append((label, "n/a" if cost is None else f"{_money(cost)} {money}".strip()))
    for label, value in rows:
        table.add_row(label, value)
    return table
