"""Building a GAMUT-style benchmark over your own images (docs/method.md [B1]-[B10]).

Resumable stages, each reading the files of the stages before it in a build folder and
writing its own (atomically), each cached by the content hash of its inputs:

    questions -> review (+ human decisions) -> evidence -> draft -> refine -> text-only

``run_all`` chains them and stops where people must decide. Model calls go through Inspect
AI's model API; search goes through a ``SearchProvider`` (``local`` over a folder of
documents, or a web search API). See ``docs/building.md``.
"""

from __future__ import annotations

import typing as _typing

from gamut_eval._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from gamut_eval.construct._evidence import (
        run_draft as run_draft,
        run_evidence as run_evidence,
    )
    from gamut_eval.construct._import import (
        import_questions as import_questions,
        parse_mapping as parse_mapping,
    )
    from gamut_eval.construct._models import (
        STAGES as STAGES,
        AcceptedQuestion as AcceptedQuestion,
        AnnotationTask as AnnotationTask,
        Audit as Audit,
        BuildError as BuildError,
        Candidate as Candidate,
        CandidateReview as CandidateReview,
        CandidateState as CandidateState,
        Decision as Decision,
        DraftRecord as DraftRecord,
        EvidenceRecord as EvidenceRecord,
        ImageRecord as ImageRecord,
        ImageReview as ImageReview,
        Provenance as Provenance,
        RefinedRecord as RefinedRecord,
        RubricDiff as RubricDiff,
        SearchError as SearchError,
        SearchHit as SearchHit,
        Snippet as Snippet,
        SnippetCheck as SnippetCheck,
        StageError as StageError,
        StageReport as StageReport,
        StageUsage as StageUsage,
        TextOnlyRecord as TextOnlyRecord,
        UnitError as UnitError,
    )
    from gamut_eval.construct._pipeline import (
        PipelineReport as PipelineReport,
        run_all as run_all,
    )
    from gamut_eval.construct._questions import (
        load_decisions as load_decisions,
        revision_of as revision_of,
        run_questions as run_questions,
        run_review as run_review,
    )
    from gamut_eval.construct._refine import run_refine as run_refine
    from gamut_eval.construct._rubrics import read_rubric_file as read_rubric_file
    from gamut_eval.construct._search import (
        SEARCH_PROVIDERS as SEARCH_PROVIDERS,
        BraveSearch as BraveSearch,
        LocalSearch as LocalSearch,
        SearchProvider as SearchProvider,
        TavilySearch as TavilySearch,
        make_search_provider as make_search_provider,
    )
    from gamut_eval.construct._session import (
        BuildSession as BuildSession,
        probe_build_model as probe_build_model,
    )
    from gamut_eval.construct._settings import (
        BuildSettings as BuildSettings,
        FetchSettings as FetchSettings,
        ModelSettings as ModelSettings,
        PipelineOptions as PipelineOptions,
        ResearchSettings as ResearchSettings,
    )
    from gamut_eval.construct._sources import (
        FetchedPage as FetchedPage,
        Fetcher as Fetcher,
        FetchError as FetchError,
    )
    from gamut_eval.construct._text_only import (
        run_text_only as run_text_only,
        run_text_only_input as run_text_only_input,
    )
    from gamut_eval.construct._workdir import (
        DatasetSummary as DatasetSummary,
        Workdir as Workdir,
        assemble_dataset as assemble_dataset,
        load_images as load_images,
    )

if not _typing.TYPE_CHECKING:  # type checkers see the names above, not a __getattr__
    __getattr__, __dir__ = _lazy_exports(globals())
