"""Connections whose transaction could not be ended: kept, never closed, and the process ends
without destroying them.

DuckDB rolls back, in a destructor, the open transaction of a connection that is closed or
freed. When a lake's PostgreSQL catalog has gone away, that rollback fails, and a failure in
a destructor aborts the process (DuckDB 1.5.5: "terminate called after throwing an instance
of 'duckdb::Exception' ... Failed to execute query "ROLLBACK": server closed the connection",
SIGABRT, exit 134) before the command can say what happened. An explicit ROLLBACK that fails
may leave the transaction open (reproduced: one backfill in 36 whose catalog was stopped at a
random moment aborted in ``cursor.close()`` after a failed ROLLBACK of a catalog lock's
transaction). Such a connection is handed to :func:`keep` instead of being closed; once the
command has told its error, :func:`exit_if_any` ends the process with ``os._exit``, which
runs no destructor. An ``atexit`` hook does the same for an exit that took another path.

Nothing is lost by not running them: the catalog is unreachable, so the transaction's
rollback is the server's (PostgreSQL rolls back the work of a session that ended).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
from typing import Any

_kept: list[object] = []


def keep(connection: object) -> None:
    """Keep ``connection`` (a DuckDB connection or cursor whose ROLLBACK failed) alive until
    the process ends, and end it without destructors."""
    _kept.append(connection)


def close(connection: Any) -> None:
    """Close ``connection``, unless something is kept: closing a DuckDB connection closes
    its cursors too (a kept one among them), so it is kept as well."""
    if _kept:
        keep(connection)
    else:
        connection.close()


def may_be_open(failed: Exception) -> bool:
    """Whether a ROLLBACK that raised ``failed`` may have left its transaction open: any
    failure but DuckDB's "no transaction is active", which says there is none."""
    return "no transaction is active" not in str(failed)


def exit_if_any(code: int) -> None:
    """With a connection kept, flush what was written and end the process now with ``code``
    (no destructor runs); else return."""
    if not _kept:
        return
    # Standard error is line-buffered and written a line at a time; the output may not be.
    with contextlib.suppress(OSError, ValueError):  # closed, or the reader went away
        sys.stdout.flush()
    os._exit(code)


@atexit.register
def _at_exit() -> None:
    # Before the interpreter frees its modules' objects (and with them the kept connections):
    # an exit that did not go through the command's error path (exit code 1: something failed).
    exit_if_any(1)
