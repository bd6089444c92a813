"""The root group's commands, each imported only when it runs, its help is asked for or its
options are completed: ``receipts --help``, ``--version`` and completing a command's name
import none of them (and so neither DuckDB, httpx nor pyarrow).

A command is one :class:`Entry` of the table in ``pipelines/cli/__init__.py``: its name, the
module and attribute that hold it, and the one line ``receipts --help`` lists it with (also
the command's own ``short_help``, so the listing is the same whether it is loaded or not).
"""

from __future__ import annotations

import importlib
from typing import Any, NamedTuple

import click
from click.shell_completion import CompletionItem

from pipelines.cli.interrupts import signals_interrupt
from pipelines.cli.logformat import ReceiptsGroup, _usage_errors_as_log_lines


class Entry(NamedTuple):
    """One command of the root group: ``where`` is ``module:attribute``, the module under
    ``pipelines.cli``."""

    where: str
    summary: str


class LazyGroup(ReceiptsGroup):
    """A click group whose commands are imported from a table when first needed."""

    def __init__(self, *args: Any, table: dict[str, Entry], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.table = table

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.table, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.table:
            self.add_command(load(cmd_name, self.table[cmd_name]), cmd_name)
        return self.commands.get(cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        # As the root group does (SIGINT and SIGTERM are interrupts while a command runs),
        # with a root option given after the command named as such.
        with _usage_errors_as_log_lines(), signals_interrupt():
            try:
                return click.Group.invoke(self, ctx)
            except click.NoSuchOption as exc:
                raise self._misplaced(exc) from None

    def _misplaced(self, exc: click.NoSuchOption) -> click.UsageError:
        """A root option given after the command (``refresh M -q``): say where it goes."""
        name = exc.option_name
        ours = {opt for param in self.params for opt in (*param.opts, *param.secondary_opts)}
        command = exc.ctx.info_name if exc.ctx is not None else None
        if name not in ours or exc.ctx is None or exc.ctx.command is self:
            return exc
        return click.UsageError(
            f"{name} is an option of receipts itself, not of `{command}`: give it before the "
            f"command, e.g. `receipts {name} {command} ...`",
            ctx=exc.ctx,
        )

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list of ``--help``, from the table: no command is imported."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = [(name, _shorten(self._summary(name), limit)) for name in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[CompletionItem]:
        """Command names from the table (no command is imported), then the group's options."""
        results = [
            CompletionItem(name, help=self._summary(name))
            for name in self.list_commands(ctx)
            if name.startswith(incomplete) and name not in ctx._protected_args
        ]
        results.extend(click.Command.shell_complete(self, ctx, incomplete))
        return results

    def _summary(self, name: str) -> str:
        if name in self.table:
            return self.table[name].summary
        return self.commands[name].get_short_help_str()


def load(name: str, entry: Entry) -> click.Command:
    """The command ``entry`` names, imported now, listed with the table's summary."""
    module_name, _, attribute = entry.where.partition(":")
    command = getattr(importlib.import_module(f"pipelines.cli.{module_name}"), attribute)
    if not isinstance(command, click.Command):
        raise TypeError(f"{entry.where} is not a click command (for `receipts {name}`)")
    command.short_help = entry.summary
    return command


def _shorten(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[: max(limit - 3, 1)].rsplit(" ", 1)[0]
    return cut + "..."
