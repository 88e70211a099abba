"""Building a GAMUT-style benchmark over your own images (docs/method.md [B1]-[B10]).

Resumable stages, each reading the files of the stages before it in a build folder and
writing its own (atomically), each cached by the content hash of its inputs:

    questions -> review (+ human decisions) -> evidence -> draft -> refine -> text-only

``run_all`` chains them and stops where people must decide. Model calls go through Inspect
AI's model API; search goes through a ``SearchProvider`` (``local`` over a folder of
documents, or a web search API). See ``docs/building.md``.
"""

from gamut_eval.construct._dataset import DatasetSummary, assemble_dataset
from gamut_eval.construct._decisions import load_decisions
from gamut_eval.construct._draft import run_draft
from gamut_eval.construct._errors import BuildError, UnitError
from gamut_eval.construct._evidence import run_evidence
from gamut_eval.construct._fetch import FetchedPage, Fetcher, FetchError, FetchSettings
from gamut_eval.construct._images import load_images
from gamut_eval.construct._llm import ModelSettings
from gamut_eval.construct._local_search import LocalSearch
from gamut_eval.construct._models import (
    STAGES,
    ImageRecord,
    Provenance,
    StageError,
    StageReport,
    StageUsage,
    Usage,
)
from gamut_eval.construct._pipeline import PipelineOptions, PipelineReport, run_all
from gamut_eval.construct._question_models import (
    AcceptedQuestion,
    AnnotationTask,
    Candidate,
    CandidateReview,
    CandidateState,
    Decision,
    ImageReview,
    TextOnlyRecord,
)
from gamut_eval.construct._questions import run_questions
from gamut_eval.construct._refine import run_refine
from gamut_eval.construct._research import ResearchSettings
from gamut_eval.construct._review import run_review
from gamut_eval.construct._rubric_models import (
    Audit,
    DraftRecord,
    EvidenceRecord,
    RefinedRecord,
    RubricDiff,
    Snippet,
    SnippetCheck,
)
from gamut_eval.construct._search import (
    SEARCH_PROVIDERS,
    SearchError,
    SearchHit,
    SearchProvider,
)
from gamut_eval.construct._search_providers import make_search_provider
from gamut_eval.construct._session import BuildSession, BuildSettings
from gamut_eval.construct._text_only import run_text_only
from gamut_eval.construct._text_only_input import run_text_only_input
from gamut_eval.construct._web_search import BraveSearch, TavilySearch
from gamut_eval.construct._workdir import Workdir
from gamut_eval.prices import ModelPrice, PriceTable, load_prices

__all__ = [
    "SEARCH_PROVIDERS",
    "STAGES",
    "AcceptedQuestion",
    "AnnotationTask",
    "Audit",
    "BraveSearch",
    "BuildError",
    "BuildSession",
    "BuildSettings",
    "Candidate",
    "CandidateReview",
    "CandidateState",
    "DatasetSummary",
    "Decision",
    "DraftRecord",
    "EvidenceRecord",
    "FetchError",
    "FetchSettings",
    "FetchedPage",
    "Fetcher",
    "ImageRecord",
    "ImageReview",
    "LocalSearch",
    "ModelPrice",
    "ModelSettings",
    "PipelineOptions",
    "PipelineReport",
    "PriceTable",
    "Provenance",
    "RefinedRecord",
    "ResearchSettings",
    "RubricDiff",
    "SearchError",
    "SearchHit",
    "SearchProvider",
    "Snippet",
    "SnippetCheck",
    "StageError",
    "StageReport",
    "StageUsage",
    "TavilySearch",
    "TextOnlyRecord",
    "UnitError",
    "Usage",
    "Workdir",
    "assemble_dataset",
    "load_decisions",
    "load_images",
    "load_prices",
    "make_search_provider",
    "run_all",
    "run_draft",
    "run_evidence",
    "run_questions",
    "run_refine",
    "run_review",
    "run_text_only",
    "run_text_only_input",
]
