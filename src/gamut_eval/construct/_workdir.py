"""The build folder: one sub-folder per stage, every file written atomically.

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
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TypeVar

import pydantic
from pydantic import BaseModel

from gamut_eval._files import atomic_writer, read_jsonl
from gamut_eval.errors import ErrorDetail, InputError, ValidationError

__all__ = ["Workdir"]

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

    def read(self, name: str, model: type[M], *, missing_hint: str) -> list[M]:
        """Every row of a stage file as ``model``; a missing file says which stage makes it."""
        path = self.file(name)
        if not path.is_file():
            raise InputError(f"{path} does not exist: {missing_hint}")
        return self.read_path(path, model)

    def read_optional(self, name: str, model: type[M]) -> list[M]:
        """Like ``read``, but a missing file is an empty list."""
        path = self.file(name)
        return self.read_path(path, model) if path.is_file() else []

    @staticmethod
    def read_path(path: Path, model: type[M]) -> list[M]:
        errors: list[ErrorDetail] = []
        rows: list[M] = []
        for line, data in read_jsonl(path, errors):
            try:
                rows.append(model.model_validate(data))
            except pydantic.ValidationError as exc:
                from gamut_eval.rubric import pydantic_details

                errors += [d.in_file(f"{path}:{line}") for d in pydantic_details(exc)]
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
