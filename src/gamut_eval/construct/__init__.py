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
    from gamut_eval.construct._dataset import (
        DatasetSummary as DatasetSummary,
        assemble_dataset as assemble_dataset,
    )
    from gamut_eval.construct._decisions import (
        load_decisions as load_decisions,
        revision_of as revision_of,
    )
    from gamut_eval.construct._draft import run_draft as run_draft
    from gamut_eval.construct._errors import BuildError as BuildError, UnitError as UnitError
    from gamut_eval.construct._evidence import run_evidence as run_evidence
    from gamut_eval.construct._fetch import (
        FetchedPage as FetchedPage,
        Fetcher as Fetcher,
        FetchError as FetchError,
    )
    from gamut_eval.construct._images import load_images as load_images
    from gamut_eval.construct._import import (
        import_questions as import_questions,
        parse_mapping as parse_mapping,
    )
    from gamut_eval.construct._local_search import LocalSearch as LocalSearch
    from gamut_eval.construct._models import (
        STAGES as STAGES,
        ImageRecord as ImageRecord,
        Provenance as Provenance,
        StageError as StageError,
        StageReport as StageReport,
        StageUsage as StageUsage,
    )
    from gamut_eval.construct._pipeline import (
        PipelineReport as PipelineReport,
        run_all as run_all,
    )
    from gamut_eval.construct._question_models import (
        AcceptedQuestion as AcceptedQuestion,
        AnnotationTask as AnnotationTask,
        Candidate as Candidate,
        CandidateReview as CandidateReview,
        CandidateState as CandidateState,
        Decision as Decision,
        ImageReview as ImageReview,
        TextOnlyRecord as TextOnlyRecord,
    )
    from gamut_eval.construct._questions import run_questions as run_questions
    from gamut_eval.construct._refine import run_refine as run_refine
    from gamut_eval.construct._review import run_review as run_review
    from gamut_eval.construct._rubric_files import read_rubric_file as read_rubric_file
    from gamut_eval.construct._rubric_models import (
        Audit as Audit,
        DraftRecord as DraftRecord,
        EvidenceRecord as EvidenceRecord,
        RefinedRecord as RefinedRecord,
        RubricDiff as RubricDiff,
        Snippet as Snippet,
        SnippetCheck as SnippetCheck,
    )
    from gamut_eval.construct._search import (
        SEARCH_PROVIDERS as SEARCH_PROVIDERS,
        SearchError as SearchError,
        SearchHit as SearchHit,
        SearchProvider as SearchProvider,
    )
    from gamut_eval.construct._search_providers import make_search_provider as make_search_provider
    from gamut_eval.construct._session import BuildSession as BuildSession
    from gamut_eval.construct._settings import (
        BuildSettings as BuildSettings,
        FetchSettings as FetchSettings,
        ModelSettings as ModelSettings,
        PipelineOptions as PipelineOptions,
        ResearchSettings as ResearchSettings,
    )
    from gamut_eval.construct._text_only import run_text_only as run_text_only
    from gamut_eval.construct._text_only_input import run_text_only_input as run_text_only_input
    from gamut_eval.construct._web_search import (
        BraveSearch as BraveSearch,
        TavilySearch as TavilySearch,
    )
    from gamut_eval.construct._workdir import Workdir as Workdir

if not _typing.TYPE_CHECKING:  # type checkers see the names above, not a __getattr__
    __getattr__, __dir__ = _lazy_exports(globals())
