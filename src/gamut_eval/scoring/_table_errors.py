"""The messages of a verdict table that does not fit its checklists: counts first, then
the first few by name."""

from __future__ import annotations

from gamut_eval.errors import ErrorDetail

LISTED = 5
"""How many offending rows an error lists by name (the count is always given)."""
_NAMED_CHARS = 80


def named(value: object) -> str:
    """A name from the rows as a message shows it: quoted, and cut to 80 characters (a
    judge or model name is whatever the file says, however long)."""
    text = repr(value)
    return text if len(text) <= _NAMED_CHARS else text[: _NAMED_CHARS - 3] + "..."


def unknown_details(questions: list[str], checks: list[tuple[str, str]]) -> list[ErrorDetail]:
    details = []
    if questions:
        details.append(
            ErrorDetail(
                "question_id",
                "known-question",
                f"{len(questions)} question id(s) of the verdict rows have no checklist in the "
                f"dataset; the first {min(len(questions), LISTED)} are given",
                questions[:LISTED],
            )
        )
    if checks:
        details.append(
            ErrorDetail(
                "check_id",
                "known-check",
                f"{len(checks)} (question, check id) pair(s) of the verdict rows name no check "
                f"of that question's checklist; the first {min(len(checks), LISTED)} follow",
            )
        )
        details += [
            ErrorDetail("check_id", "known-check", f"no such check in question {named(q)}", c)
            for q, c in checks[:LISTED]
        ]
    return details


def missing_summary(total: int, responses: int) -> list[ErrorDetail]:
    return [
        ErrorDetail(
            "check_id",
            "verdict-present",
            f"{total} check(s) have no verdict row, in {responses} response(s): every check "
            "of a response's checklist needs a row (verdict null when the judge could not "
            f"grade it); the first {min(total, LISTED)} follow",
        )
    ]
