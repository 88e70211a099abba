"""The report page's script: ES modules joined at build time into one classic script that
the page's CSP admits by hash."""

from __future__ import annotations

import base64
import hashlib

import pytest

from gamut_eval.analysis._html import CSP, CSS, MODULES, PAGE_JS, bundle_modules


def test_modules_are_joined_in_one_strict_scope_without_imports_or_exports() -> None:
    joined = bundle_modules([
        ("a.js", "export const x = 1;\nexport function f() {\n  return x;\n}\n"),
        ("b.js", 'import { f } from "./a.js";\n\nf();\n'),
    ])  # fmt: skip
    assert joined == (
        '(() => {\n"use strict";\n'
        "// a.js\nconst x = 1;\nfunction f() {\n  return x;\n}\n\n"
        "// b.js\nf();\n})();"
    )


def test_a_module_must_come_after_the_modules_it_imports() -> None:
    with pytest.raises(ValueError, match=r"b\.js imports a\.js, which is not joined before it"):
        bundle_modules([
            ("b.js", 'import { f } from "./a.js";\n'),
            ("a.js", "export function f() {}\n"),
        ])  # fmt: skip


def test_two_modules_may_not_declare_the_same_name() -> None:
    with pytest.raises(ValueError, match=r"b\.js and a\.js both declare f"):
        bundle_modules([("a.js", "function f() {}\n"), ("b.js", "const f = 2;\n")])


def test_an_import_the_join_cannot_read_is_refused() -> None:
    with pytest.raises(ValueError, match="only single-line imports"):
        bundle_modules([("a.js", 'import x from "./y.js";\n')])


def test_the_page_script_is_the_joined_modules_admitted_by_its_hash() -> None:
    names = [line[3:] for line in PAGE_JS.splitlines() if line.endswith(".js")]
    assert names == list(MODULES)
    assert not any(line.startswith(("import ", "export ")) for line in PAGE_JS.splitlines())
    digest = base64.b64encode(hashlib.sha256(PAGE_JS.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in CSP
    assert "</script" not in PAGE_JS.lower()
    assert "</style" not in CSS.lower()
