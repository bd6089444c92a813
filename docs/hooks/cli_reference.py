"""The command reference, generated from the click commands when the site is built.

``docs/cli.md`` holds one marker; this MkDocs hook replaces it with the ``--help`` of every
command, walked from ``pipelines.cli.main``, so the reference cannot drift from the code.
``tests/house/test_cli_docs.py`` calls ``reference()`` to check that every command is in it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import click

from pipelines.cli import main

MARKER = "<!-- receipts-cli-reference -->"
# The help is rendered at a fixed width, whatever the terminal the site is built on.
WIDTH = 100


def _context(command: click.Command, name: str, parent: click.Context | None) -> click.Context:
    settings = {**command.context_settings, "terminal_width": WIDTH, "max_content_width": WIDTH}
    return click.Context(command, info_name=name, parent=parent, **settings)


def commands(
    group: click.Group = main, ctx: click.Context | None = None
) -> Iterator[tuple[str, click.Command, click.Context]]:
    """Every visible command as (``receipts ...`` path, command, its context), the root first,
    each group before its subcommands, in the order ``--help`` lists them."""
    if ctx is None:
        ctx = _context(group, "receipts", None)
        yield "receipts", group, ctx
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        sub = _context(command, name, ctx)
        yield ctx.command_path + " " + name, command, sub
        if isinstance(command, click.Group):
            yield from commands(command, sub)


def anchor(path: str) -> str:
    """The heading id MkDocs gives ``## `receipts as-of` ``: ``receipts-as-of``."""
    return path.replace(" ", "-")


def reference() -> str:
    """The reference as Markdown: an index, then one section per command with its help."""
    entries = list(commands())
    lines = ["| command | what it does |", "|---|---|"]
    for path, command, _ in entries:
        summary = command.get_short_help_str(80).replace("|", "\\|")
        lines.append(f"| [`{path}`](#{anchor(path)}) | {summary} |")
    for path, command, ctx in entries:
        lines += ["", f"## `{path}`", "", "```text", command.get_help(ctx).rstrip(), "```"]
    return "\n".join(lines) + "\n"


def on_page_markdown(markdown: str, **_: Any) -> str:
    """MkDocs hook: put the generated reference where the marker stands."""
    if MARKER in markdown:
        return markdown.replace(MARKER, reference())
    return markdown
