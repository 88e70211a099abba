"""Chart text: width estimates, wrapping that never cuts a label, escaping, legends."""

from __future__ import annotations

import re

import pytest

from gamut_eval.analysis._svg import Interval, interval_chart, legend, lines_text, text_width, wrap


def test_width_estimate_by_hand() -> None:
    # "il" narrow 0.36 each, "a" 0.64, "W" 0.95 of the font size
    assert text_width("il", 10) == pytest.approx(7.2)
    assert text_width("aW", 10) == pytest.approx(15.9)
    assert text_width("aW", 10, bold=True) == pytest.approx(15.9 * 1.08)


def test_wrap_breaks_after_slashes_and_dashes_and_keeps_every_character() -> None:
    label = "vllm/Qwen/Qwen2.5-VL-72B-Instruct"
    lines = wrap(label, 80, 12)
    assert len(lines) > 1
    assert "".join(lines) == label  # nothing cut, nothing added
    assert all(text_width(line, 12) <= 80 for line in lines)
    assert lines[0] == "vllm/Qwen/"  # 10 characters fit in 80 px, the next piece does not


def test_a_word_longer_than_a_line_is_split() -> None:
    lines = wrap("x" * 40, 50, 10)  # 0.64 * 10 = 6.4 px each: 7 per line
    assert [len(line) for line in lines] == [7, 7, 7, 7, 7, 5]


def test_short_labels_stay_on_one_line() -> None:
    assert wrap("openai/gpt-a", 190, 12) == ["openai/gpt-a"]
    assert wrap("", 190, 12) == [""]


def test_lines_are_escaped_tspans_with_the_full_text_as_tooltip() -> None:
    markup = lines_text(10, 20, ["<b>", "&x"], 12, "label", tip="<b>&x")
    assert "<b>" not in markup
    assert markup.count("<tspan") == 2
    assert "<title>&lt;b&gt;&amp;x</title>" in markup
    assert 'dy="15.0"' in markup  # the second line one line height (1.25 x 12) lower


def test_legend_wraps_into_rows_within_its_width() -> None:
    items = [("#000000", "a fairly long legend label")] * 3
    markup, height = legend(items, 0, 10, 250)
    ys = sorted(
        {float(y) for y in re.findall(r'<text class="tick" x="[\d.]+" y="([\d.]+)"', markup)}
    )
    assert ys == [10.0, 26.0, 42.0]  # one item per 16 px row: two do not fit in 250 px
    assert height == 3 * 16 + 6


def test_interval_chart_wraps_a_long_model_id_instead_of_cutting_it() -> None:
    long_id = "provider/" + "very-long-model-name-" * 4
    svg = interval_chart([Interval(long_id, 10.0, 5.0, 15.0)], "Gamut score", "score (x100)")
    label = re.search(r'<text class="label"[^>]*><title>[^<]*</title>(.*?)</text>', svg)
    assert label is not None
    lines = re.findall(r"<tspan[^>]*>([^<]*)</tspan>", label.group(1))
    assert len(lines) > 1
    assert "".join(lines) == long_id.rstrip()
    assert "…" not in svg
    assert long_id in svg  # whole, in the tooltip and the description
    assert "<desc>score (x100). " in svg
