"""A process that writes the files it reads from its standard input into one directory:
:mod:`pipelines.proofs.files` runs it (``python -I -S file_writer.py DIRECTORY MODE TAG``) so
that creating many small files, mostly the kernel's work, goes on beside the building of
them instead of after it. Standard library only, and nothing imported from receipts (it
starts in some milliseconds).

Input: for each file, its name's length and its data's length (two unsigned 32-bit
integers, little-endian), the name (UTF-8), the data; then the end of the input. MODE
``new`` writes each file under its name (the directory is one no reader knows yet);
``replace`` writes it under ``.NAME.TAG.tmp`` and renames it over its name.

A data length of :data:`RESERVE` (no data follows) reserves the name: its file (under the
name, or the temporary name) is created empty at once, and the name's data, when it comes,
is written into it. Creating a file (allocating it in the file system) is the slow part of
writing a small one; files reserved before their bytes are ready are created while the
sender is still reading what goes into them. A reserved name whose data never comes is
removed at the end of the input.

A file that cannot be written is removed (and every reserved file not yet written), the
process prints ``NAME``, ``ERRNO`` and the error's text separated by NUL to its standard
output, reads no further and exits 3. Should receipts stop without a word (killed), the
input ends there: every reserved file not yet written is removed the same way.
"""

from __future__ import annotations

import contextlib
import os
import struct
import sys
from collections.abc import Iterator

HEADER = struct.Struct("<II")
RESERVE = 0xFFFFFFFF
FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
_REOPEN = os.O_WRONLY | getattr(os, "O_CLOEXEC", 0)
FAILED = 3
CHUNK = 1 << 20  # read from the input at a time


def write_file(directory: int | None, name: str, data: memoryview, flags: int = FLAGS) -> None:
    """``data`` in a new file ``name`` of ``directory`` (a directory descriptor; None: a
    path as it is), or in the empty file there when ``flags`` opens one that exists; the
    file is removed again if a write fails."""
    fd = os.open(name, flags, 0o644, dir_fd=directory)
    try:
        while data:
            data = data[os.write(fd, data) :]
    except BaseException:
        os.close(fd)
        os.unlink(name, dir_fd=directory)
        raise
    os.close(fd)


def temporary_name(name: str, tag: str) -> str:
    """Where ``replace`` writes ``name`` before renaming it over the name."""
    return f".{name}.{tag}.tmp"


def _bounds(data: bytes, at: int) -> tuple[int, int, bool]:
    """Where the name of the record starting at ``at`` of ``data`` ends (its data starts),
    where the record ends, and whether it is a reservation (its header is there whole)."""
    name_size, data_size = HEADER.unpack_from(data, at)
    start: int = at + HEADER.size + name_size
    reserved = data_size == RESERVE
    return start, start if reserved else start + int(data_size), reserved


def _records(fd: int) -> Iterator[tuple[str, memoryview | None]]:
    """Each whole (name, data) of the input (data None: a reservation), read a chunk at a
    time: the per-file reads of a buffered stream were half the writer's own time on 10,000
    bundles. The rest of a record longer than a chunk is read at once."""
    pending = b""
    while True:
        chunk = os.read(fd, CHUNK)
        data = pending + chunk if pending else chunk
        view = memoryview(data)
        at, end = 0, len(data)
        while end - at >= HEADER.size:
            start, stop, reserved = _bounds(data, at)
            if stop > end:
                break
            name = str(view[at + HEADER.size : start], "utf-8")
            yield name, None if reserved else view[start:stop]
            at = stop
        pending = data[at:]
        if not chunk:
            return  # the end (a record cut short: the sender stopped part way, as it failed)
        if (
            len(pending) >= HEADER.size
            and (missing := _bounds(pending, 0)[1] - len(pending)) > CHUNK
        ):
            parts = [pending]
            while missing:
                part = os.read(fd, missing)
                if not part:
                    return
                parts.append(part)
                missing -= len(part)
            pending = b"".join(parts)


class _Directory:
    """The directory written into, in ``mode``, and the names reserved in it not yet
    written."""

    def __init__(self, path: str, mode: str, tag: str) -> None:
        self.fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        self.replace = mode == "replace"
        self.tag = tag
        self.reserved: set[str] = set()

    def _target(self, name: str) -> str:
        return temporary_name(name, self.tag) if self.replace else name

    def reserve(self, name: str) -> None:
        os.close(os.open(self._target(name), FLAGS, 0o644, dir_fd=self.fd))
        self.reserved.add(name)

    def write(self, name: str, data: memoryview) -> None:
        target = self._target(name)
        if name in self.reserved:
            self.reserved.discard(name)
            write_file(self.fd, target, data, _REOPEN)
        else:
            write_file(self.fd, target, data)
        if self.replace:
            try:
                os.replace(target, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
            except OSError:
                os.unlink(target, dir_fd=self.fd)
                raise

    def unreserve(self) -> None:
        """Every reserved file not written removed."""
        for name in self.reserved:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._target(name), dir_fd=self.fd)
        self.reserved.clear()


def main(argv: list[str]) -> int:
    path, mode, tag = argv
    directory = _Directory(path, mode, tag)
    for name, data in _records(sys.stdin.fileno()):
        try:
            if data is None:
                directory.reserve(name)
            else:
                directory.write(name, data)
        except OSError as exc:
            directory.unreserve()
            sys.stdout.write(f"{name}\0{exc.errno or 0}\0{exc.strerror or exc}")
            sys.stdout.flush()
            return FAILED
    directory.unreserve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
