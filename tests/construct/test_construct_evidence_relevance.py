"""Evidence worth citing: the local search over pages shaped like the web.

``evidence_pages/`` holds a page for each question of the bundled sample, carrying that
question's evidence inside one of three site layouts (an encyclopedia, a blog, a museum),
each with a cookie banner, menus, a sidebar or related links, and a footer whose wording
shares the questions' words ("what kind of", "how things are made", "visitors get to the
top", "coffee", "towers", "plants"); five unrelated pages in the same layouts (a water
tower, a power plant, a layer cake, a bicycle chain, opening hours) are mixed in.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from gamut_eval._extras import MissingExtra
from gamut_eval.construct import LocalSearch
from gamut_eval.construct._search import _document, fts_query
from gamut_eval.construct._sources import FetchedPage, html_to_text, match_snippet
from gamut_eval.data import sample_dir

PAGES = Path(__file__).parent / "evidence_pages"
QUESTIONS: list[dict[str, Any]] = [
    json.loads(line)
    for line in (sample_dir() / "dataset.jsonl").read_text(encoding="utf-8").splitlines()
    if line.strip()
]
UNRELATED = ("bicycle-care", "layer-cake", "opening-hours", "power-plants", "water-towers")
BOILERPLATE = (
    # cookie banners
    "We use cookies to remember how you like to read",
    "Accept all cookies",
    "This site uses cookies so we can see how visitors get to the top",
    "Cookie settings",
    "store cookies on your device to measure how many visitors",
    # menus, breadcrumbs, sidebars, related links
    "Main page",
    "Food and drink: what goes into every dish",
    "Towers and landmarks of the world",
    "How things are made and how they work",
    "Coffee corner: every kind of coffee explained",
    "Travel: towers, bridges and old towns",
    "Exhibits: rockets, clocks, coins and lights",
    "Tickets and opening hours",
    "In other languages",
    "Printable version",
    "You might also like",
    "Why do old towers lean? A walk through Italy",
    "Share this post",
    "Posted by Mara",
    # footers and sign-ups
    "This page was last edited",
    "Contact the visitors' desk",
    "Made with love and strong coffee in Lisbon",
    "Subscribe to our newsletter",
    "Get the museum newsletter",
    "Open daily 10:00 to 18:00",
    "registered charity",
)


def _page(record: dict[str, Any]) -> Path:
    return PAGES / f"{record['id'].removeprefix('sample-')}.html"


def test_the_corpus_has_a_page_per_sample_question_and_unrelated_pages() -> None:
    assert len(QUESTIONS) == 12
    names = {p.stem for p in PAGES.glob("*.html")}
    assert names == {_page(r).stem for r in QUESTIONS} | set(UNRELATED)
    for page in PAGES.glob("*.html"):  # the boilerplate is there to be left out
        raw = page.read_text(encoding="utf-8")
        assert "cookie" in raw.lower()
        assert "<footer" in raw or 'class="footer"' in raw


@pytest.mark.parametrize("with_entity", [False, True], ids=["question", "entity-and-question"])
async def test_the_questions_own_page_is_in_the_top_three(with_entity: bool) -> None:
    """The question alone (an image whose subject is unknown) and the entity with the
    question (the evidence stage's first query without a model)."""
    search = LocalSearch(PAGES)
    missed = []
    for record in QUESTIONS:
        query = f"{record['entity']} {record['question']}" if with_entity else record["question"]
        top = await search.search(query, 3)
        if _page(record).resolve().as_uri() not in {hit.source for hit in top}:
            missed.append((record["id"], [(hit.source, hit.text[:60]) for hit in top]))
    await search.aclose()
    assert len(missed) <= 1, missed


def test_no_banner_menu_or_footer_text_becomes_a_passage() -> None:
    shown: set[str] = set()
    for page in sorted(PAGES.glob("*.html")):
        visible = html_to_text(page.read_text(encoding="utf-8"))  # what a reader sees
        _, found = _document(page)
        assert found, page.name
        for text in BOILERPLATE:
            if text in visible:
                shown.add(text)
                assert all(text not in passage for _, passage in found), (page.name, text)
    assert shown == set(BOILERPLATE)  # every string is on a page, and left out of it


def test_the_main_text_keeps_every_evidence_snippet_of_its_page() -> None:
    for record in QUESTIONS:
        title, found = _document(_page(record))
        assert title == record["entity"]  # the page's heading, without the site's name
        text = FetchedPage("\n".join(passage for _, passage in found))
        for snippet in record["meta_rubric"]["evidence"]:
            assert match_snippet(snippet["text"], text)[0] == "verbatim", snippet["id"]


async def test_section_headings_name_the_passages_below_them() -> None:
    search = LocalSearch(PAGES)
    hits = await search.search("crema foam carbon dioxide", 1)
    await search.aclose()
    assert hits[0].title == "Espresso: Crema"
    assert hits[0].text.startswith("Crema is the reddish-brown foam on top of a shot")


async def test_a_drink_question_never_cites_the_eiffel_tower(tmp_path: Path) -> None:
    """Common words ("is", "this", "how", "made") match nothing: the Eiffel Tower page says
    the tower "is 330 metres tall" and "is made of" iron, and is never a hit."""
    question = "What is this drink and how is it made?"
    assert fts_query(question) == '"drink"'
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    shutil.copy(PAGES / "eiffel-tower.html", corpus)
    tower = (corpus / "eiffel-tower.html").resolve().as_uri()
    search = LocalSearch(corpus)
    assert await search.search(question, 5) == []  # nothing about a drink: no evidence
    tall = await search.search("How tall is the tower?", 1)
    assert tall[0].text.startswith("The tower is 330 metres tall")  # the passage is there
    await search.aclose()

    shutil.copy(PAGES / "espresso.html", corpus)
    search = LocalSearch(corpus)
    hits = await search.search(question, 5)
    with_entity = await search.search(f"Espresso {question}", 5)
    await search.aclose()
    assert hits
    assert hits[0].text.startswith("Espresso is the base of many coffee drinks")
    assert all(hit.source != tower for hit in [*hits, *with_entity])
    assert all("330 metres" not in hit.text for hit in [*hits, *with_entity])


def test_html_without_trafilatura_is_refused_before_indexing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "trafilatura", None)  # not installed
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "notes.md").write_text("# Notes\n\nCrema is the foam on an espresso.\n")
    index = tmp_path / "index" / "local.sqlite"
    LocalSearch(corpus, index)  # plain text and Markdown need nothing more
    index.unlink()
    shutil.copy(PAGES / "espresso.html", corpus)
    with pytest.raises(MissingExtra, match=r"pip install 'gamut-eval\[inspect\]'"):
        LocalSearch(corpus, index)
    assert not index.exists()


def test_headings_lists_tables_and_markup_characters_are_read_as_on_the_page(
    tmp_path: Path,
) -> None:
    page = tmp_path / "chart.html"
    page.write_text(
        "<html><head><title>Chart | Site</title></head><body><nav><a href='/'>Home</a></nav>"
        "<article><h1>Brewing chart</h1><h2>Ratios *by* weight</h2>"
        "<p>A ratio of 1:2 means 18 g in, 36 g out; 5*3 = 15 and a_b stays a_b [1] in"
        " <b>every</b> paragraph long enough to be the main text of the page.</p>"
        "<ul><li>Ristretto is shorter.</li><li>Lungo is longer.</li></ul>"
        "<table><tr><th>Drink</th><th>Grams out</th></tr><tr><td>espresso</td><td>36</td>"
        "</tr></table></article><footer>All rights reserved.</footer></body></html>",
        encoding="utf-8",
    )
    title, found = _document(page)
    assert title == "Brewing chart"  # the page's heading, not the <title> with the site
    assert found == [
        (
            "Ratios *by* weight",
            "A ratio of 1:2 means 18 g in, 36 g out; 5*3 = 15 and a_b stays a_b [1] in every"
            " paragraph long enough to be the main text of the page.",
        ),
        ("Ratios *by* weight", "Ristretto is shorter.; Lungo is longer."),
        ("Ratios *by* weight", "Drink | Grams out; espresso | 36"),
    ]
