"""``gamut build import``: start a build from an existing question set.

A table of image + question rows (JSONL, JSON, Parquet or CSV; a local path, or a Hugging
Face dataset file ``hf://datasets/owner/name[@revision]/path``) becomes the accepted
questions of a build folder (``review/accepted.jsonl``), which the evidence, draft, refine
and text-only stages read: the question-writing and review stages are skipped, since the
set's authors already wrote and checked the questions.

A mapping names the column of each field (``question=query``, ``image=image_path``); a
field not mapped is read from the column of its own name when there is one. A column may
be a dotted path into nested values (``turns.0.query``). The image is a path (relative to
the table's folder), or the bytes of an image (a Parquet column of bytes, or the
``{"bytes": ..., "path": ...}`` struct of Hugging Face ``Image`` columns), written once
under ``import/images/`` by content hash. Every bad row is reported (file, row, column,
value) before anything is written.

A Hugging Face file (``owner/name@revision/...`` for a branch, tag or commit) is downloaded
once into the Hugging Face cache with ``huggingface_hub`` (the ``hub`` extra: ``pip install
'gamut-eval[hub]'``), which reads ``HF_TOKEN`` for gated sets and honours
``HF_HUB_OFFLINE``.
"""

from __future__ import annotations

import csv
import hashlib
import importlib.util
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from gamut_eval._files import IMAGE_TYPES, atomic_writer
from gamut_eval._folder import file_sha256
from gamut_eval._tables import read_rows
from gamut_eval.construct._models import AcceptedQuestion, Popularity, Provenance
from gamut_eval.construct._workdir import Workdir, content_hash, safe_id
from gamut_eval.errors import ErrorDetail, InputError, ValidationError

FIELDS: dict[str, bool] = {
    "question": True,
    "image": True,
    "id": False,
    "entity": False,
    "answer": False,
    "domain": False,
    "popularity": False,
}
"""Fields of an imported question, and whether each must be there."""

POPULARITY: tuple[str, ...] = get_args(Popularity)
_MAX_ERRORS = 50
_MAGIC = {b"\x89PNG": ".png", b"\xff\xd8\xff": ".jpg", b"GIF8": ".gif", b"RIFF": ".webp"}


@dataclass(frozen=True)
class ImportReport:
    """What an import wrote."""

    source: str
    rows: int
    path: Path
    images_written: int
    with_entity: int
    with_answer: int

    def summary(self) -> str:
        text = f"{self.rows} question(s) from {self.source} -> {self.path}"
        if self.images_written:
            text += f"; {self.images_written} image(s) written from the table"
        text += f"; {self.with_entity} with an entity, {self.with_answer} with an answer"
        return text


def parse_mapping(pairs: tuple[str, ...] | list[str]) -> dict[str, str]:
    """``["question=query", "image=image_path"]`` as ``{field: column}``."""
    mapping: dict[str, str] = {}
    for pair in pairs:
        field, sep, column = pair.partition("=")
        field, column = field.strip(), column.strip()
        if not sep or not field or not column:
            raise InputError(
                f"mapping {pair!r}: write FIELD=COLUMN, e.g. question=query", setting="mapping"
            )
        if field not in FIELDS:
            raise InputError(
                f"mapping {pair!r}: unknown field {field!r}; the fields are {', '.join(FIELDS)}",
                setting="mapping",
            )
        if field in mapping:
            raise InputError(f"mapping: {field!r} is mapped twice", setting="mapping")
        mapping[field] = column
    return mapping


def _rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    if path.suffix.lower() != ".csv":
        yield from read_rows(path, what="questions")
        return
    try:
        with path.open(encoding="utf-8-sig", newline="") as handle:
            for number, row in enumerate(csv.DictReader(handle), start=1):
                yield number, {k: (v if v != "" else None) for k, v in row.items() if k}
    except FileNotFoundError:
        raise InputError(f"{path}: file not found") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason}); save it as UTF-8") from None
    except csv.Error as exc:
        raise InputError(f"{path}: not a readable CSV file: {exc}") from None


_MISSING = object()


def _get(row: Mapping[str, Any], column: str) -> Any:
    """The value at ``column``: a key of the row, or a dotted path into nested values."""
    if column in row:
        return row[column]
    node: Any = row
    for part in column.split("."):
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return _MISSING
    return node


def _columns(row: Mapping[str, Any]) -> str:
    return ", ".join(sorted(map(str, row))) or "(none)"


class _Rows:
    """Reads one table into accepted questions, collecting every problem."""

    def __init__(self, path: Path, source: str, mapping: dict[str, str], workdir: Workdir):
        self.path = path
        self.source = source
        self.mapping = {f: mapping.get(f, f) for f in FIELDS}
        self.explicit = set(mapping)
        self.images = workdir.root / "import" / "images"
        self.pending: dict[Path, bytes] = {}
        self.errors: list[ErrorDetail] = []
        self.file_hash = ""

    def fail(self, number: int, field: str, rule: str, message: str, value: Any = None) -> None:
        column = self.mapping[field]
        where = f"{self.path}:row {number}"
        detail = ErrorDetail(f"column {column!r} ({field})", rule, message, value)
        self.errors.append(detail.in_file(where))

    def check_columns(self, row: Mapping[str, Any]) -> None:
        """A mapped or required column absent from the first row: one error for the file."""
        for field, column in self.mapping.items():
            if _get(row, column) is _MISSING and (FIELDS[field] or field in self.explicit):
                hint = "" if field in self.explicit else f"; map it to one ({field}=COLUMN)"
                raise InputError(
                    f"{self.path}: no column {column!r} for the {field} (columns: "
                    f"{_columns(row)}){hint}",
                    setting="mapping",
                )

    def text(self, number: int, row: Mapping[str, Any], field: str) -> str | None:
        value = _get(row, self.mapping[field])
        if value is _MISSING or value is None:
            value = ""
        elif isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            self.fail(number, field, "type", f"must be text, not {type(value).__name__}")
            return None
        value = value.strip()
        if not value and FIELDS[field]:
            self.fail(number, field, "required", "is empty")
        return value or None

    def image(self, number: int, row: Mapping[str, Any]) -> tuple[str, str] | None:
        value = _get(row, self.mapping["image"])
        if isinstance(value, Mapping):  # Hugging Face Image: {"bytes": ..., "path": ...}
            value = value.get("bytes") or value.get("path")
        if isinstance(value, bytes | bytearray):
            return self._stored(bytes(value))
        if not isinstance(value, str) or not value.strip():
            self.fail(number, "image", "required", "needs an image path or image bytes")
            return None
        if re.match(r"^[a-z][a-z0-9+.-]*://", value, re.IGNORECASE):
            self.fail(number, "image", "local", "image URLs are not downloaded; give a path", value)
            return None
        path = Path(value) if Path(value).is_absolute() else self.path.parent / value
        if path.suffix.lower() not in IMAGE_TYPES:
            kinds = ", ".join(sorted(IMAGE_TYPES))
            self.fail(number, "image", "image-type", f"not an image file ({kinds})", value)
            return None
        if not path.is_file():
            self.fail(number, "image", "image-exists", f"no such image file ({path})", value)
            return None
        return str(path.resolve()), file_sha256(path)

    def _stored(self, data: bytes) -> tuple[str, str]:
        digest = hashlib.sha256(data).hexdigest()
        suffix = next((s for magic, s in _MAGIC.items() if data.startswith(magic)), ".png")
        target = (self.images / f"{digest[:16]}{suffix}").resolve()
        self.pending[target] = data
        return str(target), digest

    def question(self, number: int, row: Mapping[str, Any]) -> AcceptedQuestion | None:
        before = len(self.errors)
        question = self.text(number, row, "question")
        image = self.image(number, row)
        values = {f: self.text(number, row, f) for f in ("id", "entity", "answer", "domain")}
        popularity = self.text(number, row, "popularity")
        if popularity is not None and popularity not in POPULARITY:
            allowed = ", ".join(POPULARITY)
            self.fail(number, "popularity", "enum", f"must be one of {allowed}", popularity)
        if len(self.errors) > before or question is None or image is None:
            return None
        qid = safe_id(values["id"] or f"{safe_id(self.path.stem, 'q')}-{number}", f"q{number}")
        inputs = {"source": self.file_hash, "row": str(number)}
        return AcceptedQuestion(
            id=qid,
            image_id=qid,
            image=image[0],
            image_sha256=image[1],
            question=question,
            candidate_id=qid,
            entity=values["entity"],
            answer=values["answer"],
            domain=values["domain"],
            popularity=popularity,
            provenance=Provenance(
                stage="import",
                model=None,
                prompt_version=None,
                inputs=inputs,
                key=content_hash({**inputs, "question": question, "image": image[1]}),
            ),
        )


def import_questions(
    workdir: str | Path,
    source: str | Path,
    mapping: dict[str, str] | None = None,
    *,
    limit: int | None = None,
) -> ImportReport:
    """Write ``review/accepted.jsonl`` from the table at ``source`` (see the module doc).

    Bad rows or columns raise an ``InputError`` naming the file, the row, the column and
    the value; nothing is written then."""
    if limit is not None and limit < 1:
        raise InputError(f"limit must be at least 1 (found: {limit})", setting="limit")
    store = Workdir(workdir)
    path = local_table(str(source))
    reader = _Rows(path, str(source), mapping or {}, store)
    reader.file_hash = file_sha256(path)
    questions: list[AcceptedQuestion] = []
    first = True
    for number, row in _rows(path):
        if first:
            reader.check_columns(row)
            first = False
        question = reader.question(number, row)
        if question is not None:
            questions.append(question)
        if len(reader.errors) >= _MAX_ERRORS or (limit is not None and number >= limit):
            break
    if reader.errors:
        raise ValidationError(reader.errors)
    if not questions:
        raise InputError(f"{path}: the table has no rows")
    seen: dict[str, str] = {}
    for question in questions:
        at = question.provenance.inputs["row"]
        if question.id in seen:
            raise InputError(
                f"{path}: rows {seen[question.id]} and {at} get the same id {question.id!r}; "
                "map the id to a column of unique ids (mapping id=COLUMN)",
                setting="mapping",
            )
        seen[question.id] = at
    for target, data in reader.pending.items():
        if not target.is_file():
            with atomic_writer(target, "wb") as handle:
                handle.write(data)
    written = store.write("accepted", questions)
    return ImportReport(
        source=str(source),
        rows=len(questions),
        path=written,
        images_written=len(reader.pending),
        with_entity=sum(1 for q in questions if q.entity),
        with_answer=sum(1 for q in questions if q.answer),
    )


TABLE_SUFFIXES = (".jsonl", ".json", ".parquet", ".csv")
_HF = re.compile(r"^hf://datasets/(?P<repo>[^/@]+/[^/@]+)(?:@(?P<rev>[^/]+))?/(?P<file>.+)$")


def parse_hf_path(source: str) -> tuple[str, str | None, str]:
    """``(repo_id, revision, filename)`` of an ``hf://datasets/...`` path."""
    match = _HF.match(source)
    if match is None:
        raise InputError(
            f"{source}: a Hugging Face path is hf://datasets/OWNER/NAME[@REVISION]/FILE "
            "(a .jsonl, .json, .parquet or .csv file of the dataset repository)"
        )
    return match["repo"], match["rev"], match["file"]


def _suffix_ok(name: str, source: str) -> None:
    if not name.lower().endswith(TABLE_SUFFIXES):
        raise InputError(f"{source}: unknown table format; name a {', '.join(TABLE_SUFFIXES)} file")


def local_table(source: str) -> Path:
    """A local path to the table ``source`` names (downloading a Hugging Face file)."""
    if not source.startswith("hf://"):
        path = Path(source)
        _suffix_ok(path.name, source)
        if not path.is_file():
            raise InputError(f"{source}: file not found")
        return path
    repo, revision, filename = parse_hf_path(source)
    _suffix_ok(filename, source)
    if importlib.util.find_spec("huggingface_hub") is None:
        raise InputError(
            f"{source}: reading from the Hugging Face Hub needs huggingface_hub; install the "
            "`hub` extra: pip install 'gamut-eval[hub]'"
        )
    from huggingface_hub import hf_hub_download

    try:
        return Path(hf_hub_download(repo, filename, repo_type="dataset", revision=revision))
    except Exception as exc:  # the hub's errors: not found, gated, offline, network
        message = f"{source}: cannot be read from the Hub: {type(exc).__name__}: {exc}"
        raise InputError(message) from None
