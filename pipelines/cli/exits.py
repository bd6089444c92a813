"""Exit codes: the one place that turns outcomes and errors into numbers scripts rely on.

    0  ok
    1  failure: an entry failed, a check found a mismatch, an internal error
    2  bad usage or an invalid manifest
    3  drift found (only with --fail-on-drift)
    4  the unrelated-document guard tripped during a push
  130  interrupted by Ctrl-C (SIGINT); what committed before it stays
  143  terminated (SIGTERM); what committed before it stays

Library objects carry outcomes (a push's status, a run's status); only the command line
maps them to these numbers.
"""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING

from warehouse.errors import ReceiptsError, UsageError
from warehouse.interrupt import Interrupted

if TYPE_CHECKING:  # for the annotations only: commands that push nothing need not import them
    from pipelines.publish.push import PushResult
    from pipelines.refresh import RefreshResult

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_DRIFT = 3
EXIT_GUARD = 4
# The reader of stdout went away (``receipts ls | head``): what a shell reports for SIGPIPE.
EXIT_BROKEN_PIPE = 141
# Interrupted: 128 + the signal, as a shell reports a process those signals killed.
EXIT_INTERRUPTED = 130  # SIGINT (Ctrl-C)
EXIT_TERMINATED = 143  # SIGTERM


def for_interrupt(stop: Interrupted) -> int:
    """130 for Ctrl-C (SIGINT), 143 for SIGTERM."""
    return EXIT_TERMINATED if stop.signum == signal.SIGTERM else EXIT_INTERRUPTED


def for_error(exc: ReceiptsError) -> int:
    """A known error: 2 for anything the user can fix in the command or manifest, else 1."""
    return EXIT_USAGE if isinstance(exc, UsageError) else EXIT_FAILURE


def for_push(result: PushResult) -> int:
    if result.status == "guard-tripped":
        return EXIT_GUARD
    return EXIT_OK if result.status in ("ok", "dry-run") else EXIT_FAILURE


def for_refresh(result: RefreshResult, fail_on_drift: bool = False) -> int:
    """4 the guard tripped; 1 an entry, the publish or reading the claims failed; 3 drift
    (when asked: upstream, target, or claims whose status changed); 0."""
    push = None if result.push is None else for_push(result.push)
    if push == EXIT_GUARD:
        return EXIT_GUARD
    if result.ingest.status != "ok" or result.publish_error is not None:
        return EXIT_FAILURE
    if result.claims_error is not None or (result.claims and result.claims.bad):
        return EXIT_FAILURE
    if push not in (None, EXIT_OK):
        return EXIT_FAILURE
    if fail_on_drift and result.drift_found:
        return EXIT_DRIFT
    return EXIT_OK


def for_drift(found: bool, fail_on_drift: bool) -> int:
    return EXIT_DRIFT if fail_on_drift and found else EXIT_OK


def for_check(ok: bool) -> int:
    return EXIT_OK if ok else EXIT_FAILURE
