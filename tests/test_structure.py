"""The shape of the code base, read from the sources with ``ast`` (nothing is imported).

* No import cycle between modules. Module-level and function-level imports both count (an
  import moved into a function still makes the two modules depend on each other); imports
  under ``if TYPE_CHECKING:`` do not, since they never run. Importing ``a.b.c`` from
  outside ``a.b`` runs ``a/b/__init__.py`` first, so it counts as importing ``a.b`` too.
* Imports point down ``LAYERS``: a module may import its own layer and the layers below
  it, never one above.
* Packages have faces: code outside a package (``gamut_eval.judge``, ``gamut_eval.rubric``
  ...) imports only what the package's ``__init__`` exports, never its ``_private``
  modules. Tests of a package (``tests/judge`` for ``judge``) may use its insides; other
  tests, benches and scripts use faces. A face re-exports only its own package's names.
  Modules are as long as the idea they hold: there is no line cap.
* Library messages name settings, not command-line options: outside ``cli/`` no string
  (docstrings aside) names a ``--option``; an error names its settings (``setting=``) and
  the command line adds their options.
* Verdicts go through the ``Verdict`` enum: no string spells a verdict's value outside it.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ROOT = REPO / "src"
PACKAGE = "gamut_eval"

LAYERS: list[tuple[str, list[str]]] = [
    (
        "base",
        [
            "errors",
            "_extras",
            "hub",
            "_lazy",
            "_files",
            "_lock",
            "_tables",
            "_verdict_table",
            "data",
        ],
    ),
    ("rubric", ["rubric"]),
    ("scoring", ["scoring"]),
    # "" is the package's __init__, which re-exports the core API (rubric, scoring, dataset).
    # prices: the price table, read by the judge's dry run, a run and a build.
    ("dataset / responses", ["dataset", "_card", "responses", "prices", ""]),
    ("judge", ["judge"]),
    # _inspect_entry is Inspect AI's entry point into the task and scorer of generate.
    (
        "generate / run",
        ["generate", "run", "records", "_folder", "_usage", "_inspect_entry"],
    ),
    ("construct / analysis", ["construct", "analysis", "calibration"]),
    ("annotate / quality", ["annotate", "quality"]),
    # What the package ships for tests and benches (fake servers, a synthetic run folder):
    # nothing in the library imports it.
    ("testing", ["testing"]),
    ("cli", ["cli", "__main__"]),
]
"""Lowest first, as (name, modules or packages under ``gamut_eval``). A module is in the
layer of the longest entry that is it or a package holding it."""

LIGHT_MODULES = {
    f"{PACKAGE}.cli._build": ["aiohttp", "pandas", "inspect_ai"],
    f"{PACKAGE}.cli._report": [
        "pandas",
        "pyarrow",
        "jinja2",
        "yaml",
        f"{PACKAGE}._files",
        f"{PACKAGE}._tables",
        f"{PACKAGE}.analysis",
    ],
}
"""Command modules, imported when their command loads (``gamut --help`` loads none), and
what they must not import at module level (their commands import it when they run). The
build command reads its defaults from ``construct``'s settings (a light module) when it
loads. Only the names a module imports itself are checked, not what those import: a
module of the package that loads a heavy library is listed by name (``_files`` loads
YAML)."""


@dataclass(frozen=True)
class Import:
    target: str
    line: int
    in_function: bool
    via: str | None = None
    """The module actually named, when ``target`` is a package whose ``__init__`` it runs."""

    def where(self) -> str:
        text = f"line {self.line}"
        if self.in_function:
            text += ", in a function"
        if self.via:
            text += f", importing {self.via} runs the package"
        return text


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted((ROOT / PACKAGE).rglob("*.py"))}


MODULES = _sources()


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _resolve(name: str) -> str:
    """The module ``name`` lands in: itself, or the closest enclosing module we have."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def _raw_imports(
    tree: ast.AST, *, in_function: bool = False
) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement, and whether it is inside a function; ``if TYPE_CHECKING:``
    blocks are skipped (their ``else:`` is not)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, in_function
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                yield from _raw_imports(
                    ast.Module(body=[child], type_ignores=[]), in_function=in_function
                )
        else:
            nested = in_function or isinstance(
                node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
            )
            yield from _raw_imports(node, in_function=nested)


def imports_of(module: str) -> list[Import]:
    """The modules of this package that ``module`` imports, with where it does."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    is_package = path.name == "__init__.py"
    found: list[Import] = []
    for node, in_function in _raw_imports(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                if not is_package:
                    anchor = anchor[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            # ``from package import submodule`` imports the submodule.
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base
                for alias in node.names
            ]
        for target in targets:
            if target == PACKAGE or target.startswith(PACKAGE + "."):
                resolved = _resolve(target)
                if resolved and resolved != module:
                    found.append(Import(resolved, node.lineno, in_function))
                    found += _packages_run(module, resolved, node.lineno, in_function)
    return found


def _packages_run(module: str, target: str, line: int, in_function: bool) -> list[Import]:
    """Importing ``a.b.c`` first runs ``a.b``'s ``__init__``, unless ``module`` is inside it."""
    own = {module} | {module.rsplit(".", n)[0] for n in range(1, module.count(".") + 1)}
    parts = target.split(".")
    return [
        Import(package, line, in_function, via=target)
        for package in (".".join(parts[:n]) for n in range(2, len(parts)))
        if package not in own and package in MODULES
    ]


def _imports_named(module: str, prefixes: list[str]) -> list[tuple[str, int]]:
    """Module-level (not TYPE_CHECKING, not in a function) imports of anything in ``prefixes``."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    hits = []
    for node, in_function in _raw_imports(tree):
        if in_function:
            continue
        names = (
            [alias.name for alias in node.names]
            if isinstance(node, ast.Import)
            else [node.module or ""]
        )
        for name in names:
            if any(name == p or name.startswith(p + ".") for p in prefixes):
                hits.append((name, node.lineno))
    return hits


GRAPH: dict[str, list[Import]] = {module: imports_of(module) for module in MODULES}


def layer_of(module: str) -> tuple[int, str]:
    """(rank, layer name) of the longest listed prefix of ``module``."""
    relative = module.removeprefix(PACKAGE).removeprefix(".")
    best: tuple[int, int, str] | None = None  # (prefix length, rank, name)
    for rank, (name, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            matches = relative == prefix or (prefix != "" and relative.startswith(prefix + "."))
            if matches and (best is None or len(prefix) > best[0]):
                best = (len(prefix), rank, name)
    if best is None:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS in {__file__}")
    return best[1], best[2]


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iteratively; components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
    return components


def _a_cycle(graph: dict[str, set[str]], members: list[str]) -> list[str]:
    """One shortest cycle through the first member, inside the component (for the message)."""
    start = members[0]
    inside = set(members)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node] & inside):
                if child == start:
                    return [*paths[node], start]
                if child not in paths:
                    paths[child] = [*paths[node], child]
                    following.append(child)
        frontier = following
    raise AssertionError("not a cycle")  # pragma: no cover


def _describe(edge_from: str, edge_to: str) -> str:
    where = [imp.where() for imp in GRAPH[edge_from] if imp.target == edge_to]
    return f"{edge_from} -> {edge_to} ({'; '.join(dict.fromkeys(where))})"


def test_every_module_is_parsed_and_placed() -> None:
    assert len(MODULES) > 50
    for module in MODULES:
        layer_of(module)


def test_no_import_cycles() -> None:
    graph = {module: {imp.target for imp in imports} for module, imports in GRAPH.items()}
    problems = []
    for members in strongly_connected(graph):
        cycle = _a_cycle(graph, members)
        steps = "\n      ".join(_describe(a, b) for a, b in itertools.pairwise(cycle))
        problems.append(f"cycle among {', '.join(members)}:\n      {steps}")
    assert not problems, "import cycles:\n  " + "\n  ".join(problems)


def test_imports_point_down_the_layers() -> None:
    problems = []
    for module, imports in GRAPH.items():
        rank, layer = layer_of(module)
        for imp in imports:
            target_rank, target_layer = layer_of(imp.target)
            if target_rank > rank:
                problems.append(
                    f"{module} ({layer}) imports {imp.target} ({target_layer}), {imp.where()}"
                )
    table = " -> ".join(
        f"{name} [{', '.join(p or '<package>' for p in ps)}]" for name, ps in LAYERS
    )
    assert not problems, f"upward imports (layers: {table}):\n  " + "\n  ".join(problems)


def test_the_import_reader_skips_type_checking_and_marks_functions() -> None:
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "import a\n"
        "if TYPE_CHECKING:\n    import b\nelse:\n    import c\n"
        "def f():\n    import d\n"
        "class K:\n    def g(self):\n        from e import x\n"
    )
    found = {
        (node.names[0].name if isinstance(node, ast.Import) else str(node.module), nested)
        for node, nested in _raw_imports(tree)
    }
    assert found == {("typing", False), ("a", False), ("c", False), ("d", True), ("e", True)}


def test_cycles_are_found_and_shown() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    assert strongly_connected(graph) == [["a", "b", "c"]]
    assert _a_cycle(graph, ["a", "b", "c"]) == ["a", "b", "c", "a"]


PACKAGES = sorted(
    name.split(".")[1]
    for name, path in MODULES.items()
    if path.name == "__init__.py" and name.count(".") == 1
)
"""The packages under ``gamut_eval`` (each has a face: its ``__init__``)."""

TEST_HOMES = {"scale": "judge"}
"""Test folders named otherwise than the package they test (the judge's scale-out backends)."""


def _home(path: Path) -> str | None:
    """The package whose insides the file at ``path`` may use (None: faces only)."""
    parts = path.relative_to(REPO).parts
    if parts[0] == "src":
        inside = parts[2:]
        return inside[0] if len(inside) > 1 else None
    if parts[0] == "tests" and len(parts) > 2:
        folder = TEST_HOMES.get(parts[1], parts[1])
        return folder if folder in PACKAGES else None
    return None


def _private_package(target: str) -> str | None:
    """The package ``target`` is a private module of (``gamut_eval.judge._store`` ->
    ``judge``), or None for a face or a public module."""
    parts = target.split(".")
    if len(parts) < 3 or parts[0] != PACKAGE or parts[1] not in PACKAGES:
        return None
    return parts[1] if any(part.startswith("_") for part in parts[2:]) else None


def boundary_crossings(source: str, home: str | None, name: str) -> list[str]:
    """Imports in ``source`` (the file ``name``, whose insides are ``home``'s) of another
    package's private modules: every import counts, at module level, in functions and
    under ``TYPE_CHECKING``."""
    tree = ast.parse(source, name)
    found = []
    for node in sorted(ast.walk(tree), key=lambda node: getattr(node, "lineno", 0)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            targets = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            package = _private_package(target)
            if package is not None and package != home:
                found.append(f"{name}:{node.lineno} imports {target}")
                break
    return found


def _checked_files() -> list[Path]:
    return sorted(
        path
        for folder in ("src", "tests", "bench", "scripts")
        for path in (REPO / folder).rglob("*.py")
    )


def test_code_outside_a_package_uses_only_its_face() -> None:
    crossings = [
        line
        for path in _checked_files()
        for line in boundary_crossings(
            path.read_text(encoding="utf-8"), _home(path), str(path.relative_to(REPO))
        )
    ]
    assert not crossings, (
        "imports of another package's private modules (import from its __init__, and "
        "export the name there):\n  " + "\n  ".join(crossings)
    )


@pytest.mark.parametrize("package", PACKAGES)
def test_a_face_exports_only_its_own_package(package: str) -> None:
    path = MODULES[f"{PACKAGE}.{package}"]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    foreign = [
        f"line {node.lineno}: {node.module}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and node.module
        and node.module.startswith(f"{PACKAGE}.")
        and not node.module.startswith(f"{PACKAGE}.{package}")
        and node.module.split(".")[1] in PACKAGES
    ]
    assert not foreign, f"{package}'s face re-exports other packages' names: {foreign}"


def test_the_boundary_rule_sees_crossings() -> None:
    source = (
        "from gamut_eval.judge import JudgeSettings\n"
        "def f():\n    from gamut_eval.judge._store import VerdictStore\n"
        "import gamut_eval.cli._terminal as progress\n"
        "from gamut_eval.rubric import _model\n"
    )
    assert boundary_crossings(source, None, "x.py") == [
        "x.py:3 imports gamut_eval.judge._store",
        "x.py:4 imports gamut_eval.cli._terminal",
        "x.py:5 imports gamut_eval.rubric._model",
    ]
    assert boundary_crossings(source, "judge", "x.py") == [
        "x.py:4 imports gamut_eval.cli._terminal",
        "x.py:5 imports gamut_eval.rubric._model",
    ]
    assert _private_package(f"{PACKAGE}.judge._store") == "judge"
    assert _private_package(f"{PACKAGE}.judge.sub._module") == "judge"
    assert _private_package(f"{PACKAGE}.judge") is None
    assert _private_package(f"{PACKAGE}._tables") is None  # the root package's own module
    assert _home(REPO / "src" / PACKAGE / "judge" / "_pass.py") == "judge"
    assert _home(REPO / "tests" / "scale" / "test_x.py") == "judge"
    assert _home(REPO / "tests" / "real" / "test_x.py") is None
    assert _home(REPO / "bench" / "bench_x.py") is None


@pytest.mark.parametrize("module", sorted(LIGHT_MODULES))
def test_cli_modules_import_heavy_packages_lazily(module: str) -> None:
    hits = _imports_named(module, LIGHT_MODULES[module])
    assert not hits, f"{module} imports at module level: " + ", ".join(
        f"{name} (line {line})" for name, line in hits
    )


# -- library messages name settings, the command line names options -----------------------

OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
OPTION_NAME = re.compile(r"--[a-z][a-z0-9-]*=?")
"""A string that is only an option's name declares an option (the fake server's argparse,
a settings field's ``cli`` metadata): it is not a message."""
COMMAND_LINE = re.compile(r"`(?:gamut|inspect) [^`]*`")
"""A whole command line in backticks says which command to run, options and all."""
MESSAGES_NAMING_OPTIONS = {}
"""Modules (under ``src/gamut_eval``) left to convert, with what is left in them."""


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the string constants that stand alone as statements (docstrings, and the
    attribute docstrings under fields)."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }


def options_named(source: str, name: str) -> list[str]:
    """``name:line: option`` for each option a string of ``source`` names (docstrings,
    option names alone and backticked command lines aside)."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
            continue
        if id(node) in docs or OPTION_NAME.fullmatch(node.value):
            continue
        for match in OPTION.finditer(COMMAND_LINE.sub("", node.value)):
            found.append((node.lineno, node.col_offset, match.start(), match.group()))
    return [f"{name}:{line}: {option}" for line, _, _, option in sorted(found)]


def library_hits(find: Callable[[str, str], list[str]], skip: Iterable[str]) -> list[str]:
    """What ``find(source, name)`` reports in each library module (named by its path under
    ``src/gamut_eval``) but those in ``skip``, which must each exist."""
    library = ROOT / PACKAGE
    skipped = set(skip)
    for module in skipped:
        assert (library / module).is_file(), f"{module} is listed but does not exist"
    return [
        hit
        for path in sorted(library.rglob("*.py"))
        if path.relative_to(library).as_posix() not in skipped
        for hit in find(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))
    ]


def test_library_messages_name_settings_not_options() -> None:
    cli = [p.relative_to(ROOT / PACKAGE).as_posix() for p in (ROOT / PACKAGE / "cli").glob("*.py")]
    named = library_hits(options_named, [*cli, *MESSAGES_NAMING_OPTIONS])
    assert not named, (
        "library strings naming command-line options (name the setting instead, and pass "
        "setting=... to the error: the command line adds the option):\n  " + "\n  ".join(named)
    )


def test_the_option_rule_sees_options_in_messages_only() -> None:
    source = (
        '"""Run ``gamut run --out DIR``."""\n'
        "def f(x):\n"
        '    """--overwrite in a docstring is fine."""\n'
        '    parser.add_argument("--port")\n'
        '    raise InputError(f"{x}: pass --overwrite")\n'
        '    raise InputError("run `gamut build draft --input F` first")\n'
        '    raise InputError("--db " + x + ": no dialect; see `gamut annotate` and --role")\n'
    )
    assert options_named(source, "x.py") == [
        "x.py:5: --overwrite",
        "x.py:7: --db",
        "x.py:7: --role",
    ]


# -- verdicts only through the enum -------------------------------------------------------

VERDICT_MODULE = "scoring/_verdict.py"
HOMONYMS = {
    "rubric/_load.py": "pydantic's error type 'missing' (a required field is absent)",
    "construct/_refine.py": "the 'missing' field of the refine reply (what an item lacks)",
}
"""Modules where a verdict's spelling means something else, and what."""
VERDICTS_SPELLED_OUT = {}
"""Modules left to convert, with what is left in them."""


def verdict_values() -> set[str]:
    """The values of ``Verdict``'s members, read from its module."""
    tree = ast.parse((ROOT / PACKAGE / VERDICT_MODULE).read_text(encoding="utf-8"))
    enum = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == "Verdict")
    return {
        node.value.value
        for node in enum.body
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }


def verdicts_spelled(source: str, name: str, values: set[str]) -> list[str]:
    """``name:line: value`` for each string of ``source`` that is exactly a verdict value."""
    return sorted(
        f"{name}:{node.lineno}: {node.value}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in values
    )


def test_verdicts_are_named_through_the_enum() -> None:
    values = verdict_values()
    assert values == {"meets", "partially_meets", "missing", "contradicts"}
    spelled = library_hits(
        lambda source, name: verdicts_spelled(source, name, values),
        [VERDICT_MODULE, *HOMONYMS, *VERDICTS_SPELLED_OUT],
    )
    assert not spelled, (
        "verdicts spelled as strings (use Verdict.X, or Verdict.X.value where a str is "
        "needed):\n  " + "\n  ".join(spelled)
    )


def test_the_verdict_rule_sees_spelled_verdicts() -> None:
    source = 'x = "meets"\ny = Verdict.MEETS\nz = f"{y} meets"\nw = ("missing", "omits")\n'
    assert verdicts_spelled(source, "x.py", {"meets", "missing"}) == [
        "x.py:1: meets",
        "x.py:4: missing",
    ]
