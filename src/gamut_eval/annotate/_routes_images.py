"""Images, served by database id only (docs/reliability.md E17).

The route matches digits only (``{image_id:int}``), so ``../``, its encodings and absolute
paths never reach this code: they fall through to the 404 page. The file path comes from
the database row written at import, and only raster image types are served.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse

from gamut_eval.annotate._errors import NotFound
from gamut_eval.annotate._import_rows import IMAGE_SUFFIXES
from gamut_eval.annotate._models import Image
from gamut_eval.annotate._web import DbSession, Who

__all__ = ["router"]

router = APIRouter()

_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}


@router.get("/images/{image_id:int}")
def image(image_id: int, session: DbSession, _: Who) -> FileResponse:
    """The bytes of image ``image_id``."""
    row = session.get(Image, image_id)
    path = Path(row.path) if row is not None else None
    if path is None or path.suffix.lower() not in IMAGE_SUFFIXES or not path.is_file():
        raise NotFound("No such image.")
    return FileResponse(
        path,
        media_type=_TYPES[path.suffix.lower()],
        headers={"cache-control": "private, max-age=3600"},
    )
