"""A backfill's statements running out of memory, named by the setting that governs them.

A backfill runs its statements in two DuckDB databases with limits of their own: the
warehouse's connection under the backfill's ``--memory-limit`` (which replaces
``RECEIPTS_DUCKDB_MEMORY_LIMIT`` for the run), and the build database under its own limit.
Raising the other one does not help, so the hint names the one that was exceeded.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import duckdb

from warehouse.errors import OutOfMemory
from warehouse.store import DEFAULT_WAREHOUSE_MEMORY_LIMIT, ENV_WAREHOUSE_MEMORY_LIMIT


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (
        text.splitlines()[0].removeprefix("TransactionContext Error: ") if text else "out of memory"
    )


# What DuckDB says when a buffer cannot be had under the limit; a commit that needs one
# raises it as a TransactionException ("Failed to commit: failed to pin block ...").
_NO_MEMORY = ("out of memory error", "failed to pin block", "could not allocate block")


def is_out_of_memory(exc: BaseException) -> bool:
    """Whether DuckDB raised ``exc`` for want of memory under its limit."""
    if isinstance(exc, duckdb.OutOfMemoryException):
        return True
    message = str(exc).lower()
    return isinstance(exc, duckdb.Error) and any(words in message for words in _NO_MEMORY)


@contextlib.contextmanager
def governed_by(hint: str) -> Iterator[None]:
    """Inside the block, DuckDB running out of memory is raised as
    :class:`~warehouse.errors.OutOfMemory` with ``hint`` (DuckDB's own advice after its first
    line is left out: the hint says what to change here)."""
    try:
        yield
    except duckdb.Error as exc:
        if not is_out_of_memory(exc):
            raise
        raise OutOfMemory(
            _first_line(exc),
            ENV_WAREHOUSE_MEMORY_LIMIT,
            DEFAULT_WAREHOUSE_MEMORY_LIMIT,
            hint=hint,
        ) from exc


def warehouse_hint(limit: str, build_limit: str) -> str:
    """The hint for a statement on the warehouse's connection during a backfill run with
    ``--memory-limit`` ``limit`` (while it plans, the build database's ``build_limit`` is
    added to it)."""
    return (
        f"give the backfill more: --memory-limit 1GB (it ran with {limit}; while it planned, "
        f"{limit} plus the build database's {build_limit}); {ENV_WAREHOUSE_MEMORY_LIMIT} does "
        "not apply to a backfill"
    )


def build_hint(variable: str, limit: str) -> str:
    """The hint for a statement in the backfill's build database."""
    return (
        f"give the backfill's build database more: {variable}=1GB (it ran with {limit}); "
        "--memory-limit does not apply to it"
    )
