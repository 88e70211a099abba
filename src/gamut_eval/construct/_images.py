"""The images a build starts from: a folder of images, or a JSONL manifest.

A manifest row names the image (path relative to the manifest) and may give its id, the
ground-truth entity, the domain and the popularity band:

    {"image": "photos/bibimbap.jpg", "entity": "Bibimbap", "domain": "food", "popularity": "head"}

Without a manifest the entity is unknown; the questions are still written from the image,
but the text-only stage needs an entity and skips such questions.
"""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path
from typing import Any

import pydantic
from pydantic import BaseModel

from gamut_eval._files import read_jsonl
from gamut_eval.construct._models import FROZEN, ImageRecord, Popularity
from gamut_eval.errors import ErrorDetail, InputError, ValidationError

__all__ = ["IMAGE_SUFFIXES", "data_url", "load_images"]

IMAGE_SUFFIXES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg"}
IMAGE_SUFFIXES |= {".webp": "image/webp", ".gif": "image/gif"}

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class ManifestRow(BaseModel):
    """One row of an image manifest."""

    model_config = FROZEN

    image: str
    """Image path, relative to the manifest."""
    id: str | None = None
    """Id (default: the file name without its extension)."""
    entity: str | None = None
    """Ground-truth entity."""
    domain: str | None = None
    """Domain."""
    popularity: Popularity | None = None
    """``head``, ``torso`` or ``tail``."""
    metadata: dict[str, Any] = {}
    """Anything else."""


def _safe_id(text: str) -> str:
    return _UNSAFE.sub("-", text).strip("-") or "image"


def _image_record(path: Path, row: ManifestRow) -> ImageRecord:
    data = path.read_bytes()
    return ImageRecord(
        id=_safe_id(row.id or path.stem),
        image=str(path.resolve()),
        sha256=hashlib.sha256(data).hexdigest(),
        entity=row.entity,
        domain=row.domain,
        popularity=row.popularity,
        metadata=row.metadata,
    )


def _from_folder(folder: Path) -> list[ImageRecord]:
    paths = sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    if not paths:
        kinds = ", ".join(sorted(IMAGE_SUFFIXES))
        raise InputError(f"{folder}: no images found (looked for {kinds})")
    return [_image_record(p, ManifestRow(image=p.name)) for p in paths]


def _from_manifest(path: Path) -> list[ImageRecord]:
    errors: list[ErrorDetail] = []
    records = []
    for line, data in read_jsonl(path, errors):
        where = f"{path}:{line}"
        try:
            row = ManifestRow.model_validate(data)
        except pydantic.ValidationError as exc:
            from gamut_eval.rubric import pydantic_details

            errors += [d.in_file(where) for d in pydantic_details(exc)]
            continue
        image = path.parent / row.image
        if image.suffix.lower() not in IMAGE_SUFFIXES or not image.is_file():
            why = "no such image file" if not image.is_file() else "not a known image type"
            errors.append(ErrorDetail("image", "image-exists", why, row.image).in_file(where))
            continue
        records.append(_image_record(image, row))
    if errors:
        raise ValidationError(errors)
    return records


def load_images(source: str | Path) -> list[ImageRecord]:
    """The images of a folder or a ``.jsonl`` manifest, with ids unique and content hashes."""
    source = Path(source)
    if source.is_dir():
        records = _from_folder(source)
    elif source.is_file():
        records = _from_manifest(source)
    else:
        raise InputError(f"{source}: no such folder or manifest file")
    seen: dict[str, str] = {}
    for record in records:
        if record.id in seen:
            raise InputError(
                f"{source}: two images get the id {record.id!r} ({seen[record.id]} and "
                f"{record.image}); give them distinct `id`s in a manifest"
            )
        seen[record.id] = record.image
    return records


def data_url(path: str | Path) -> str:
    """The image as a ``data:`` URL (Inspect requires inline images)."""
    path = Path(path)
    mime = IMAGE_SUFFIXES.get(path.suffix.lower(), "application/octet-stream")
    return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"
