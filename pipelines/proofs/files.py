"""Bundle files written into a directory, each whole or not at all.

The durability contract: a bundle appears under its final name only once all its bytes are
written (each is written to a hidden temporary name in the same directory, then renamed
over the final name, which is atomic on POSIX file systems), so a crash of receipts never
leaves a truncated bundle under a final name. Files are not flushed to the disk one by one
(``fsync``): after a crash of the machine itself, bundles the kernel had not yet written
may be missing or empty, and running ``verify-claims --bundles`` again writes them anew.
Writing runs on a few threads (opening, writing and renaming a file release the GIL), so
it overlaps the building of the next bundles.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from warehouse.errors import UsageError

WRITERS = 4
_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)


def write_whole(directory: str, name: str, data: bytes) -> None:
    """``data`` under ``directory/name``, through a temporary name renamed over it."""
    final = os.path.join(directory, name)
    temporary = os.path.join(directory, f".{name}.{os.getpid()}.tmp")
    fd = os.open(temporary, _FLAGS, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except BaseException:
        os.close(fd)
        os.unlink(temporary)
        raise
    os.close(fd)
    os.replace(temporary, final)


def write_all(out: Path, files: Iterable[tuple[str, bytes]]) -> None:
    """Each ``(name, bytes)`` of ``files`` written whole into ``out`` (made if need be), on
    :data:`WRITERS` threads while ``files`` is still being produced; every failed write is
    reported, in one :class:`UsageError`, once every write has ended."""
    out.mkdir(parents=True, exist_ok=True)
    directory = str(out)
    with ThreadPoolExecutor(WRITERS, thread_name_prefix="bundle-writer") as pool:
        pending: list[Future[None]] = [
            pool.submit(write_whole, directory, name, data) for name, data in files
        ]
    failed = [f.exception() for f in pending if f.exception() is not None]
    if failed:
        first = failed[0]
        reason = first.strerror if isinstance(first, OSError) and first.strerror else first
        raise UsageError(
            f"{len(failed)} bundle(s) could not be written to {out} ({reason}); none of them "
            "is left under its name: free the space or fix the directory and run again"
        ) from first
