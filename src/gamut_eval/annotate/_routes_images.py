"""Images, addressed by the SHA-256 of their bytes (docs/reliability.md E17).

An image's URL is ``/images/<sha256>``: it names the content, not a server path or a row
number, so it says nothing about the server's folders, stays the same when the same file
is imported again, and can be cached for as long as the bytes are the same. Anything that
is not 64 lowercase hex digits is a 404 before the database is asked, so ``../``, its
encodings and absolute paths never reach a file. The file path comes from the row written
at import; a file whose bytes changed since is refused (its address would lie).
"""

from __future__ import annotations

import re
from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse
from sqlalchemy import select

from gamut_eval.annotate._errors import NotFound
from gamut_eval.annotate._import_rows import IMAGE_SUFFIXES, file_sha256
from gamut_eval.annotate._models import Image
from gamut_eval.annotate._web import DbSession, Who

__all__ = ["router"]

router = APIRouter()

_DIGEST = re.compile(r"^[0-9a-f]{64}$")
_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}


@router.get("/images/{digest}")
def image(digest: str, session: DbSession, _: Who) -> FileResponse:
    """The bytes of the image whose SHA-256 is ``digest``."""
    if not _DIGEST.match(digest):
        raise NotFound("No such image.")
    rows = session.scalars(select(Image).where(Image.sha256 == digest).order_by(Image.id))
    for row in rows:
        path = Path(row.path)
        if path.suffix.lower() not in IMAGE_SUFFIXES or not path.is_file():
            continue
        if file_sha256(path) != digest:
            continue
        return FileResponse(
            path,
            media_type=_TYPES[path.suffix.lower()],
            headers={"cache-control": "private, max-age=86400, immutable"},
        )
    raise NotFound("No such image.")
