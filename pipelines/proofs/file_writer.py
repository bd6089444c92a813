"""A process that writes the files it reads from its standard input into one directory:
:mod:`pipelines.proofs.files` runs it (``python -I -S file_writer.py DIRECTORY MODE TAG``) so
that creating many small files, mostly the kernel's work, goes on beside the building of
them instead of after it. Standard library only, and nothing imported from receipts (it
starts in some milliseconds).

Input: for each file, its name's length and its data's length (two unsigned 32-bit
integers, little-endian), the name (UTF-8), the data; then the end of the input. MODE
``new`` writes each file under its name (the directory is one no reader knows yet);
``replace`` writes it under ``.NAME.TAG.tmp`` and renames it over its name. A file that
cannot be written is removed, the process prints ``NAME``, ``ERRNO`` and the error's text
separated by NUL to its standard output, reads no further and exits 3.
"""

from __future__ import annotations

import os
import struct
import sys
from typing import BinaryIO

HEADER = struct.Struct("<II")
FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
FAILED = 3


def write_file(directory: int | None, name: str, data: memoryview) -> None:
    """``data`` in a new file ``name`` of ``directory`` (a directory descriptor; None: a
    path as it is); the file is removed again if a write fails."""
    fd = os.open(name, FLAGS, 0o644, dir_fd=directory)
    try:
        while data:
            data = data[os.write(fd, data) :]
    except BaseException:
        os.close(fd)
        os.unlink(name, dir_fd=directory)
        raise
    os.close(fd)


def _read_exactly(stream: BinaryIO, size: int) -> memoryview | None:
    data = stream.read(size)
    if len(data) != size:
        return None
    return memoryview(data)


def main(argv: list[str]) -> int:
    path, mode, tag = argv
    directory = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    stream: BinaryIO = sys.stdin.buffer
    while True:
        header = stream.read(HEADER.size)
        if len(header) != HEADER.size:
            return 0
        name_size, data_size = HEADER.unpack(header)
        raw_name = _read_exactly(stream, name_size)
        data = _read_exactly(stream, data_size)
        if raw_name is None or data is None:
            return 0  # the sender stopped part way (it failed): nothing more to write
        name = bytes(raw_name).decode("utf-8")
        try:
            if mode == "replace":
                temporary = f".{name}.{tag}.tmp"
                write_file(directory, temporary, data)
                try:
                    os.replace(temporary, name, src_dir_fd=directory, dst_dir_fd=directory)
                except OSError:
                    os.unlink(temporary, dir_fd=directory)
                    raise
            else:
                write_file(directory, name, data)
        except OSError as exc:
            sys.stdout.write(f"{name}\0{exc.errno or 0}\0{exc.strerror or exc}")
            sys.stdout.flush()
            return FAILED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
