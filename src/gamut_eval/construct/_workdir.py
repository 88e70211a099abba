"""The build's files: the images it starts from, the build folder, the cache of finished
units, and the dataset assembled from the stage files.

The build folder: one sub-folder per stage, every file written atomically.

    build/
      cache.sqlite            finished units, keyed by content hash (resume, no repeat calls)
      questions/  images.jsonl  candidates.jsonl  errors.jsonl  usage.json
      review/     candidates.jsonl  images.jsonl  to_annotate.jsonl  accepted.jsonl  ...
      evidence/   evidence.jsonl  ...
      draft/      drafts.jsonl  ...
      refine/     refined.jsonl  rubrics.jsonl (for the annotation app)  ...
      text-only/  text_only.jsonl  rubrics.jsonl (text-only --input, for the app)  ...
      dataset.jsonl           the benchmark: one record per question (``gamut validate`` it)

A stage reads the files of the stages before it and rewrites its own in full at its end, so
a reader never sees a half-written file and a rerun's files reflect that run.

The build cache is one SQLite table of finished units of work. A unit (one image's
questions, one question's draft, ...) is stored when it succeeds, under a key that hashes
the stage, the model, the prompt version, the content hashes of its inputs and the options
that change its result, the way the judge's verdict store keys verdicts. So a rerun (after a
crash, or with more images) makes no model call for work already done, a changed input or
prompt is redone, and a failure is never cached: the next run tries it again.

One writer per build folder: a run holds an exclusive ``flock`` on ``cache.sqlite.lock``,
so two runs cannot race on the same stage files or pay twice for the same calls.

The images a build starts from are a folder of images, or a JSONL manifest. A manifest row
names the image (path relative to the manifest) and may give its id, the ground-truth
entity, the domain and the popularity band:

    {"image": "photos/bibimbap.jpg", "entity": "Bibimbap", "domain": "food", "popularity": "head"}

Without a manifest the entity is unknown; the questions are still written from the image,
but the text-only stage needs an entity and skips such questions.

``dataset.jsonl`` is assembled from accepted question + refined rubric + text-only version.
A question enters the dataset once its rubric is refined (the draft alone is not the
method's rubric). Image paths are written relative to the dataset file, as ``load_dataset``
expects; each record's ``metadata.build`` keeps the provenance keys of its parts.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import json
import os
import re
import sqlite3
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pydantic
from pydantic import BaseModel

from gamut_eval._files import IMAGE_TYPES, atomic_writer, image_inside, read_jsonl
from gamut_eval.construct._models import (
    AcceptedQuestion,
    ImageRecord,
    ManifestRow,
    RefinedRecord,
    TextOnlyRecord,
)
from gamut_eval.dataset import DatasetRecord
from gamut_eval.errors import ErrorDetail, GamutError, InputError, ValidationError
from gamut_eval.rubric import pydantic_details

M = TypeVar("M", bound=BaseModel)

_FILES = {
    "images": ("questions", "images.jsonl"),
    "candidates": ("questions", "candidates.jsonl"),
    "review_candidates": ("review", "candidates.jsonl"),
    "review_images": ("review", "images.jsonl"),
    "to_annotate": ("review", "to_annotate.jsonl"),
    "accepted": ("review", "accepted.jsonl"),
    "evidence": ("evidence", "evidence.jsonl"),
    "drafts": ("draft", "drafts.jsonl"),
    "refined": ("refine", "refined.jsonl"),
    "refine_rubrics": ("refine", "rubrics.jsonl"),
    "text_only": ("text-only", "text_only.jsonl"),
    "text_only_rubrics": ("text-only", "rubrics.jsonl"),
}


def jsonl_rows(path: Path, model: type[M], errors: list[ErrorDetail]) -> Iterator[tuple[str, M]]:
    """``(path:line, row)`` of every row of a JSONL file that validates as ``model``; the
    others' errors are added to ``errors``."""
    for line, data in read_jsonl(path, errors):
        try:
            yield f"{path}:{line}", model.model_validate(data)
        except pydantic.ValidationError as exc:
            errors += [d.in_file(f"{path}:{line}") for d in pydantic_details(exc)]


class Workdir:
    """Paths of a build folder and typed reading and writing of its files."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    @property
    def cache(self) -> Path:
        return self.root / "cache.sqlite"

    @property
    def dataset(self) -> Path:
        return self.root / "dataset.jsonl"

    @property
    def search_index(self) -> Path:
        return self.root / "search" / "local.sqlite"

    def file(self, name: str) -> Path:
        """A stage file by name (``candidates``, ``accepted``, ``drafts``...)."""
        stage, filename = _FILES[name]
        return self.root / stage / filename

    def errors(self, stage: str) -> Path:
        return self.root / stage / "errors.jsonl"

    def usage(self, stage: str) -> Path:
        return self.root / stage / "usage.json"

    def read(
        self, name: str, model: type[M], *, missing_hint: str, setting: str | None = None
    ) -> list[M]:
        """Every row of a stage file as ``model``; a missing file says which stage makes it
        (or the ``setting`` that ``missing_hint`` names instead)."""
        path = self.file(name)
        if not path.is_file():
            raise InputError(f"{path} does not exist: {missing_hint}", setting=setting)
        return self.read_path(path, model)

    def read_optional(self, name: str, model: type[M]) -> list[M]:
        """Like ``read``, but a missing file is an empty list."""
        path = self.file(name)
        return self.read_path(path, model) if path.is_file() else []

    @staticmethod
    def read_path(path: Path, model: type[M]) -> list[M]:
        errors: list[ErrorDetail] = []
        rows = [row for _, row in jsonl_rows(path, model, errors)]
        if errors:
            raise ValidationError(errors)
        return rows

    def write(self, name: str, rows: Iterable[BaseModel]) -> Path:
        """Rewrite a stage file (atomically)."""
        return self.write_path(self.file(name), rows)

    @staticmethod
    def write_path(path: Path, rows: Iterable[BaseModel], *, exclude_none: bool = False) -> Path:
        with atomic_writer(path) as handle:
            for row in rows:
                handle.write(row.model_dump_json(exclude_none=exclude_none) + "\n")
        return path

    @staticmethod
    def write_json(path: Path, row: BaseModel) -> Path:
        with atomic_writer(path) as handle:
            handle.write(row.model_dump_json(indent=2) + "\n")
        return path


_SCHEMA = """
CREATE TABLE IF NOT EXISTS units (
    key TEXT PRIMARY KEY,
    stage TEXT NOT NULL,
    unit_id TEXT NOT NULL,
    result TEXT NOT NULL,
    created_at REAL NOT NULL
) WITHOUT ROWID;
"""


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    raise TypeError(f"cannot hash a {type(value).__name__}")


def content_hash(value: Any) -> str:
    """sha256 of ``value`` as canonical JSON (sorted keys, no spaces); models are dumped."""
    text = json.dumps(
        value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=_jsonable
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def unit_key(
    stage: str,
    model: str | None,
    prompt_version: str | None,
    inputs: dict[str, str],
    options: dict[str, Any],
) -> str:
    """The cache key of a unit: everything that determines its result, hashed."""
    return content_hash(
        {
            "stage": stage,
            "model": model,
            "prompt_version": prompt_version,
            "inputs": inputs,
            "options": options,
        }
    )


class CacheBusyError(GamutError):
    """Another gamut process is building in the same folder."""


class BuildCache:
    """Open (creating) the cache at ``path`` and take the folder's writer lock."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock_fd: int | None = self._acquire()
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, timeout=60.0)
            self._db.execute("PRAGMA journal_mode=WAL")
            # NORMAL in WAL mode survives a process crash; an OS crash can lose the last
            # units, which a rerun then redoes
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            self._release()
            raise GamutError(
                f"{self.path}: cannot be used as a build cache ({exc}); move it away to start "
                "a fresh cache"
            ) from None

    def _acquire(self) -> int:
        lock_path = self.path.with_name(self.path.name + ".lock")
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise CacheBusyError(
                f"{self.path.parent} is in use by another gamut build (pid {holder}); wait for "
                "it to finish or use another workdir",
                setting="workdir",
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        return fd

    def _release(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def get(self, key: str) -> str | None:
        """The stored result (the artefact as JSON) for ``key``, if any."""
        row = self._db.execute("SELECT result FROM units WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def put(self, key: str, stage: str, unit_id: str, result: str) -> None:
        """Store a finished unit (committed at once: a crash after this loses nothing)."""
        self._db.execute(
            "INSERT OR REPLACE INTO units (key, stage, unit_id, result, created_at) "
            "VALUES (?, ?, ?, ?, ?)",
            (key, stage, unit_id, result, time.time()),
        )

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self._db.close()
        self._release()


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_id(text: str, fallback: str) -> str:
    """``text`` as an id (runs of other characters than ``A-Za-z0-9._-`` made ``-``)."""
    return _UNSAFE.sub("-", text).strip("-") or fallback


def _image_record(path: Path, row: ManifestRow) -> ImageRecord:
    data = path.read_bytes()
    return ImageRecord(
        id=safe_id(row.id or path.stem, "image"),
        image=str(path.resolve()),
        sha256=hashlib.sha256(data).hexdigest(),
        entity=row.entity,
        domain=row.domain,
        popularity=row.popularity,
        metadata=row.metadata,
    )


def _from_folder(folder: Path) -> list[ImageRecord]:
    paths = sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_TYPES)
    if not paths:
        kinds = ", ".join(sorted(IMAGE_TYPES))
        raise InputError(f"{folder}: no images found (looked for {kinds})")
    return [_image_record(p, ManifestRow(image=p.name)) for p in paths]


def _from_manifest(path: Path) -> list[ImageRecord]:
    errors: list[ErrorDetail] = []
    records = []
    for where, row in jsonl_rows(path, ManifestRow, errors):
        image = path.parent / row.image
        if image.suffix.lower() not in IMAGE_TYPES or not image.is_file():
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
    mime = IMAGE_TYPES.get(path.suffix.lower(), "application/octet-stream")
    return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"


@dataclass(frozen=True, slots=True)
class DatasetSummary:
    """What went into the dataset."""

    path: Path | None
    """``None`` when no question is complete yet (nothing written)."""
    records: int
    waiting_for_rubric: int
    without_text_only: int

    def summary(self) -> str:
        if self.path is None:
            return "no question has a refined rubric yet: dataset.jsonl not written"
        text = f"{self.records} question(s) in {self.path}"
        if self.waiting_for_rubric:
            text += f"; {self.waiting_for_rubric} accepted question(s) have no refined rubric yet"
        if self.without_text_only:
            text += f"; {self.without_text_only} without a text-only version"
        return text


DATASET_FIELDS = {"id", "question", "entity", "domain", "popularity"}
"""What a dataset record takes from its accepted question as it is."""


def _dataset_record(
    question: AcceptedQuestion, refined: RefinedRecord, text_only: TextOnlyRecord | None, root: Path
) -> DatasetRecord:
    build = {
        "candidate_id": question.candidate_id,
        "review": question.provenance.key,
        "rubric": refined.provenance.key,
        "rubric_model": refined.provenance.model,
        "rubric_prompt_version": refined.provenance.prompt_version,
        "text_only": text_only.provenance.key if text_only else None,
    }
    return DatasetRecord(
        **question.model_dump(include=DATASET_FIELDS),
        meta_rubric=refined.meta_rubric,
        image=image_inside(question.image, root),
        question_text_only=text_only.question_text_only if text_only else None,
        metadata={"build": build},
    )


def assemble_dataset(workdir: Workdir) -> DatasetSummary:
    """Write ``dataset.jsonl`` from the stage files (atomically); see the module docstring."""
    accepted = workdir.read_optional("accepted", AcceptedQuestion)
    refined = {r.question_id: r for r in workdir.read_optional("refined", RefinedRecord)}
    text_only = {t.question_id: t for t in workdir.read_optional("text_only", TextOnlyRecord)}
    records = [
        _dataset_record(q, refined[q.id], text_only.get(q.id), workdir.root)
        for q in accepted
        if q.id in refined
    ]
    if not records:
        return DatasetSummary(None, 0, len(accepted), 0)
    path = workdir.write_path(workdir.dataset, records, exclude_none=True)
    return DatasetSummary(
        path,
        len(records),
        waiting_for_rubric=len(accepted) - len(records),
        without_text_only=sum(1 for r in records if r.question_text_only is None),
    )
