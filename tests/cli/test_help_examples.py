"""Every command's ``--help`` ends with an example of its use, and every example is a
command line the CLI parses (its options exist, its arguments are complete)."""

from __future__ import annotations

import shlex

import click
import pytest

from pipelines.cli import main
from tests.conftest import cli
from tests.house.test_cli_docs import COMMANDS


def examples(help_text: str) -> list[str]:
    """The command lines under the ``Example:`` / ``Examples:`` heading of a help text."""
    lines = help_text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.strip() in ("Example:", "Examples:")]
    found = []
    for start in starts:
        for line in lines[start + 1 :]:
            if not line.strip().startswith("receipts "):
                break
            found.append(line.strip())
    return found


def parse(example: str) -> click.Context:
    """Parse an example as the CLI would, without running it (up to a pipe or a redirect):
    global options given before the command, then the command's own line."""
    lexer = shlex.shlex(example, posix=True, punctuation_chars="|>")
    lexer.whitespace_split = True
    tokens = list(lexer)
    ends = [i for i, token in enumerate(tokens) if token in ("|", ">")]
    words = tokens[: ends[0] if ends else None]
    assert words[0] == "receipts"
    words = words[1:]
    options = {opt: p for p in main.params if isinstance(p, click.Option) for opt in p.opts}
    while words and words[0].startswith("-"):
        option = options[words[0]]  # a KeyError: no such global option
        words = words[1 if option.is_flag or option.count else 2 :]
    command: click.Command = main
    ctx = click.Context(main, info_name="receipts")
    path = ["receipts"]
    while isinstance(command, click.Group):
        sub = command.get_command(ctx, words[0])
        assert sub is not None, f"{example}: no command {words[0]!r}"
        path.append(words[0])
        command, words = sub, words[1:]
    return command.make_context(" ".join(path), list(words), parent=ctx)


@pytest.mark.parametrize("path", sorted(COMMANDS))
def test_every_command_help_has_an_example(path: str) -> None:
    result = cli(*path.split()[1:], "--help")
    assert result.exit_code == 0
    shown = examples(result.stdout)
    assert shown, f"`{path} --help` has no example"
    assert any(line.startswith(path) or f" {path.split()[-1]} " in line for line in shown), shown


@pytest.mark.parametrize("path", sorted(COMMANDS))
def test_every_example_is_a_command_line_the_cli_parses(path: str) -> None:
    for example in examples(cli(*path.split()[1:], "--help").stdout):
        parse(example)  # raises click's UsageError for an unknown option or missing argument
