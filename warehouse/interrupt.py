"""An interrupt (Ctrl-C, or SIGTERM from a scheduler) as the library sees it: the process
was asked to stop, which is neither a failure nor a bug.

Python raises :class:`KeyboardInterrupt` for SIGINT; the command line raises
:class:`Interrupted` for SIGTERM (``pipelines/cli/interrupts.py``). When the signal arrives
while DuckDB runs a statement, DuckDB stops the statement and raises an error of its own:
``duckdb.InterruptException`` (``INTERRUPT Error: Interrupted!``), or on 1.5 a
``RuntimeError('Query interrupted')`` whose cause is the exception the signal handler
raised. :func:`interruption` recognises all of them as the one interrupt they are.
"""

from __future__ import annotations

import signal
import sys

# DuckDB 1.5's words when a signal stops a statement (its cause is the handler's exception).
_DUCKDB_INTERRUPTED = "Query interrupted"


class Interrupted(KeyboardInterrupt):
    """The process was asked to stop by ``signum``; ``summary`` says what was committed
    before it stopped (set by the run that was going, for the command line to print)."""

    def __init__(self, signum: int = signal.SIGINT, summary: str | None = None) -> None:
        super().__init__(signum)
        self.signum = int(signum)
        self.summary = summary

    @property
    def signal_name(self) -> str:
        return signal.Signals(self.signum).name

    def __str__(self) -> str:
        return f"interrupted by {self.signal_name}"


def interruption(exc: BaseException | None) -> Interrupted | None:
    """The interrupt ``exc`` is or stands for, if any: :class:`Interrupted` itself, a
    :class:`KeyboardInterrupt` (SIGINT), DuckDB's interrupt error, or any exception raised
    while handling one of them (the cause or context chain leads to it)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, Interrupted):
            return exc
        if isinstance(exc, KeyboardInterrupt):
            return Interrupted(signal.SIGINT)
        if _is_duckdb_interrupt(exc):
            # Nothing in receipts interrupts a connection itself: a signal did.
            return interruption(exc.__cause__ or exc.__context__) or Interrupted(signal.SIGINT)
        if isinstance(exc, RuntimeError) and str(exc) == _DUCKDB_INTERRUPTED:
            return interruption(exc.__cause__ or exc.__context__) or Interrupted(signal.SIGINT)
        exc = exc.__cause__ or exc.__context__
    return None


def _is_duckdb_interrupt(exc: BaseException) -> bool:
    """DuckDB's own interrupt error; looked up only when DuckDB is loaded, so recognising an
    interrupt never imports it (``receipts --help`` stays light)."""
    duckdb = sys.modules.get("duckdb")
    return duckdb is not None and isinstance(exc, duckdb.InterruptException)
