"""The writer lock: one writing process per warehouse file, named in a sidecar file.

DuckDB already refuses a second writer on a file, but with an OS-level message. The sidecar
``<warehouse>.lock`` is flock()ed by the writer and holds ``{"pid", "run_id"}`` so that a
second process can say who holds the warehouse. The kernel drops the flock when the holder
dies (even by SIGKILL), so a stale sidecar never blocks anyone.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from pathlib import Path
from typing import IO

from warehouse.errors import WarehouseBusy


def sidecar_path(database_path: Path) -> Path:
    return database_path.with_name(database_path.name + ".lock")


def read_holder(database_path: Path) -> tuple[int | None, int | None]:
    """(run_id, pid) written by the current or last writer, as far as known."""
    try:
        data = json.loads(sidecar_path(database_path).read_text() or "{}")
    except (OSError, ValueError):
        return None, None
    run_id = data.get("run_id")
    pid = data.get("pid")
    return (run_id if isinstance(run_id, int) else None, pid if isinstance(pid, int) else None)


class WriterLock:
    """An exclusive, non-blocking lock on a warehouse file."""

    def __init__(self, database_path: Path) -> None:
        self.database_path = database_path
        self._handle: IO[str] | None = None

    def acquire(self) -> None:
        path = sidecar_path(self.database_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = path.open("a+")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            run_id, pid = read_holder(self.database_path)
            raise WarehouseBusy(str(self.database_path), run_id, pid) from None
        self._handle = handle
        self.describe(run_id=None)

    def describe(self, run_id: int | None) -> None:
        """Record which run holds the lock, for the error another process will print."""
        if self._handle is None:
            return
        self._handle.seek(0)
        self._handle.truncate()
        self._handle.write(json.dumps({"pid": os.getpid(), "run_id": run_id}))
        self._handle.flush()

    def release(self) -> None:
        if self._handle is None:
            return
        with contextlib.suppress(OSError):
            fcntl.flock(self._handle.fileno(), fcntl.LOCK_UN)
        self._handle.close()
        self._handle = None
