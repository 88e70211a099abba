"""The annotation app: human review rounds for questions and rubrics (docs/method.md [B3], [B8]).

A FastAPI app over SQLite (or any SQLAlchemy URL) with server-rendered pages. Library
functions here do the work; ``gamut annotate`` is a thin command line over them.
"""

from __future__ import annotations

import typing as _typing

from gamut_eval._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from gamut_eval.annotate._app import (
        check_bind as check_bind,
        create_app as create_app,
        serve as serve,
    )
    from gamut_eval.annotate._db import (
        Database as Database,
        Decision as Decision,
        Question as Question,
        QuestionStatus as QuestionStatus,
        Role as Role,
        Rubric as Rubric,
        RubricStatus as RubricStatus,
        database_url as database_url,
    )
    from gamut_eval.annotate._errors import (
        AnnotateError as AnnotateError,
        ConflictError as ConflictError,
        FormError as FormError,
        NotFound as NotFound,
        PermissionDenied as PermissionDenied,
    )
    from gamut_eval.annotate._io import (
        ExportSummary as ExportSummary,
        FileSummary as FileSummary,
        export_dataset as export_dataset,
        import_files as import_files,
    )
    from gamut_eval.annotate._labels import (
        AnswerImport as AnswerImport,
        LabelExport as LabelExport,
        export_labels as export_labels,
        import_answers as import_answers,
    )
    from gamut_eval.annotate._questions import ImageStatus as ImageStatus
    from gamut_eval.annotate._users import (
        NewToken as NewToken,
        add_user as add_user,
        count_users as count_users,
        list_users as list_users,
        reset_token as reset_token,
    )

if not _typing.TYPE_CHECKING:  # type checkers see the names above, not a __getattr__
    __getattr__, __dir__ = _lazy_exports(globals())
