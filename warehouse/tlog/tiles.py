"""The log as static files (C2SP tlog-tiles, https://c2sp.org/tlog-tiles), for any static
host or bucket:

    <dir>/checkpoint                 the signed checkpoint (written last)
    <dir>/tile/<L>/<N>[.p/<W>]       Merkle tree tiles
    <dir>/tile/entries/<N>[.p/<W>]   entry bundles

A tile at level ``L`` holds up to 256 consecutive hashes of the tree at height ``8 * L``:
level 0 holds leaf hashes, each hash of level ``L`` the root of a full tile of level
``L - 1``. Hash ``i`` of tile ``N`` at level ``L`` is
``MTH(D[(N*256 + i) * 256**L : (N*256 + i + 1) * 256**L])``. A full tile is 256 hashes
(8,192 bytes); the rightmost tile of each level may be partial, ``.p/<W>`` with ``W`` from
1 to 255 hashes. ``N`` is written in 3-digit groups, all but the last prefixed with ``x``:
1234067 is ``x001/x234/067``.

An entry bundle holds the entries of the level-0 tile of the same ``N`` and width, each as
a big-endian uint16 length then its bytes.

Tiles and bundles never change once written, so publishing again writes only those that
are new or grew (a partial tile that became full is written whole, and its partial
versions are removed once the new checkpoint is in place).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from warehouse.tlog import checkpoint as checkpoints
from warehouse.tlog import merkle, note
from warehouse.tlog.errors import CheckpointError, NoteError, TileError

TILE_HEIGHT = 8
TILE_WIDTH = 1 << TILE_HEIGHT
ENTRIES = -1  # the level of entry bundles, beside the hash tiles' levels 0, 1, ...
MAX_ENTRY = 0xFFFF  # an entry's length is a uint16 in a bundle
# Tiles read from the warehouse per call: one SQL query answers up to this many hashes.
_BATCH_TILES = 64

EntryReader = Callable[[int, int], Sequence[bytes]]  # (start, end) -> entries[start:end]


@dataclass(frozen=True, order=True)
class Tile:
    """One tile (``level >= 0``) or entry bundle (``level == ENTRIES``): its index within
    the level and its width (256 when full)."""

    level: int
    n: int
    width: int = TILE_WIDTH

    def __post_init__(self) -> None:
        if not ENTRIES <= self.level <= 63 or self.n < 0 or not 1 <= self.width <= TILE_WIDTH:
            raise TileError(f"no tile at level {self.level}, index {self.n}, width {self.width}")

    @property
    def full(self) -> bool:
        return self.width == TILE_WIDTH

    @property
    def path(self) -> str:
        level = "entries" if self.level == ENTRIES else str(self.level)
        partial = "" if self.full else f".p/{self.width}"
        return f"tile/{level}/{encode_index(self.n)}{partial}"

    @property
    def start(self) -> int:
        """The first entry (for a bundle) or first hash position (for a tile)."""
        return self.n * TILE_WIDTH


def encode_index(n: int) -> str:
    """A tile index as path elements: 3-digit groups, all but the last prefixed with x."""
    if n < 0:
        raise TileError(f"no tile index {n}")
    digits = str(n)
    digits = "0" * (-len(digits) % 3) + digits
    groups = [digits[i : i + 3] for i in range(0, len(digits), 3)]
    return "/".join([*(f"x{g}" for g in groups[:-1]), groups[-1]])


_PATH = re.compile(
    r"tile/(entries|0|[1-9][0-9]?)/((?:x[0-9]{3}/)*)([0-9]{3})(?:\.p/([1-9][0-9]*))?"
)


def parse_path(path: str) -> Tile:
    """The tile a path names; refuses anything that is not a tile path."""
    match = _PATH.fullmatch(path)
    if not match:
        raise TileError(f"not a tile path: {path!r}")
    level, groups, last, width = match.groups()
    prefix = [g[1:] for g in groups.split("/") if g]
    if prefix and prefix[0] == "000":
        raise TileError(f"not a tile path (a leading zero group): {path!r}")
    n = int("".join([*prefix, last]))
    if width is not None and int(width) >= TILE_WIDTH:
        raise TileError(f"not a tile path (partial width {width}): {path!r}")
    return Tile(ENTRIES if level == "entries" else int(level), n, int(width or TILE_WIDTH))


def new_tiles(old_size: int, new_size: int) -> list[Tile]:
    """The hash tiles a tree of ``new_size`` has that one of ``old_size`` lacks: new tiles,
    and tiles that grew (each at its new width)."""
    if not 0 <= old_size <= new_size:
        raise TileError(f"the log cannot shrink from {old_size} to {new_size} entries")
    found = []
    level = 0
    while new_size >> (TILE_HEIGHT * level):
        new_count = new_size >> (TILE_HEIGHT * level)  # hashes at this tile level
        old_count = old_size >> (TILE_HEIGHT * level)
        for n in range(old_count // TILE_WIDTH, (new_count - 1) // TILE_WIDTH + 1):
            width = min(TILE_WIDTH, new_count - n * TILE_WIDTH)
            if width > max(0, min(TILE_WIDTH, old_count - n * TILE_WIDTH)):
                found.append(Tile(level, n, width))
        level += 1
    return found


def tile_indexes(tile: Tile) -> list[int]:
    """The stored-hash indexes of a hash tile's hashes, in order."""
    if tile.level == ENTRIES:
        raise TileError("an entry bundle holds entries, not hashes")
    height = TILE_HEIGHT * tile.level
    return [merkle.stored_hash_index(height, tile.start + i) for i in range(tile.width)]


def read_tiles(tiles: Sequence[Tile], read: merkle.HashReader) -> list[bytes]:
    """The bytes of each hash tile (its hashes concatenated), with one read."""
    indexes = [tile_indexes(tile) for tile in tiles]
    hashes = list(read([i for group in indexes for i in group]))
    if len(hashes) != sum(map(len, indexes)):
        raise TileError(f"hash reader returned {len(hashes)} hashes for the tiles asked")
    result, at = [], 0
    for tile in tiles:
        result.append(b"".join(hashes[at : at + tile.width]))
        at += tile.width
    return result


def bundle(entries: Sequence[bytes]) -> bytes:
    """An entry bundle: each entry as a big-endian uint16 length, then its bytes."""
    parts = []
    for entry in entries:
        if len(entry) > MAX_ENTRY:
            raise TileError(f"an entry of {len(entry)} bytes does not fit a bundle's uint16")
        parts.append(len(entry).to_bytes(2, "big"))
        parts.append(entry)
    return b"".join(parts)


def unbundle(data: bytes) -> list[bytes]:
    """The entries of a bundle."""
    entries: list[bytes] = []
    at = 0
    while at < len(data):
        if at + 2 > len(data):
            raise TileError(f"entry bundle truncated at byte {at}")
        length = int.from_bytes(data[at : at + 2], "big")
        if at + 2 + length > len(data):
            raise TileError(f"entry bundle truncated in entry {len(entries)}")
        entries.append(data[at + 2 : at + 2 + length])
        at += 2 + length
    return entries


def _write_atomically(path: Path, data: bytes) -> None:
    """Write ``path`` whole or not at all: a temporary file, its bytes on disk (fsync),
    renamed over ``path`` (the rename is durable once the directory is synced)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with temporary.open("wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)


def _sync_directories(out_dir: Path, paths: Sequence[str]) -> None:
    """fsync each directory of ``out_dir`` that holds one of ``paths`` (relative), and each
    directory above it up to ``out_dir``: the renames and the directories made are on disk.
    Deepest first, each once."""
    directories = {out_dir}
    for relative in paths:
        parent = (out_dir / relative).parent
        while parent != out_dir and parent not in directories:
            directories.add(parent)
            parent = parent.parent
    for directory in sorted(directories, key=lambda d: (-len(d.parts), str(d))):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def published_size(out_dir: Path) -> int:
    """The tree size of the checkpoint published in ``out_dir`` (0 when there is none).
    The signature is not checked here: the caller publishes its own log."""
    path = out_dir / "checkpoint"
    if not path.exists():
        return 0
    try:
        text, _ = note.parse(path.read_bytes())
        return checkpoints.parse(text).size
    except (NoteError, CheckpointError) as exc:
        raise TileError(f"{path} is not a checkpoint: {exc}") from exc


def _batches(tiles: Sequence[Tile]) -> Iterator[Sequence[Tile]]:
    for at in range(0, len(tiles), _BATCH_TILES):
        yield tiles[at : at + _BATCH_TILES]


def _check_checkpoint(signed: bytes, size: int, read: merkle.HashReader) -> None:
    try:
        head = checkpoints.parse(note.parse(signed)[0])
    except (NoteError, CheckpointError) as exc:
        raise TileError(f"not a signed checkpoint: {exc}") from exc
    if head.size != size or head.root != merkle.tree_hash(size, read):
        raise TileError(f"the checkpoint (size {head.size}) is not the tree of {size} entries")


def write_tiles(
    out_dir: Path,
    old_size: int,
    new_size: int,
    read_hashes: merkle.HashReader,
    read_entries: EntryReader,
    checkpoint: bytes,
) -> list[str]:
    """Publish the log of ``new_size`` entries into ``out_dir``, where the log of
    ``old_size`` entries was published before: write the tiles and entry bundles that are
    new or grew, each atomically and synced (temp file, fsync, rename), and sync their
    directories; then the signed ``checkpoint`` (the same way); then remove partial tiles a
    full tile replaced. Each bundle's entries are
    checked against the leaf hashes of its tile. Returns the paths written, relative to
    ``out_dir``, checkpoint last."""
    _check_checkpoint(checkpoint, new_size, read_hashes)
    written: list[str] = []
    tiles = new_tiles(old_size, new_size)
    for batch in _batches(tiles):
        contents = read_tiles(batch, read_hashes)
        for tile, data in zip(batch, contents, strict=True):
            _write_atomically(out_dir / tile.path, data)
            written.append(tile.path)
        leaves = [(t, data) for t, data in zip(batch, contents, strict=True) if t.level == 0]
        if leaves:
            written.extend(_write_bundles(out_dir, leaves, read_entries))
    # The tiles and bundles are on disk, renames included, before the checkpoint that
    # points at them: a crash never leaves a checkpoint whose tiles are missing.
    _sync_directories(out_dir, written)
    _write_atomically(out_dir / "checkpoint", checkpoint)
    _sync_directories(out_dir, ["checkpoint"])
    written.append("checkpoint")
    for tile in tiles:
        if tile.full:
            for level in (tile.level, ENTRIES) if tile.level == 0 else (tile.level,):
                partials = out_dir / f"{Tile(level, tile.n).path}.p"
                shutil.rmtree(partials, ignore_errors=True)
    return written


def _write_bundles(
    out_dir: Path, leaves: Sequence[tuple[Tile, bytes]], read_entries: EntryReader
) -> list[str]:
    """The entry bundles of consecutive level-0 tiles (with one read of their entries),
    each entry checked against its leaf hash."""
    start = leaves[0][0].start
    end = leaves[-1][0].start + leaves[-1][0].width
    entries = list(read_entries(start, end))
    if len(entries) != end - start:
        raise TileError(
            f"entries {start}..{end - 1}: the reader returned {len(entries)} entries "
            f"for {end - start}"
        )
    written = []
    for tile, hashes in leaves:
        mine = entries[tile.start - start : tile.start - start + tile.width]
        for i, entry in enumerate(mine):
            if merkle.leaf_hash(entry) != hashes[32 * i : 32 * (i + 1)]:
                raise TileError(f"entry {tile.start + i} does not hash to its leaf in the tree")
        bundle_tile = Tile(ENTRIES, tile.n, tile.width)
        _write_atomically(out_dir / bundle_tile.path, bundle(mine))
        written.append(bundle_tile.path)
    return written
