"""Reading a flat file (zipped or not): its data member, its digest, and its bytes in blocks
of whole lines, read and inflated in a thread ahead of the caller."""

from __future__ import annotations

import hashlib
import queue
import threading
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from sources.nhtsa.flatfile.zipped import member_pieces
from warehouse.errors import FlatFileError

ENCODING = "iso-8859-1"
CHUNK_BYTES = 1 << 22
_PREFETCH = 4


@dataclass
class LineSource:
    """A flat file (zipped or not): its data member, its size, and read progress in bytes."""

    path: Path
    member: str | None = None
    total_bytes: int = 0
    bytes_read: int = 0
    name: str = ""

    def __post_init__(self) -> None:
        if not self.path.is_file():
            raise FlatFileError(f"no such file: {self.path}")
        if not zipfile.is_zipfile(self.path):
            self.total_bytes = self.path.stat().st_size
            self.name = self.path.name
            return
        with zipfile.ZipFile(self.path) as archive:
            info = pick_member(archive, self.member, self.path)
        self.member = info.filename
        self.total_bytes = info.file_size
        self.name = info.filename

    def pieces(self, size: int) -> Iterator[bytes]:
        """The file's bytes (a zip's data member inflated), in pieces of at most ``size``."""
        if self.member is None:
            with self.path.open("rb", buffering=0) as handle:
                while piece := handle.read(size):
                    yield piece
            return
        with zipfile.ZipFile(self.path) as archive:
            info = archive.getinfo(self.member)
        yield from member_pieces(self.path, info, size)


def pick_member(archive: zipfile.ZipFile, member: str | None, path: Path) -> zipfile.ZipInfo:
    files = [i for i in archive.infolist() if not i.is_dir()]
    if member is not None:
        for info in files:
            if info.filename == member:
                return info
        raise FlatFileError(
            f"{path.name} has no member {member!r}; it holds: "
            + ", ".join(i.filename for i in files)
        )
    if len(files) == 1:
        return files[0]
    if not files:
        raise FlatFileError(f"{path.name} is an empty zip")
    raise FlatFileError(
        f"{path.name} holds several files ({', '.join(i.filename for i in files)}); "
        "name the data file with --member"
    )


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _whole_lines(pieces: list[bytes]) -> tuple[bytes | None, list[bytes]]:
    """The whole lines ``pieces`` hold, joined, without the line end after the last of them
    (None if no piece holds a line end), and the pieces of what follows."""
    for at in range(len(pieces) - 1, -1, -1):
        piece = pieces[at]
        cut = piece.rfind(b"\n")
        if cut < 0:
            continue
        rest = [r for r in (piece[cut + 1 :], *pieces[at + 1 :]) if r]
        if at == 0:
            return piece[:cut], rest
        return b"".join([*pieces[:at], memoryview(piece)[:cut]]), rest
    return None, pieces


def _blocks(pieces: Iterable[bytes], size: int) -> Iterator[tuple[bytes, int, int]]:
    """Blocks of whole lines cut from ``pieces`` each time about ``size`` bytes are held:
    each with how many line numbers it spans (its line ends and the one cut after it; 0 for
    a last line with no line end after it) and how many bytes were read by then."""
    pending: list[bytes] = []
    held = read = 0
    for piece in pieces:
        pending.append(piece)
        held += len(piece)
        read += len(piece)
        if held >= size:
            block, pending = _whole_lines(pending)
            held = sum(map(len, pending))
            if block is not None:
                yield block, block.count(b"\n") + 1, read
    block, pending = _whole_lines(pending)
    if block is not None:
        yield block, block.count(b"\n") + 1, read
    if pending:
        yield b"".join(pending), 0, read


def read_blocks(source: LineSource, size: int = CHUNK_BYTES) -> Iterator[tuple[int, bytes]]:
    """``(number of the first line, bytes)`` for the whole file, about ``size`` bytes of whole
    lines at a time (ISO-8859-1, line ends between them, none after the last); lines are
    numbered as :class:`LineSource` numbers them (empty lines included). A thread reads,
    inflates and cuts the blocks ahead of the caller (zlib releases the GIL), so unzipping
    overlaps the parsing."""
    blocks: queue.Queue[tuple[bytes, int, int] | BaseException | None] = queue.Queue(_PREFETCH)
    stop = threading.Event()

    def put(item: tuple[bytes, int, int] | BaseException | None) -> bool:
        while not stop.is_set():
            try:
                blocks.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def reader() -> None:
        try:
            for block in _blocks(source.pieces(size), size):
                if not put(block):
                    return
            put(None)
        except BaseException as exc:  # handed to the consumer, raised there
            put(exc)

    thread = threading.Thread(target=reader, name="flatfile-reader", daemon=True)
    thread.start()
    source.bytes_read = 0
    number = 1
    try:
        while True:
            item = blocks.get()
            if isinstance(item, BaseException):
                raise item
            if item is None:
                break
            block, lines, source.bytes_read = item
            yield number, block
            number += lines
    finally:
        stop.set()
        thread.join()
