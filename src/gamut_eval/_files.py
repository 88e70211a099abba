"""Reading and writing the files users hand us: strict parsing, atomic writes.

Parsers refuse duplicate keys (a silent "last one wins" hides authoring mistakes) and report
the line. Writers go through a temporary file, fsync and rename, so a crash never leaves a
half-written output behind.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import yaml

from gamut_eval.errors import ErrorDetail, InputError, ValidationError

MAX_DEPTH = 64
"""Deepest nesting of lists and objects a file may have (a rubric needs about six)."""
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
"""Largest YAML or JSON document read whole (rubrics, checklists, price tables)."""
MAX_LINE_BYTES = 64 * 1024 * 1024
"""Longest line of a JSONL table (an answer of several megabytes still fits)."""
MAX_YAML_ALIASES = 1000
"""Most alias uses (``*name``) in one YAML document."""
MAX_YAML_NODES = 200_000
"""Most values a YAML document may hold once its aliases are expanded: a few hundred
bytes of nested aliases ("billion laughs") would otherwise expand to billions."""


class LimitError(ValueError):
    """A file breaks one of the reading limits above; ``rule`` names which, ``where`` the
    place (``line L, column C`` when known)."""

    def __init__(self, message: str, rule: str, where: str = "$") -> None:
        super().__init__(message)
        self.rule = rule
        self.where = where


class _YamlLimit(yaml.composer.ComposerError):
    """A YAML document breaks a reading limit; ``rule`` names which."""

    def __init__(self, rule: str, problem: str, mark: Any) -> None:
        super().__init__(None, None, problem, mark)
        self.rule = rule


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate mapping keys, and documents nested deeper than
    ``MAX_DEPTH``, with more than ``MAX_YAML_ALIASES`` aliases or more than
    ``MAX_YAML_NODES`` values once the aliases are expanded (before any is built)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._aliases = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_YAML_ALIASES:
                raise _YamlLimit(
                    "yaml-aliases", f"more than {MAX_YAML_ALIASES} aliases (*name)", mark
                )
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _YamlLimit(
                    "nesting-depth",
                    f"nested deeper than {MAX_DEPTH} levels (a GAMUT file needs a handful)",
                    mark,
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def get_single_data(self) -> Any:
        node = self.get_single_node()
        if node is None:
            return None
        if _expanded_size(node, {}) > MAX_YAML_NODES:
            raise _YamlLimit(
                "yaml-aliases",
                f"its aliases expand to more than {MAX_YAML_NODES} values; write the "
                "values out or use fewer aliases",
                node.start_mark,
            )
        return self.construct_document(node)


def _expanded_size(node: yaml.Node, sizes: dict[int, int]) -> int:
    """How many values ``node`` stands for with every alias expanded (a shared node is
    counted each time it is used, its size computed once). Depth is at most ``MAX_DEPTH``."""
    known = sizes.get(id(node))
    if known is not None:
        return known
    sizes[id(node)] = MAX_YAML_NODES + 1  # a node inside itself expands without end
    total = 1
    if isinstance(node, yaml.SequenceNode):
        for child in node.value:
            total += _expanded_size(child, sizes)
            if total > MAX_YAML_NODES:
                break
    elif isinstance(node, yaml.MappingNode):
        for key, child in node.value:
            total += _expanded_size(key, sizes) + _expanded_size(child, sizes)
            if total > MAX_YAML_NODES:
                break
    sizes[id(node)] = total
    return total


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _construct_mapping,
)


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def parse_json(text: str) -> Any:
    """``json.loads`` that refuses duplicate keys, and nesting deeper than ``MAX_DEPTH``
    (a ``LimitError`` naming the line and column where it gets too deep)."""
    try:
        value = json.loads(text, object_pairs_hook=_no_duplicates)
    except RecursionError:
        value = None
    else:
        # Fewer opening brackets than the limit cannot nest past it: the walk is for the
        # rare text that has as many (a row of a table is read here, millions of times).
        if text.count("[") + text.count("{") <= MAX_DEPTH or not _too_deep(value):
            return value
    raise LimitError(
        f"nested deeper than {MAX_DEPTH} levels of lists and objects (a GAMUT file needs "
        "a handful); is this the right file?",
        "nesting-depth",
        _deep_at(text),
    )


def _too_deep(value: Any) -> bool:
    """Whether ``value`` nests lists and objects deeper than ``MAX_DEPTH`` (no recursion)."""
    stack = [(value, 1)] if isinstance(value, dict | list) else []
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return False


_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _deep_at(text: str) -> str:
    """``line L, column C`` of the bracket that opens level ``MAX_DEPTH + 1``."""
    depth = 0
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                start = match.start()
                line = text.count("\n", 0, start) + 1
                column = start - text.rfind("\n", 0, start)
                return f"line {line}, column {column}"
        elif token in "]}":
            depth -= 1
    return "$"


def json_error(exc: ValueError) -> ErrorDetail:
    """Where and why ``parse_json`` refused a whole document: a limit broken, or bad JSON."""
    if isinstance(exc, LimitError):
        return ErrorDetail(exc.where, exc.rule, str(exc))
    if isinstance(exc, json.JSONDecodeError):
        return ErrorDetail(f"line {exc.lineno}, column {exc.colno}", "json-syntax", exc.msg)
    return ErrorDetail("$", "json-syntax", str(exc))


def read_text(path: Path) -> str:
    try:
        size = path.stat().st_size if path.is_file() else 0
        if size > MAX_DOCUMENT_BYTES:
            raise InputError(
                f"{path}: {size:,} bytes, more than the {MAX_DOCUMENT_BYTES:,} a document "
                "may have; is this the right file?"
            )
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, expected a file") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def read_document(path: str | Path) -> Any:
    """Parse a YAML or JSON file (by extension; ``.json`` is JSON, anything else YAML)."""
    path = Path(path)
    text = read_text(path)
    if path.suffix.lower() == ".json":
        try:
            return parse_json(text)
        except ValueError as exc:
            detail = json_error(exc)
    else:
        try:
            return yaml.load(
                text, Loader=_StrictLoader
            )  # a SafeLoader subclass: no arbitrary objects
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "$"
            rule = getattr(exc, "rule", "yaml-syntax")
            detail = ErrorDetail(where, rule, str(exc.problem or exc.context))
        except yaml.YAMLError as exc:
            detail = ErrorDetail("$", "yaml-syntax", str(exc))
    raise ValidationError([detail.in_file(path)])


def read_mapping(path: str | Path, rule: str, message: str) -> dict[Any, Any]:
    """``read_document`` of a file that must hold a mapping; anything else is a
    ``ValidationError`` at ``$`` with ``rule`` and ``message``."""
    data = read_document(path)
    if not isinstance(data, dict):
        raise ValidationError([ErrorDetail("$", rule, message, data).in_file(path)])
    return data


def read_jsonl(
    path: str | Path, errors: list[ErrorDetail] | None = None
) -> Iterator[tuple[int, Any]]:
    """Yield ``(line number, parsed object)`` for each non-blank line of a JSONL file.

    Streams the file. A line that does not parse is an error naming the line; a final line
    without a newline that does not parse is reported as torn (an interrupted writer), never
    skipped. With an ``errors`` list such problems are appended there and reading goes on
    (so a validator reports every bad line); without one, the first raises.
    """
    path = Path(path)
    if not path.is_file():
        read_text(path)  # raises the right InputError (not found, a directory, ...)
    with path.open(encoding="utf-8", newline="\n") as handle:
        try:
            lines = iter(lambda: handle.readline(MAX_LINE_BYTES + 1), "")
            for number, line in enumerate(lines, start=1):
                if len(line) > MAX_LINE_BYTES:
                    raise ValidationError([long_line(path, number)])
                if line.strip():
                    parsed = jsonl_line(path, number, line, errors)
                    if parsed is not BAD:
                        yield number, parsed
        except UnicodeDecodeError as exc:
            raise InputError(f"{path}: not UTF-8 text ({exc.reason})") from None


BAD: Any = object()
"""What ``jsonl_line`` returns for a line it noted in ``errors``."""


def long_line(path: Path, number: int) -> ErrorDetail:
    """The error of a JSONL line longer than ``MAX_LINE_BYTES``."""
    return ErrorDetail(
        f"line {number}",
        "line-length",
        f"longer than {MAX_LINE_BYTES:,} bytes; is this the right file?",
    ).in_file(path)


def line_error(path: Path, number: int, line: str, exc: ValueError) -> ErrorDetail:
    """The error of a JSONL line that did not parse: a limit broken, a line cut short (an
    interrupted writer) or bad JSON."""
    if isinstance(exc, LimitError):
        where = exc.where.replace("line 1,", f"line {number},") if exc.where != "$" else ""
        return ErrorDetail(where or f"line {number}", exc.rule, str(exc)).in_file(path)
    torn = not line.endswith("\n")
    rule = "torn-line" if torn else "json-syntax"
    why = (
        "the last line is incomplete (was the writer interrupted?); remove it or rerun the "
        "step that wrote the file"
        if torn
        else str(exc)
    )
    return ErrorDetail(f"line {number}", rule, why).in_file(path)


def jsonl_line(path: Path, number: int, line: str, errors: list[ErrorDetail] | None) -> Any:
    """A JSONL line parsed; when it does not parse, the error is raised, or appended to
    ``errors`` (when given) and ``BAD`` returned."""
    try:
        return parse_json(line)
    except ValueError as exc:
        detail = line_error(path, number, line, exc)
        if errors is None:
            raise ValidationError([detail]) from None
        errors.append(detail)
        return BAD


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _remove_stale_temps(path: Path) -> None:
    """Remove the temporary files of ``path`` that writers which are gone left (killed
    mid-write): their names carry their writer's pid."""
    from gamut_eval._lock import process_alive

    prefix = f".{path.name}."
    for entry in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        pid = entry.name[len(prefix) :].split(".", 1)[0]
        if pid.isdigit() and not process_alive(int(pid)):
            entry.unlink(missing_ok=True)


@contextlib.contextmanager
def atomic_writer(path: str | Path, mode: str = "w") -> Iterator[IO[Any]]:
    """Write to a temporary file beside ``path`` (``.NAME.PID.XXXX.tmp``); rename over it
    only when the block succeeds. A temporary file of ``path`` that a killed writer left is
    removed by the next writer of ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temps(path)
    prefix = f".{path.name}.{os.getpid()}."
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=path.parent)
    os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; outputs get the usual mode
    try:
        with os.fdopen(fd, mode, encoding=None if "b" in mode else "utf-8") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_json(path: str | Path, data: Any) -> None:
    """Write ``data`` as indented JSON (non-ASCII kept as is) with a final newline, atomically."""
    with atomic_writer(path) as handle:
        json.dump(data, handle, indent=2, ensure_ascii=False)
        handle.write("\n")


IMAGE_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}
"""The image file suffixes the project reads (a build's images, an import into the app, a
judge's request), with the media type each is sent or served as. Raster formats only: an
SVG can carry script."""


def image_inside(image: str | Path, folder: Path) -> str:
    """``image``'s path relative to ``folder``, the folder of a dataset being written. An
    image outside it is linked (or, across file systems, copied) into its ``images/``
    first: a dataset's images must lie in its folder (``load_dataset`` refuses others), and
    a folder that holds its images can be moved or pushed whole."""
    source = Path(image).resolve()
    base = folder.resolve()
    if source.is_relative_to(base):
        return os.path.relpath(source, base)
    into = base / "images"
    into.mkdir(parents=True, exist_ok=True)
    target = into / source.name
    number = 1
    while target.exists():
        if target.samefile(source) or _same_bytes(target, source):
            return os.path.relpath(target, base)
        number += 1
        target = into / f"{source.stem}-{number}{source.suffix}"
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)
    return os.path.relpath(target, base)


def _same_bytes(a: Path, b: Path) -> bool:
    return a.stat().st_size == b.stat().st_size and a.read_bytes() == b.read_bytes()
