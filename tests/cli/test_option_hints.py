"""The command line adds the options of the settings a library error names."""

from __future__ import annotations

import socket
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from gamut_eval.cli import cli
from gamut_eval.cli._common import option_of, with_options
from gamut_eval.errors import InputError


@click.group()
def group() -> None:
    pass


@group.command()
@click.option("--out", "out_dir")
@click.option("--overwrite", is_flag=True)
@click.option("--probe/--no-probe", default=True)
@click.option("--cache/--no-cache", default=False)
def sub(**options: object) -> None:
    pass


def test_the_option_of_a_setting_is_found_by_the_keyword_it_fills() -> None:
    assert option_of(sub, "out_dir") == "--out"
    assert option_of(sub, "overwrite") == "--overwrite"
    assert option_of(group, "overwrite") == "--overwrite"  # a group looks in its commands
    assert option_of(sub, "out") is None  # the keyword, not the option's spelling
    assert option_of(sub, "nothing") is None


def test_an_on_off_pair_names_the_switch_away_from_its_default() -> None:
    assert option_of(sub, "probe") == "--no-probe"  # on by default: the fix turns it off
    assert option_of(sub, "cache") == "--cache"


def test_the_options_follow_the_message_once_each() -> None:
    assert with_options("bad", (), sub) == "bad"
    assert with_options("bad", ("overwrite",), None) == "bad"
    assert with_options("bad", ("overwrite",), sub) == "bad (option --overwrite)"
    assert with_options("bad", ("out_dir", "probe"), sub) == "bad (options --out, --no-probe)"
    assert with_options("bad", ("nothing", "out_dir", "out_dir"), sub) == "bad (option --out)"
    assert with_options("see --out", ("out_dir",), sub) == "see --out"  # said already
    assert with_options("see --output", ("out_dir",), sub) == "see --output (option --out)"


@pytest.mark.parametrize(
    ("argv", "said", "options"),
    [
        (["view", "{tmp}", "--port", "{port}"], "port {port}: cannot listen", "(option --port)"),
        (
            ["build", "import", "{tmp}/t.jsonl", "--workdir", "{tmp}/w", "--map", "question"],
            "mapping 'question': write FIELD=COLUMN",
            "(option --map)",
        ),
        (
            ["run", "--judge", "gamut/offline", "--out", "{tmp}/r"],
            "give the models to generate answers with (models), or existing answers "
            "(responses), not both",
            "(options --model, --responses)",
        ),
    ],
)
def test_a_user_sees_the_option_the_library_error_stands_for(
    tmp_path: Path, argv: list[str], said: str, options: str
) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        (tmp_path / "report.html").write_text("<p>report</p>")
        args = [a.format(tmp=tmp_path, port=port) for a in argv]
        result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.output
    message = " ".join(result.stderr.split())
    assert message.startswith("error: ")
    assert said.format(port=port) in message
    assert message.endswith(options), message


def test_the_library_error_itself_names_only_the_setting() -> None:
    from gamut_eval.construct import parse_mapping

    with pytest.raises(InputError) as caught:
        parse_mapping(["question"])
    assert "--map" not in str(caught.value)
    assert caught.value.settings == ("mapping",)
    assert caught.value.setting == "mapping"
