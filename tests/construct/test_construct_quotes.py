"""Quote matching on a real-looking page: boilerplate, scripts, entities, Unicode punctuation.

``pages/bibimbap.html`` is shaped like an encyclopedia article as served: CRLF line ends,
an omitted ``</head>``, navigation, inline and JSON-LD scripts, a stylesheet, a hidden
short description, citation markers (``[1]``, ``[citation needed]``), non-breaking and
thin spaces, curly quotes, en and em dashes, soft hyphens, a zero-width space and runs of
whitespace across a ``<br>``. The snippets are written as search APIs and models hand them
back: straight quotes, hyphens for dashes, no markers, entities left escaped.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gamut_eval.construct._sources import FetchedPage, Fetcher, html_to_text, match_snippet

PAGE = Path(__file__).parent / "pages" / "bibimbap.html"


@pytest.fixture
async def page() -> FetchedPage:
    fetcher = Fetcher()
    try:
        return await fetcher.fetch(str(PAGE))
    finally:
        await fetcher.aclose()


VERBATIM = {
    "citation markers between sentences, straight for curly quotes": (
        '"mixed rice") is a Korean rice dish. The term "bibim" means mixing various '
        "ingredients, while the 'bap' noun refers to rice."
    ),
    "nbsp, entities, whitespace runs across a line break, a hyphen for an em dash, an "
    "accent dropped": (
        "Bibimbap is served as a bowl of warm white rice topped with namul (sauteed and "
        "seasoned vegetables) or kimchi and gochujang (chili pepper paste), soy sauce, or "
        "doenjang - a fermented soybean paste."
    ),
    "accented letters as the page has them": "namul (sautéed and seasoned vegetables)",
    "an ellipsis where the API cut the text": (
        "... sliced meat (usually beef) are common additions. The hot dish is stirred..."
    ),
    "a definition list's term and its description": (
        "Dolsot bibimbap: served in a very hot stone bowl (dolsot), in which the rice forms "
        "a golden crust."
    ),
    "a figure caption, then the next paragraph": (
        "Jeonju-style bibimbap Jeonju, the capital of North Jeolla Province"
    ),
    "soft hyphens in the page, an en dash between thin spaces": (
        "it was recorded in the 1890s-1900s in the cookbook Siuijeonseo. Regional variants "
        "include jinju bibimbap and tongyeong bibimbap."
    ),
    "curly apostrophes in the page, a zero-width space after a word": (
        "In 2011 it was listed at number 40 on the World's 50 most delicious foods readers' "
        "poll compiled by CNN Travel."
    ),
    "entities left escaped by the search API": (
        "The term &ldquo;bibim&rdquo; means mixing various ingredients"
    ),
    "a citation marker copied into the snippet": "is a Korean rice dish.[1] The term",
}


@pytest.mark.parametrize("name", list(VERBATIM))
async def test_snippets_are_found_verbatim_on_a_real_looking_page(
    name: str, page: FetchedPage
) -> None:
    status, share, detail = match_snippet(VERBATIM[name], page)
    assert (status, share, detail) == ("verbatim", 1.0, None), name


async def test_only_visible_text_is_read(page: FetchedPage) -> None:
    text = page.text
    # the body is read although </head> is omitted; scripts, styles and the title are not
    assert "Bibimbap is served as a bowl" in text
    for hidden in ("window.RLQ", "font-family", "@type", "wgBackendResponseTime", "Encyclopedia"):
        assert hidden not in text
    # blocks on their own lines, whitespace runs collapsed, no CR left
    assert "\r" not in text
    assert "  " not in text
    assert "Dolsot bibimbap\nServed in a very hot stone bowl" in text


@pytest.mark.parametrize(
    "snippet",
    [
        "mw.config.set wgBackendResponseTime 120",  # only in a script
        ".mw-body font-family sans-serif",  # only in a stylesheet
        "Bibimbap is a Japanese noodle soup served cold with buckwheat.",  # not there
    ],
)
async def test_text_that_is_not_visible_on_the_page_is_not_found(
    snippet: str, page: FetchedPage
) -> None:
    status, share, detail = match_snippet(snippet, page)
    assert status == "not_found"
    assert share < 0.8
    assert detail


def test_adjacent_inline_elements_keep_their_words_whole() -> None:
    # inline markup inside a word must not split it; block-level neighbours must not merge
    html = "<p>Bi<b>bim</b>bap</p><ul><li>rice</li><li>egg</li></ul><dl><dt>a</dt><dd>b</dd></dl>"
    assert html_to_text(html).split("\n") == ["Bibimbap", "rice", "egg", "a", "b"]
