"""``gamut build all``: the stages chained over a folder of images, stopping for people.

Questions, then the review; questions accepted by the LLM and by people go on through
evidence, draft, refine and text-only while the others wait for human decisions. With no
accepted question the run stops after the review and says what to do next. Every stage is
cached, so rerunning ``all`` with new decisions redoes only what changed.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from gamut_eval.construct._evidence import run_draft, run_evidence
from gamut_eval.construct._models import AcceptedQuestion, FrozenModel, StageReport
from gamut_eval.construct._questions import run_questions, run_review
from gamut_eval.construct._refine import run_refine
from gamut_eval.construct._session import BuildSession
from gamut_eval.construct._settings import PipelineOptions
from gamut_eval.construct._sources import Fetcher
from gamut_eval.construct._text_only import run_text_only

if TYPE_CHECKING:
    from gamut_eval.construct._search import SearchProvider


class PipelineReport(FrozenModel):
    """What ``all`` did."""

    reports: tuple[StageReport, ...]
    """One per stage run, in order."""
    stopped_at: str | None = None
    """The stage after which the run stopped (``review``: waiting for people)."""
    incomplete: bool = False
    """Some images have no accepted question yet: their candidates await people, or new
    candidates await the LLM review."""
    next_step: str | None = None
    """What to do next."""
    next_step_settings: tuple[str, ...] = ()
    """The settings ``next_step`` names (the command line adds their options)."""

    @property
    def failed(self) -> int:
        """Units that ended with an error, over all stages."""
        return sum(r.failed for r in self.reports)


async def run_all(
    session: BuildSession,
    images: str | Path,
    provider: SearchProvider,
    options: PipelineOptions | None = None,
    fetcher: Fetcher | None = None,
) -> PipelineReport:
    """Run every stage in order (see the module docstring)."""
    options = options or PipelineOptions()
    reports = [await run_questions(session, images, options.per_image)]
    review = await run_review(session, options.decisions, options.max_rounds, options.proposals)
    reports.append(review)
    waiting = review.next_step is not None
    if not session.workdir.read_optional("accepted", AcceptedQuestion):
        then = review.next_step or "See the errors above; a rerun retries them."
        return PipelineReport(
            reports=tuple(reports),
            stopped_at="review",
            incomplete=waiting,
            next_step="no question is accepted yet by both the LLM review and people, so the "
            f"build stops before evidence. {then}",
            next_step_settings=review.next_step_settings,
        )
    reports.append(await run_evidence(session, provider, options.research))
    reports.append(await run_draft(session))
    reports.append(await run_refine(session, provider, fetcher, options.research))
    reports.append(await run_text_only(session))
    if not waiting:
        return PipelineReport(reports=tuple(reports))
    return PipelineReport(
        reports=tuple(reports),
        incomplete=True,
        next_step=f"{review.next_step}. The accepted questions are built; rerun `gamut build "
        "all` with the decisions to build the rest (finished work is not redone)",
        next_step_settings=review.next_step_settings,
    )
