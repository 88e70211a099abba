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
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import yaml

from gamut_eval.errors import ErrorDetail, InputError, ValidationError

__all__ = ["atomic_writer", "image_inside", "read_document", "read_jsonl", "read_mapping"]


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate mapping keys."""


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
    """``json.loads`` that refuses duplicate keys."""
    return json.loads(text, object_pairs_hook=_no_duplicates)


def read_text(path: Path) -> str:
    try:
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
        except json.JSONDecodeError as exc:
            detail = ErrorDetail(f"line {exc.lineno}, column {exc.colno}", "json-syntax", exc.msg)
        except ValueError as exc:
            detail = ErrorDetail("$", "json-syntax", str(exc))
    else:
        try:
            return yaml.load(
                text, Loader=_StrictLoader
            )  # a SafeLoader subclass: no arbitrary objects
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "$"
            detail = ErrorDetail(where, "yaml-syntax", str(exc.problem or exc.context))
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
            for number, line in enumerate(handle, start=1):
                if line.strip():
                    parsed = _jsonl_line(path, number, line, errors)
                    if parsed is not _BAD:
                        yield number, parsed
        except UnicodeDecodeError as exc:
            raise InputError(f"{path}: not UTF-8 text ({exc.reason})") from None


_BAD: Any = object()


def _jsonl_line(path: Path, number: int, line: str, errors: list[ErrorDetail] | None) -> Any:
    try:
        return parse_json(line)
    except ValueError as exc:
        torn = not line.endswith("\n")
        rule = "torn-line" if torn else "json-syntax"
        why = "the last line is incomplete (was the writer interrupted?)" if torn else str(exc)
        detail = ErrorDetail(f"line {number}", rule, why).in_file(path)
        if errors is None:
            raise ValidationError([detail]) from None
        errors.append(detail)
        return _BAD


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
