"""The annotation app: human review rounds for questions and rubrics (docs/method.md [B3], [B8]).

A FastAPI app over SQLite (or any SQLAlchemy URL) with server-rendered pages. Library
functions here do the work; ``gamut annotate`` is a thin command line over them.
"""

from gamut_eval.annotate._app import create_app
from gamut_eval.annotate._db import Database, database_url
from gamut_eval.annotate._errors import (
    AnnotateError,
    ConflictError,
    FormError,
    NotFound,
    PermissionDenied,
)
from gamut_eval.annotate._exporter import ExportSummary, export_dataset
from gamut_eval.annotate._importer import FileSummary, import_files
from gamut_eval.annotate._models import Decision, QuestionStatus, Role, RubricStatus
from gamut_eval.annotate._rounds import ImageStatus
from gamut_eval.annotate._serve import check_bind, serve
from gamut_eval.annotate._users import NewToken, add_user, count_users, list_users, reset_token

__all__ = [
    "AnnotateError",
    "ConflictError",
    "Database",
    "Decision",
    "ExportSummary",
    "FileSummary",
    "FormError",
    "ImageStatus",
    "NewToken",
    "NotFound",
    "PermissionDenied",
    "QuestionStatus",
    "Role",
    "RubricStatus",
    "add_user",
    "check_bind",
    "count_users",
    "create_app",
    "database_url",
    "export_dataset",
    "import_files",
    "list_users",
    "reset_token",
    "serve",
]
