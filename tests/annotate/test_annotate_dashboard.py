"""The dashboard's image table comes a page at a time, filtered by image status."""

from __future__ import annotations

import re
from typing import Any

from annotate_helpers import Workspace, candidate_row, write_jsonl

from gamut_eval.annotate import Database, import_files
from gamut_eval.annotate._pages import PAGE_SIZE


def _keys(page: str) -> list[str]:
    table = page[page.index('id="images"') :]
    table = table[: table.index("</table>")]
    return re.findall(r"<tr>\s*<td>([^<]+)</td>", table)


def test_the_image_table_is_paginated_and_keeps_the_filter(
    client: Any, loaded: Database, workspace: Workspace
) -> None:
    # 3 images from the fixture (img-dish, img-plant, img-clock), then 60 more.
    rows = [
        {**candidate_row(f"c-many-{n}", "dish", f"Question {n}?"), "image_id": f"img-{n:03d}"}
        for n in range(60)
    ]
    import_files(loaded, [write_jsonl(workspace.root / "many.jsonl", rows)])
    assert PAGE_SIZE == 50
    c = client("ann1")
    first = c.get("/").text
    assert _keys(first) == ["img-dish", "img-plant", "img-clock"] + [
        f"img-{n:03d}" for n in range(47)
    ]
    assert "images 1 to 50 of 63" in first
    assert "page 1 of 2" in first
    assert 'href="/?image_status=all&amp;page=2" rel="next"' in first
    assert 'rel="prev"' not in first
    second = c.get("/?page=2").text
    assert _keys(second) == [f"img-{n:03d}" for n in range(47, 60)]
    assert "images 51 to 63 of 63" in second
    assert 'href="/?image_status=all&amp;page=1" rel="prev"' in second
    assert 'rel="next"' not in second
    # Out of range or not a number: the nearest page, never an error.
    assert _keys(c.get("/?page=99").text) == _keys(second)
    assert _keys(c.get("/?page=abc").text) == _keys(first)
    # A filter counts only its images and its page links keep it.
    for n in range(2):  # two accepts move c-dish-1's image (img-dish) to "accepted"
        name = f"ann{n + 1}"
        assert client(name).post("/questions/1/review", {"decision": "accept"}).status_code == 303
    accepted = c.get("/?image_status=accepted").text
    assert _keys(accepted) == ["img-dish"]
    assert "images 1 to 1 of 1 (accepted)" in accepted
    in_review = c.get("/?image_status=in_review&page=2").text
    assert _keys(in_review) == [f"img-{n:03d}" for n in range(48, 60)]
    assert 'href="/?image_status=in_review&amp;page=1" rel="prev"' in in_review
    assert "images 51 to 62 of 62 (in review)" in in_review
