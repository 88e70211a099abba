"""Question images as small embedded thumbnails (``data:`` URIs) for the report page.

With Pillow installed an image is downscaled to at most ``SIZE`` pixels on its longer side
and saved as JPEG (a few KB each, so even 1,813 questions add only megabytes). Without
Pillow the original file is embedded when it is small enough, and left out otherwise.
"""

from __future__ import annotations

import base64
import io
import mimetypes
from pathlib import Path

__all__ = ["SIZE", "thumbnail"]

SIZE = 160
"""Longest side of a thumbnail, in pixels."""
_RAW_LIMIT = 150_000
"""Bytes of an image embedded as it is when it cannot be downscaled."""


def _uri(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def thumbnail(path: Path) -> str | None:
    """A ``data:`` URI of the downscaled image, or None when it cannot be embedded."""
    try:
        from PIL import Image
    except ImportError:
        mime = mimetypes.guess_type(path.name)[0]
        size = path.stat().st_size
        if mime is None or not mime.startswith("image/") or size > _RAW_LIMIT:
            return None
        return _uri(mime, path.read_bytes())
    try:
        with Image.open(path) as image:
            image.thumbnail((SIZE, SIZE))
            out = io.BytesIO()
            image.convert("RGB").save(out, format="JPEG", quality=80)
    except (OSError, ValueError):
        return None
    return _uri("image/jpeg", out.getvalue())
