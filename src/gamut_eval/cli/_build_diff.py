"""``gamut build diff OLD NEW``: is NEW a verified superset of OLD?

The comparison is ``gamut_eval.rubric._superset`` (the one refinement enforces); this
command reads the two files, prints every difference and exits 0 (additions only), 1
(something removed or changed) or 2 (bad input).
"""

from __future__ import annotations

from pathlib import Path

import click
from rich.markup import escape

from gamut_eval.cli._common import DATASET_PATH, console, err_console

__all__ = ["build_diff"]


@click.command(name="diff")
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
