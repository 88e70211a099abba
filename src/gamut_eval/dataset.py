"""Datasets: one record per question (a JSONL, JSON or Parquet table, see ``_tables``), with its
meta-rubric and optional revised checklist; or a user's own meta-rubric files (YAML or JSON,
one question each, alone or a folder of them), read as a dataset of their questions."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import pydantic
from pydantic import AfterValidator, BaseModel, ConfigDict, PrivateAttr
from pydantic_core import PydanticCustomError

from gamut_eval._files import image_inside, read_document
from gamut_eval._tables import read_rows, table_format, write_rows
from gamut_eval.errors import ErrorDetail, InputError, ValidationError
from gamut_eval.rubric import (
    Checklist,
    CompileConfig,
    MetaRubric,
    RubricId,
    Text,
    compile_rubric,
    pydantic_details,
    validate_meta_rubric,
)

__all__ = [
    "IMAGE_MAX_BYTES",
    "RUBRIC_FILE_SUFFIXES",
    "Dataset",
    "DatasetRecord",
    "image_kind",
    "is_rubric_file",
    "load_dataset",
    "rubric_files",
    "write_dataset",
]

IMAGE_MAX_BYTES = 20 * 1024 * 1024
"""The largest image a record may name (the providers' own limit for one image)."""
_IMAGE_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\xff\xd8\xff", "jpeg"),
    (b"\x89PNG\r\n\x1a\n", "png"),
    (b"GIF87a", "gif"),
    (b"GIF89a", "gif"),
)


def _file_name(name: str) -> str:
    """A NUL character names no file, and every os call on such a path raises: every
    reader of a record (validate, judge, build, import) refuses it here, once."""
    if "\x00" in name:
        raise PydanticCustomError("image-exists", "holds a NUL character; no file is named so")
    return name


class DatasetRecord(BaseModel):
    """One question of a benchmark."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    id: RubricId
    """Question id, unique in the dataset; equals ``meta_rubric.id``."""
    question: Text
    """The question as asked with the image (multimodal setting)."""
    meta_rubric: MetaRubric
    """The structured rubric."""
    checklist: Checklist | None = None
    """A human-revised checklist; when present it is scored instead of the compiled one."""
    entity: str | None = None
    """Ground-truth entity."""
    image: Annotated[str, AfterValidator(_file_name)] | None = None
    """Image path, relative to the dataset file."""
    question_text_only: str | None = None
    """The question with the entity named in text (text-only setting)."""
    domain: str | None = None
    """Domain, e.g. ``plants`` or ``food``."""
    popularity: Literal["head", "torso", "tail"] | None = None
    """How well known the entity is."""
    metadata: dict[str, Any] = {}
    """Free-form extra fields."""

    def text_only_question(self) -> str:
        """The question for the text-only setting: ``question_text_only`` when given, else
        the question followed by ``(The image shows ENTITY.)`` so the entity is named in text.
        """
        if self.question_text_only:
            return self.question_text_only
        if not self.entity:
            raise InputError(
                f"question {self.id!r} has neither question_text_only nor entity, so it has no "
                "text-only version; add one of them"
            )
        return f"{self.question}\n\n(The image shows {self.entity}.)"

    def question_for(self, setting: str) -> str:
        """The question as asked in ``setting`` (``multimodal`` or ``text_only``)."""
        return self.text_only_question() if setting == "text_only" else self.question

    def effective_checklist(self, config: CompileConfig | None = None) -> Checklist:
        """The checklist that is scored: the revised one if present, else the compiled one."""
        return self.checklist or compile_rubric(self.meta_rubric, config)


class Dataset(BaseModel):
    """The records of one dataset file, and where it lives (image paths are relative to it)."""

    model_config = ConfigDict(frozen=True)

    path: Path
    records: tuple[DatasetRecord, ...]
    image_root: Path | None = None
    """The folder images must lie in (None: the dataset file's folder)."""
    _checklists: dict[str, Checklist] | None = PrivateAttr(default=None)
    """The default-config checklists, compiled once (a run asks for them several times)."""

    def __iter__(self) -> Iterator[DatasetRecord]:  # type: ignore[override]
        return iter(self.records)

    def __len__(self) -> int:
        return len(self.records)

    def by_id(self) -> dict[str, DatasetRecord]:
        return {r.id: r for r in self.records}

    def image_path(self, record: DatasetRecord) -> Path | None:
        """The record's image, which loading checked lies in the image root."""
        if record.image is None:
            return None
        root = self.image_root or self.path.parent
        return root / record.image

    def checklists(self, config: CompileConfig | None = None) -> dict[str, Checklist]:
        """Each record's checklist (its revised one, else its meta-rubric compiled with
        ``config``); with the default config, compiled once per dataset."""
        if config is not None:
            return {r.id: r.effective_checklist(config) for r in self.records}
        if self._checklists is None:
            self._checklists = {r.id: r.effective_checklist() for r in self.records}
        return dict(self._checklists)


_PLACEHOLDER = MetaRubric.model_validate(
    {
        "id": "placeholder",
        "question": "?",
        "items": [{"id": "x", "type": "fact", "tier": "context", "statement": "x"}],
    }
)
"""Stands in for the meta-rubric while the rest of a record is validated, so a broken
rubric does not hide the record's other problems (the rubric is validated on its own)."""


def _record(data: Any, base: Path) -> tuple[DatasetRecord | None, list[ErrorDetail]]:
    if not isinstance(data, dict):
        return None, [ErrorDetail("$", "record-object", "each line must be a JSON object", data)]
    errors: list[ErrorDetail] = []
    meta: MetaRubric | None = None
    shape = dict(data)
    if "meta_rubric" in data:
        try:
            meta = validate_meta_rubric(data["meta_rubric"], prefix="meta_rubric")
        except ValidationError as exc:
            errors += exc.details
        shape["meta_rubric"] = _PLACEHOLDER
    try:
        record = DatasetRecord.model_validate(shape)
    except pydantic.ValidationError as exc:
        return None, errors + pydantic_details(exc)
    if meta is None:
        return None, errors
    record = record.model_copy(update={"meta_rubric": meta})
    return record, _consistency(record, base)


def _consistency(record: DatasetRecord, base: Path) -> list[ErrorDetail]:
    ids = {"meta_rubric.id": record.meta_rubric.id}
    if record.checklist is not None:
        ids["checklist.rubric_id"] = record.checklist.rubric_id
    errors = [
        ErrorDetail(path, "id-match", f"must equal the record id {record.id!r}", value)
        for path, value in ids.items()
        if value != record.id
    ]
    if record.image is not None:
        problem = _image_problem(base, record.image)
        if problem is not None:
            errors.append(ErrorDetail("image", problem[0], problem[1], record.image))
    return errors


def image_kind(head: bytes) -> str | None:
    """The image format the first bytes of a file announce (jpeg, png, gif, webp), or None."""
    for magic, kind in _IMAGE_MAGIC:
        if head.startswith(magic):
            return kind
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    return None


def _image_homes(root: Path) -> list[Path]:
    """Where an image under ``root`` may really be: the root itself, and for a dataset in
    the Hugging Face Hub's cache (``.../datasets--OWNER--NAME/snapshots/REV/...``, whose
    files are links into the repository's ``blobs``), that repository's blobs."""
    real = root.resolve()
    homes = [real]
    for folder in (real, *real.parents):
        if folder.parent.name == "snapshots" and folder.parent.parent.name.startswith("datasets--"):
            homes.append(folder.parent.parent / "blobs")
            break
    return homes


def _image_problem(root: Path, name: str) -> tuple[str, str] | None:
    """Why ``name`` is not an image inside ``root`` (rule, message), or None when it is.

    The path is relative and stays inside the root once resolved (``..`` and symbolic
    links that lead out are refused: a dataset from elsewhere must not send other local
    files to a judge or into a log), the file is an image by its content, and no larger
    than ``IMAGE_MAX_BYTES``."""
    if Path(name).is_absolute() or Path(name).drive:
        return "image-relative", f"must be a path relative to {root}"
    target = root / name
    lexical = Path(os.path.normpath(target)).is_relative_to(os.path.normpath(root))
    try:
        resolved = target.resolve()
        inside = lexical and any(resolved.is_relative_to(r) for r in _image_homes(root))
    except (OSError, RuntimeError):
        inside = False
    if not inside:
        return "image-inside", f"leads outside {root}; images must lie in the dataset's folder"
    if not target.is_file():
        return "image-exists", f"no such file relative to {root}"
    try:
        size = target.stat().st_size
        with target.open("rb") as handle:
            head = handle.read(16)
    except OSError as exc:
        return "image-readable", f"cannot be read ({exc.strerror})"
    if image_kind(head) is None:
        return "image-content", "is not a JPEG, PNG, GIF or WebP image (by its first bytes)"
    if size > IMAGE_MAX_BYTES:
        return "image-size", f"is {size:,} bytes; an image may have at most {IMAGE_MAX_BYTES:,}"
    return None


RUBRIC_FILE_SUFFIXES = (".yaml", ".yml", ".json")
"""A meta-rubric file's extensions (a ``.json`` file is one when it holds an object, a
dataset table when it holds an array)."""
_RECORD_FIELDS = ("question_text_only", "image", "domain", "popularity", "metadata")
"""Fields of a dataset record a meta-rubric file may carry beside its meta-rubric (its id,
question and entity are the meta-rubric's own)."""


def is_rubric_file(path: Path) -> bool:
    """Whether ``path`` names a meta-rubric file (by extension; a ``.json`` file by its
    first character) rather than a dataset table."""
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml"):
        return True
    if suffix != ".json":
        return False
    try:
        with path.open("rb") as handle:
            head = handle.read(256)
    except OSError:
        return False
    return head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{")


def rubric_files(folder: Path) -> list[Path]:
    """The meta-rubric files directly in ``folder`` (YAML, or JSON holding an object), by
    name; an ``InputError`` when there are none."""
    found = sorted(
        p
        for p in folder.iterdir()
        if p.is_file() and not p.name.startswith(".") and is_rubric_file(p)
    )
    if not found:
        raise InputError(
            f"{folder}: no meta-rubric files here; a dataset folder holds one meta-rubric "
            f"file ({', '.join(RUBRIC_FILE_SUFFIXES)}) per question"
        )
    return found


def _rubric_record(path: Path, root: Path) -> tuple[DatasetRecord | None, list[ErrorDetail]]:
    """One question from a meta-rubric file: the meta-rubric, with the record fields it may
    carry (``question_text_only``, ``image``, ...); or a whole dataset record (a file with
    ``meta_rubric``)."""
    data = read_document(path)
    if not isinstance(data, dict):
        detail = ErrorDetail("$", "rubric-object", "a meta-rubric file holds one mapping", data)
        return None, [detail.in_file(path)]
    if "meta_rubric" in data:
        record, problems = _record(data, root)
        return record, [p.in_file(path) for p in problems]
    fields = {k: data[k] for k in _RECORD_FIELDS if k in data}
    errors: list[ErrorDetail] = []
    meta: MetaRubric | None = None
    try:
        meta = validate_meta_rubric({k: v for k, v in data.items() if k not in fields}, file=path)
    except ValidationError as exc:
        errors += exc.details
    try:
        record = DatasetRecord.model_validate(
            {"id": "placeholder", "question": "?", **fields, "meta_rubric": _PLACEHOLDER}
        )
    except pydantic.ValidationError as exc:
        return None, errors + [d.in_file(path) for d in pydantic_details(exc)]
    if meta is None:  # the record fields are still checked (the placeholder's ids match)
        return None, errors + [p.in_file(path) for p in _consistency(record, root)]
    record = record.model_copy(
        update={
            "id": meta.id,
            "question": meta.question,
            "entity": meta.entity,
            "meta_rubric": meta,
        }
    )
    return record, [p.in_file(path) for p in _consistency(record, root)]


def _repeated_id(
    first: dict[str, str], question: str, where: str | Path, label: str
) -> list[ErrorDetail]:
    """A duplicate-id problem at ``where`` when ``first`` (id -> where it is, as ``label``s
    say: a file, a line) already holds ``question``; else notes ``label`` as its place."""
    if question not in first:
        first[question] = label
        return []
    detail = ErrorDetail(
        "id", "unique-id", f"duplicate question id; {first[question]} has it", question
    )
    return [detail.in_file(where)]


def _load_rubrics(path: Path, image_root: Path | None) -> Dataset:
    """A dataset of one meta-rubric file, or of every one in a folder; every problem of
    every file is reported."""
    folder = path.is_dir()
    files = rubric_files(path) if folder else [path]
    root = image_root or (path if folder else path.parent)
    records: list[DatasetRecord] = []
    errors: list[ErrorDetail] = []
    first: dict[str, str] = {}
    for file in files:
        try:
            record, problems = _rubric_record(file, root)
        except ValidationError as exc:
            record, problems = None, exc.details
        errors += problems
        if record is None:
            continue
        errors += _repeated_id(first, record.id, file, str(file))
        records.append(record)
    if errors:
        raise ValidationError(errors)
    return Dataset(path=path, records=tuple(records), image_root=root if folder else image_root)


def load_dataset(
    path: str | Path, *, long_lived: bool = False, image_root: str | Path | None = None
) -> Dataset:
    """Load and validate a dataset (``.jsonl``, ``.json`` or ``.parquet``), a meta-rubric
    file (``.yaml``, ``.yml``, or ``.json`` holding one object) or a folder of them; every
    problem of every row or file is reported.

    A meta-rubric file is one question: its id, question and entity are the record's, and
    beside the meta-rubric it may carry the record's ``question_text_only``, ``image``,
    ``domain``, ``popularity`` and ``metadata`` (or it is a whole dataset record, with
    ``meta_rubric``). A folder is a dataset of the meta-rubric files directly in it, in
    name order; its images are relative to the folder.

    Image paths are relative to ``image_root`` (default: the dataset file's folder) and
    must stay inside it and name an image file (JPEG, PNG, GIF or WebP by content, at most
    ``IMAGE_MAX_BYTES``).

    ``long_lived``: the caller keeps the dataset until the process ends (a command does).
    Its objects are then moved out of the cyclic garbage collector's way (``gc.freeze``):
    at paper scale a full collection that walks them costs more than compiling every
    rubric, and they would never be freed anyway. Libraries and long-running services
    leave it off.
    """
    path = Path(path)
    if path.is_dir() or is_rubric_file(path):
        dataset = _load_rubrics(path, Path(image_root) if image_root is not None else None)
        if long_lived:
            gc.freeze()
        return dataset
    root = Path(image_root) if image_root is not None else path.parent
    records: list[DatasetRecord] = []
    errors: list[ErrorDetail] = []
    first: dict[str, str] = {}
    for line, data in read_rows(path, what="dataset", errors=errors):
        record, problems = _record(data, root)
        errors += [p.in_file(f"{path}:{line}") for p in problems]
        if record is None:
            continue
        errors += _repeated_id(first, record.id, f"{path}:{line}", f"line {line}")
        records.append(record)
    if errors:
        raise ValidationError(errors)
    if not records:
        raise ValidationError(
            [ErrorDetail("$", "non-empty", "the dataset has no records").in_file(path)]
        )
    dataset = Dataset(
        path=path, records=tuple(records), image_root=Path(image_root) if image_root else None
    )
    if long_lived:
        gc.freeze()
    return dataset


def write_dataset(datasets: Dataset | Sequence[Dataset], out: str | Path) -> int:
    """Write the records of one dataset or several (their question ids unique across them)
    as one dataset table (``.jsonl``, ``.json`` or ``.parquet``, by extension) and return
    how many. Images are written relative to the table's folder (one outside it is linked
    or copied into its ``images/``). Atomic."""
    out = Path(out)
    table_format(out)
    parts = [datasets] if isinstance(datasets, Dataset) else list(datasets)
    first: dict[str, str] = {}
    errors: list[ErrorDetail] = []
    for part in parts:
        for record in part.records:
            errors += _repeated_id(first, record.id, part.path, str(part.path))
    if errors:
        raise ValidationError(errors)
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    for part in parts:
        for record in part.records:
            row = record.model_dump(mode="json")
            image = part.image_path(record)
            if image is not None:
                row["image"] = image_inside(image, out.parent)
            rows.append(row)
    return write_rows(out, rows)
