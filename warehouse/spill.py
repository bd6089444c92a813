"""A spill directory of one's own for a DuckDB database.

DuckDB names its spill files the same in every database (``duckdb_temp_storage_*.tmp``), so
two databases must never spill into one directory: each would read the other's blocks as
its own. (Two lake writers started in one working directory did, when a lake's connection
spilled to DuckDB's default ``.tmp`` there: one failed reading "invalid UTF-8" from a block
the other had written, the other "could not read enough bytes" from a file cut short.)

A :class:`SpillDirectory` is made under a parent (made too if need be), named with a
prefix and a random part. Its owner holds a ``flock`` on ``.owner`` inside it while it is
in use; the kernel drops the lock when the owner dies, even by SIGKILL, and a directory
whose lock can be taken is removed by the next one made beside it with the same prefix.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from pathlib import Path

_OWNER = ".owner"


class SpillDirectory:
    """A directory made under ``parent`` (default: the system's temporary directory) when
    :meth:`make` is called, removed at :meth:`close`."""

    def __init__(self, prefix: str, parent: Path | None = None) -> None:
        self.prefix = prefix
        self.parent = parent
        self.path: Path | None = None
        self._owner: int | None = None
        self._made_parent = False

    def make(self) -> Path:
        """The directory, made (and locked) on the first call."""
        if self.path is not None:
            return self.path
        parent = self.parent
        if parent is not None and not parent.is_dir():
            parent.mkdir(parents=True)
            self._made_parent = True
        try:
            self.path = Path(tempfile.mkdtemp(prefix=self.prefix, dir=parent))
            self._owner = _hold(self.path)
            remove_abandoned(self.path.parent, self.prefix)
        except BaseException:
            self.close()  # nothing is left behind by a failed make
            raise
        return self.path

    def close(self) -> None:
        """Remove the directory, and a parent :meth:`make` made when nothing else is in it;
        closing twice is harmless."""
        if self.path is not None:
            shutil.rmtree(self.path, ignore_errors=True)
            self.path = None
        if self._owner is not None:
            os.close(self._owner)
            self._owner = None
        if self._made_parent and self.parent is not None:
            self._made_parent = False
            with contextlib.suppress(OSError):  # not empty: something else spills there too
                self.parent.rmdir()


def _hold(spill: Path) -> int:
    """A descriptor holding the exclusive ``flock`` of ``spill``'s ``.owner``. The file is
    locked under another name and then renamed: ``.owner`` is never seen unlocked while its
    owner lives."""
    unnamed = spill / (_OWNER + ".new")
    fd = os.open(unnamed, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.rename(unnamed, spill / _OWNER)
    return fd


def remove_abandoned(parent: Path, prefix: str) -> list[Path]:
    """Remove the directories ``prefix*`` under ``parent`` whose owner is gone (their
    ``.owner`` lock can be taken) and return them. A directory without ``.owner`` is left
    alone: its owner may be between making it and locking it."""
    removed = []
    for spill in sorted(parent.glob(prefix + "*")):
        try:
            fd = os.open(spill / _OWNER, os.O_RDWR)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue  # its owner holds it
        shutil.rmtree(spill, ignore_errors=True)
        os.close(fd)
        removed.append(spill)
    return removed
