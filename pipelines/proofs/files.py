"""Bundle files written into a directory, each whole or not at all.

The durability contract: a bundle appears under its final name only once all its bytes are
written, so a crash of receipts never leaves a truncated bundle under a final name. Into a
directory that already exists, each file is written to a hidden temporary name in it, then
renamed over its final name (atomic on POSIX file systems). A directory receipts makes is
filled under a hidden name beside it (``.NAME.PID.tmp``) and renamed over the empty directory
once every file is written: the bundles appear all at once, and the rename of each file
(about 40% of the time of writing 10,000 small files, measured on ext4) is saved. Files are
not flushed to the disk one by one (``fsync``): after a crash of the machine itself, bundles
the kernel had not yet written may be missing or empty, and running ``verify-claims
--bundles`` again writes them anew.
Files are written on the calling thread: writer threads, measured at 10,000 bundles on two
busy cores, were several times slower (each write waits for the GIL the building thread
holds).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from warehouse.errors import UsageError

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)


def _write(path: str, data: bytes) -> None:
    """``data`` in a new file at ``path`` (removed again if a write fails)."""
    fd = os.open(path, _FLAGS, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except BaseException:
        os.close(fd)
        os.unlink(path)
        raise
    os.close(fd)


def write_whole(directory: str, name: str, data: bytes) -> None:
    """``data`` under ``directory/name``, through a temporary name renamed over it."""
    temporary = os.path.join(directory, f".{name}.{os.getpid()}.tmp")
    _write(temporary, data)
    os.replace(temporary, os.path.join(directory, name))


def _refused(name: str, out: Path, exc: OSError) -> UsageError:
    return UsageError(
        f"{name} could not be written to {out} ({exc.strerror or exc}); no bundle is left cut "
        "short under its name: free the space or fix the directory and run again"
    )


def _fill(staging: str, out: Path, files: Iterable[tuple[str, bytes]]) -> None:
    """Each file written under its own name into ``staging``, a directory no reader knows."""
    for name, data in files:
        try:
            _write(os.path.join(staging, name), data)
        except OSError as exc:
            raise _refused(name, out, exc) from exc


def _move_in(staging: str, out: Path) -> None:
    """Each file of ``staging`` renamed into ``out`` (which something else filled meanwhile),
    then ``staging`` removed."""
    for name in os.listdir(staging):
        try:
            os.replace(os.path.join(staging, name), os.path.join(out, name))
        except OSError as exc:
            raise _refused(name, out, exc) from exc
    os.rmdir(staging)


def write_all(out: Path, files: Iterable[tuple[str, bytes]]) -> None:
    """Each ``(name, bytes)`` of ``files`` written whole into ``out`` (made if need be), as
    ``files`` produces them; a failed write stops there, as a :class:`UsageError`."""
    made = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    if made:
        staging = str(out.parent / f".{out.name}.{os.getpid()}.tmp")
        os.mkdir(staging)
        try:
            _fill(staging, out, files)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        try:
            os.replace(staging, out)  # over the empty directory made above
        except OSError:  # it is not empty any more
            _move_in(staging, out)
        return
    directory = str(out)
    for name, data in files:
        try:
            write_whole(directory, name, data)
        except OSError as exc:
            raise _refused(name, out, exc) from exc
