"""Checklists for people: Markdown grouped by tier."""

from __future__ import annotations

from gamut_eval.rubric._checklist import Checklist
from gamut_eval.rubric._model import TIERS

_TITLES = {"answer_critical": "Answer-Critical", "valuable": "Valuable", "context": "Context"}


def checklist_markdown(checklist: Checklist, question: str | None = None) -> str:
    """A Markdown rendering: one section per tier, one line per check."""
    lines = [f"# Checklist `{checklist.rubric_id}`", ""]
    if question:
        lines += [f"> {question}", ""]
    counts = checklist.count_by_tier()
    for tier in TIERS:
        checks = [c for c in checklist.checks if c.tier is tier]
        if not checks:
            continue
        lines += [f"## {_TITLES[tier.value]} ({counts[tier]} checks)", ""]
        for check in checks:
            flags = f"`{check.kind.value}`" + (", secondary" if check.secondary else "")
            cites = f" [{', '.join(check.cites)}]" if check.cites else ""
            lines.append(f"- [ ] **{check.id}** ({flags}): {check.text}{cites}")
        lines.append("")
    return "\n".join(lines)
