"""The one price table (``--prices``) and the one token-usage record: one format, read by
one loader, for a build, a run and a dry run; a plain model map is still read (as USD),
and a build's usage written under its earlier field names is still read."""

from __future__ import annotations

from pathlib import Path

import pytest

from gamut_eval._usage import Usage, priced
from gamut_eval.errors import ValidationError
from gamut_eval.prices import ModelPrice, PriceTable, load_prices

TABLE = """\
currency: USD
models:
  anthropic/claude-sonnet-4-5: {input: 3.0, output: 15.0, cached_input: 0.3}
  gpt-4.1-mini: {input: 0.4, output: 1.6, batch_input: 0.2, batch_output: 0.8}
"""
PLAIN = """\
anthropic/claude-sonnet-4-5: {input: 3.0, output: 15.0, cached_input: 0.3}
gpt-4.1-mini: {input: 0.4, output: 1.6, batch_input: 0.2, batch_output: 0.8}
"""


def test_a_plain_model_map_is_read_as_the_models_of_a_usd_table(tmp_path: Path) -> None:
    table, plain = tmp_path / "table.yaml", tmp_path / "plain.yaml"
    table.write_text(TABLE)
    plain.write_text(PLAIN)
    assert load_prices(plain) == load_prices(table)
    assert load_prices(plain).currency == "USD"
    assert load_prices(None) == PriceTable(models={})


def test_an_entry_is_found_by_full_name_then_by_a_shorter_tail(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text('{"currency": "EUR", "models": {"gpt-4.1-mini": {"input": 1, "output": 2}}}')
    table = load_prices(path)
    assert table.currency == "EUR"
    assert table.lookup("openai/gpt-4.1-mini") == ("gpt-4.1-mini", ModelPrice(input=1, output=2))
    assert table.lookup("openai/gpt-5") is None


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("models:\n  m: {input: -1, output: 2}\n", "models.m.input"),
        ("m: {input: -1, output: 2}\n", "m.input"),  # where it is in the file as written
    ],
)
def test_a_bad_price_names_the_file_field_and_value(tmp_path: Path, text: str, where: str) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text(text)
    with pytest.raises(ValidationError) as info:
        load_prices(path)
    assert str(info.value).startswith(f"{path}:{where}: ")
    assert "(found: -1)" in str(info.value)


def test_an_unknown_field_is_named_with_its_file(tmp_path: Path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text("currency: USD\nmodels:\n  m: {input: 1, output: 2, extra: 3}\n")
    with pytest.raises(ValidationError, match=r"prices.yaml:models.m.extra: unknown field"):
        load_prices(path)


def test_a_table_in_another_currency_is_refused_where_only_usd_is_taken(tmp_path: Path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text("currency: EUR\nmodels:\n  m: {input: 1, output: 2}\n")
    assert load_prices(path).currency == "EUR"
    with pytest.raises(ValidationError) as info:
        load_prices(path, currency="USD")
    assert str(info.value) == (
        f'{path}:currency: must be USD here: costs are not converted [currency] (found: "EUR")'
    )


def test_usage_reads_the_field_names_a_build_wrote_before() -> None:
    written = {
        "calls": 2,
        "input_tokens": 100,
        "output_tokens": 20,
        "cached_tokens": 40,
        "reported_cost_usd": 0.5,
    }
    usage = Usage.model_validate(written)
    assert usage == Usage(calls=2, input=100, output=20, cached_input=40, cost=0.5)
    assert Usage.model_validate(usage.model_dump()) == usage


def test_usage_adds_up_and_keeps_a_provider_s_own_cost() -> None:
    table = PriceTable.model_validate({"m": {"input": 1.0, "output": 10.0}})
    one = Usage(calls=1, input=1_000_000, output=100_000)
    assert one + one == Usage(calls=2, input=2_000_000, output=200_000)
    assert priced("m", one, table).cost == pytest.approx(2.0)
    assert priced("m", one.model_copy(update={"cost": 0.25}), table).cost == 0.25
    assert Usage(input=1) + Usage(input=2) == Usage(input=3)  # calls not counted: null


def test_cache_writes_are_priced_at_their_own_rate_and_default_to_the_input_price() -> None:
    table = PriceTable.model_validate(
        {
            "anthropic/claude-sonnet-4-5": {
                "input": 3.0,
                "cached_input": 0.3,
                "cache_write_input": 3.75,
                "output": 15.0,
            },
            "plain": {"input": 3.0, "cached_input": 0.3, "output": 15.0},
        }
    )
    used = Usage(input=1_000_000, cached_input=600_000, cache_write_input=100_000, output=10_000)
    # 300,000 fresh at 3.00, 600,000 read at 0.30, 100,000 written at 3.75, 10,000 out at 15
    expected = (300_000 * 3.0 + 600_000 * 0.3 + 100_000 * 3.75 + 10_000 * 15.0) / 1e6
    assert priced("anthropic/claude-sonnet-4-5", used, table).cost == pytest.approx(expected)
    assert expected == pytest.approx(1.605)
    written_as_input = (400_000 * 3.0 + 600_000 * 0.3 + 10_000 * 15.0) / 1e6
    assert priced("plain", used, table).cost == pytest.approx(written_as_input)
    assert used + used == Usage(
        input=2_000_000, cached_input=1_200_000, cache_write_input=200_000, output=20_000
    )


def test_answer_usage_counts_inspects_cache_writes_in_the_input_and_apart() -> None:
    from gamut_eval._usage import answer_usage
    from gamut_eval.responses import ResponseRow

    usage = {"input_tokens": 10, "input_tokens_cache_read": 100, "input_tokens_cache_write": 50}
    row = ResponseRow.model_validate(
        {
            "question_id": "q",
            "model": "anthropic/claude-sonnet-4-5",
            "setting": "multimodal",
            "response": "r",
            "usage": {"anthropic/claude-sonnet-4-5": usage | {"output_tokens": 7}},
        }
    )
    assert answer_usage([row]) == {
        "anthropic/claude-sonnet-4-5": Usage(
            input=160, cached_input=100, cache_write_input=50, output=7
        )
    }
