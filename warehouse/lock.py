"""The file lock of a DuckDB-file warehouse: one writer, or any number of readers, at a time.

A DuckDB file can be open for writing by one process, or for reading by several, never
both; its own lock fails at once with an OS-level message. So every receipts process
takes a ``flock`` on the sidecar ``<warehouse>.lock`` first: a writer exclusively, a reader
shared. Whoever finds it taken waits, bounded by ``RECEIPTS_LOCK_WAIT`` seconds (one line
on stderr says what it waits for), and then fails with a message naming the holder. The
writer keeps ``{"pid", "run_id", "since"}`` in the sidecar so that the others can say which
run holds the file and for how long; it empties the sidecar when it lets go. The kernel
drops a flock when its holder dies (even by SIGKILL), so a stale sidecar never blocks
anyone.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, NamedTuple

from warehouse import settings
from warehouse.errors import WarehouseBusy, human_duration

ENV_LOCK_WAIT = "RECEIPTS_LOCK_WAIT"
DEFAULT_LOCK_WAIT = 30.0  # seconds a writer waits for readers (and a reader for a writer)
POLL_SECONDS = 0.1

log = logging.getLogger("receipts.lock")


def lock_wait() -> float:
    """How long to wait for a warehouse someone else holds: ``$RECEIPTS_LOCK_WAIT`` seconds
    (0 fails at once), else the config file's ``lock_wait``, else the default (checked by
    :mod:`warehouse.settings`)."""
    return settings.current().lock_wait


def notify_stderr(message: str) -> None:
    """The default way a waiting process says what it waits for: one line on stderr, through
    the ``receipts.lock`` logger (the command line formats it, as text or JSON; Python's
    last-resort handler writes it when nothing is configured)."""
    log.warning("receipts: %s", message, extra={"event": "lock.wait"})


def sidecar_path(database_path: Path) -> Path:
    return database_path.with_name(database_path.name + ".lock")


class Holder(NamedTuple):
    """The writer holding a warehouse, as far as its sidecar says."""

    run_id: int | None
    pid: int | None
    since: float | None  # wall-clock seconds (time.time()) when it took the lock

    def running_for(self) -> float | None:
        return None if self.since is None else max(0.0, time.time() - self.since)


def read_holder(database_path: Path) -> tuple[int | None, int | None]:
    """(run_id, pid) written by the current writer, as far as known."""
    holder = read_holder_full(database_path)
    return holder.run_id, holder.pid


def read_holder_full(database_path: Path) -> Holder:
    try:
        data = json.loads(sidecar_path(database_path).read_text() or "{}")
    except (OSError, ValueError):
        return Holder(None, None, None)
    if not isinstance(data, dict):
        return Holder(None, None, None)
    run_id, pid, since = data.get("run_id"), data.get("pid"), data.get("since")
    return Holder(
        run_id if isinstance(run_id, int) else None,
        pid if isinstance(pid, int) else None,
        float(since) if isinstance(since, int | float) else None,
    )


class FileLock:
    """A writer's (exclusive) or a reader's (shared) lock on a warehouse file."""

    def __init__(
        self,
        database_path: Path,
        *,
        shared: bool = False,
        wait: float | None = None,
        notify: Callable[[str], None] = notify_stderr,
    ) -> None:
        self.database_path = database_path
        self.shared = shared
        self.wait = wait
        self.notify = notify
        self._handle: IO[str] | None = None
        self._since = 0.0

    def _open(self) -> IO[str] | None:
        path = sidecar_path(self.database_path)
        if not self.shared:
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            return path.open("a+")
        except OSError:
            if not self.shared:
                raise
        # A reader of a warehouse in a folder it cannot write to: lock the sidecar if it is
        # there, else there is no receipts writer to coordinate with.
        try:
            return path.open("r")
        except OSError:
            return None

    def _try(self, handle: IO[str]) -> bool:
        mode = fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX
        try:
            fcntl.flock(handle.fileno(), mode | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _held_by_readers(self, handle: IO[str]) -> bool:
        """Whether only readers hold the lock (a shared lock can still be had)."""
        if self.shared:
            return False
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        with contextlib.suppress(OSError):
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        return True

    def _busy(self, handle: IO[str], waited: float) -> WarehouseBusy:
        location = str(self.database_path)
        if self._held_by_readers(handle):
            return WarehouseBusy(location, None, None, readers=True, waited=waited)
        holder = read_holder_full(self.database_path)
        return WarehouseBusy(
            location,
            holder.run_id,
            holder.pid,
            running_for=holder.running_for(),
            waited=waited,
            reading=self.shared,
        )

    def acquire(self) -> None:
        handle = self._open()
        if handle is None:
            return
        wait = lock_wait() if self.wait is None else self.wait
        started = time.monotonic()
        told = False
        while not self._try(handle):
            waited = time.monotonic() - started
            if waited >= wait:
                busy = self._busy(handle, waited)
                handle.close()
                raise busy from None
            if not told:
                busy = self._busy(handle, waited)
                limit = human_duration(wait)
                self.notify(f"{busy.waiting_line()}; waiting up to {limit} ({ENV_LOCK_WAIT})")
                told = True
            time.sleep(min(POLL_SECONDS, max(0.0, wait - waited)))
        self._handle = handle
        self._since = time.time()
        self.describe(run_id=None)

    def describe(self, run_id: int | None) -> None:
        """Record which run holds the (writer's) lock, for the message another process prints."""
        if self._handle is None or self.shared:
            return
        self._handle.seek(0)
        self._handle.truncate()
        self._handle.write(json.dumps({"pid": os.getpid(), "run_id": run_id, "since": self._since}))
        self._handle.flush()

    def release(self) -> None:
        if self._handle is None:
            return
        with contextlib.suppress(OSError):
            if not self.shared:
                self._handle.seek(0)
                self._handle.truncate()
                self._handle.flush()
            fcntl.flock(self._handle.fileno(), fcntl.LOCK_UN)
        self._handle.close()
        self._handle = None


# The name the writer's lock had before readers took one too.
WriterLock = FileLock
