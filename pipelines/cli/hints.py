"""Hints name only flags the command that prints them has.

An error's hint is written once, where the error is raised, and may be printed by any
command: "`--replay DIR` serves a recorded session" helps ``ingest`` and misleads
``backfill``, which has no ``--replay``. At the edge, the part of a hint naming a flag the
running command (and the root group) lacks is left out.
"""

from __future__ import annotations

import re

import click

# A long option as hints write it: `--replay DIR`, --fail-on-drift, "--json".
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)*")


def flags_named(text: str) -> list[str]:
    """The long options ``text`` names, in order."""
    return FLAG.findall(text)


def options_of(ctx: click.Context) -> set[str]:
    """The options of the context's command and of every group above it."""
    found: set[str] = set()
    current: click.Context | None = ctx
    while current is not None:
        for param in current.command.params:
            found.update(param.opts)
            found.update(param.secondary_opts)
        current = current.parent
    return found


def applicable(hint: str | None, ctx: click.Context | None = None) -> str | None:
    """``hint`` without its clauses (parts between ``;``) that name a flag the running
    command does not have; None when no clause is left."""
    ctx = ctx or click.get_current_context(silent=True)
    if not hint or ctx is None:
        return hint
    known = options_of(ctx)
    kept = [
        clause for clause in hint.split("; ") if all(flag in known for flag in flags_named(clause))
    ]
    return "; ".join(kept) or None
