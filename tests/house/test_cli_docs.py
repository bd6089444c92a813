"""Docs that cannot drift: every command of the CLI has help text, every option and
argument is explained, and every command appears in the README as ``receipts <command>``."""

from __future__ import annotations

import re
from collections.abc import Iterator

import click
import pytest

from pipelines.cli import main
from tests.conftest import REPO, cli


def walk(group: click.Group, prefix: str = "receipts") -> Iterator[tuple[str, click.Command]]:
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        path = f"{prefix} {name}"
        yield path, command
        if isinstance(command, click.Group):
            yield from walk(command, path)


COMMANDS = dict(walk(main))


def test_the_walk_finds_nested_commands() -> None:
    assert "receipts manifest check" in COMMANDS
    assert {"receipts drift", "receipts diff", "receipts as-of", "receipts verify-quote"} <= set(
        COMMANDS
    )


@pytest.mark.parametrize("path", sorted(COMMANDS))
def test_every_command_has_help_text(path: str) -> None:
    command = COMMANDS[path]
    assert (command.help or "").strip(), f"{path} has no help text"
    result = cli(*path.split()[1:], "--help")
    assert result.exit_code == 0
    assert (command.help or "").split("\n")[0].strip()[:40] in " ".join(result.stdout.split())


@pytest.mark.parametrize("path", sorted(COMMANDS))
def test_every_option_is_explained(path: str) -> None:
    for param in COMMANDS[path].params:
        if isinstance(param, click.Option) and param.name not in ("help", "version"):
            assert (param.help or "").strip(), f"{path} {param.opts[0]} has no help text"


@pytest.mark.parametrize("path", sorted(COMMANDS))
def test_every_command_is_in_the_readme(path: str) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    # the whole command name: `receipts verify` is not found inside `receipts verify-quote`
    assert re.search(rf"{re.escape(path)}(?![\w-])", readme), f"README.md lacks `{path}`"
