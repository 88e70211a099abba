"""Errors of the annotation app, each mapped to one HTTP status by the web layer.

    GamutError
     +-- AnnotateError          something a person did in the app cannot be carried out
          +-- ConflictError     409: the item changed since it was loaded (lost-update guard)
          +-- PermissionDenied  403: the user's role (or own earlier review) does not allow it
          +-- NotFound          404: no such question, rubric or image
          +-- FormError         422: the submitted values break a rule; ``messages`` lists all

The library functions raise these; routes never build status codes by hand, so the same
rule gives the same answer in the browser, in the API tests and from the command line.
"""

from __future__ import annotations

from gamut_eval.errors import GamutError


class AnnotateError(GamutError):
    """Base class of the errors the annotation app shows to its users."""

    status_code = 400


class ConflictError(AnnotateError):
    """Someone else changed the item first; nothing of this request was saved."""

    status_code = 409


class PermissionDenied(AnnotateError):
    """The signed-in user may not do this."""

    status_code = 403


class NotFound(AnnotateError):
    """The item does not exist."""

    status_code = 404


class FormError(AnnotateError):
    """Submitted values that break one or more rules; every problem is listed."""

    status_code = 422

    def __init__(self, messages: list[str]) -> None:
        self.messages = list(messages)
        super().__init__("; ".join(self.messages))
