"""Static tiles (C2SP tlog-tiles): paths, which tiles a tree has, their contents, entry
bundles, and the incremental publish."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.tlog.trees import StoredTree, entries, mth
from warehouse.tlog import checkpoint, merkle, note, tiles
from warehouse.tlog.errors import TileError
from warehouse.tlog.tiles import ENTRIES, Tile

ORIGIN = "receipts.example/log"


@pytest.mark.parametrize(
    ("n", "encoded"),
    [
        (0, "000"),
        (7, "007"),
        (999, "999"),
        (1000, "x001/000"),
        (1234067, "x001/x234/067"),  # the spec's example
        (1_000_000_000, "x001/x000/x000/000"),
    ],
)
def test_tile_indexes_are_encoded_as_the_spec_says(n: int, encoded: str) -> None:
    assert tiles.encode_index(n) == encoded
    assert tiles.parse_path(f"tile/3/{encoded}") == Tile(3, n)
    assert tiles.parse_path(f"tile/entries/{encoded}.p/9") == Tile(ENTRIES, n, 9)


def test_tile_paths() -> None:
    assert Tile(0, 1234067).path == "tile/0/x001/x234/067"
    assert Tile(2, 5, 17).path == "tile/2/005.p/17"
    assert Tile(ENTRIES, 1000, 255).path == "tile/entries/x001/000.p/255"


@pytest.mark.parametrize(
    "path",
    [
        "tile/0/1",
        "tile/0/0001",
        "tile/00/001",
        "tile/64/001",
        "tile/0/001.p/256",
        "tile/0/001.p/0",
        "tile/0/001.p/07",
        "tile/0/x000/001",
        "tile/0/001/x002",
        "tile/data/001",
        "checkpoint",
    ],
)
def test_malformed_tile_paths_are_refused(path: str) -> None:
    with pytest.raises(TileError):
        tiles.parse_path(path)


def _widths(found: Sequence[Tile]) -> dict[int, list[int]]:
    by_level: dict[int, list[int]] = {}
    for tile in found:
        by_level.setdefault(tile.level, []).append(tile.width)
    return by_level


def test_the_tiles_of_the_specs_examples() -> None:
    # c2sp.org/tlog-tiles: a tree of 70,000 has 273 full level-0 tiles and one of width 112,
    # one full level-1 tile and one of width 17, and one level-2 tile of width 1.
    widths = _widths(tiles.new_tiles(0, 70_000))
    assert widths == {0: [256] * 273 + [112], 1: [256, 17], 2: [1]}
    # ... and a tree of 256 has a full level-0 tile and a level-1 tile of width 1.
    assert tiles.new_tiles(0, 256) == [Tile(0, 0), Tile(1, 0, 1)]


def test_new_tiles_are_those_new_or_grown() -> None:
    assert tiles.new_tiles(100, 100) == []
    assert tiles.new_tiles(100, 101) == [Tile(0, 0, 101)]
    assert tiles.new_tiles(250, 600) == [Tile(0, 0), Tile(0, 1), Tile(0, 2, 88), Tile(1, 0, 2)]
    assert tiles.new_tiles(512, 513) == [Tile(0, 2, 1)]
    with pytest.raises(TileError, match="cannot shrink"):
        tiles.new_tiles(10, 9)


SIZE = 3 * 256 + 17


@pytest.fixture(scope="module")
def tree() -> StoredTree:
    return StoredTree(entries(SIZE))


def test_tile_hashes_are_the_specs_subtree_hashes(tree: StoredTree) -> None:
    found = tiles.new_tiles(0, SIZE)
    assert [t.path for t in found] == [
        "tile/0/000",
        "tile/0/001",
        "tile/0/002",
        "tile/0/003.p/17",
        "tile/1/000.p/3",
    ]
    contents = tiles.read_tiles(found, tree.read)
    assert len(tree.reads[-1]) == 3 * 256 + 17 + 3
    for tile, data in zip(found, contents, strict=True):
        assert len(data) == 32 * tile.width
        span = 256**tile.level
        for i in range(tile.width):
            start = (tile.start + i) * span
            assert data[32 * i : 32 * (i + 1)] == mth(tree.entries[start : start + span])


def test_bundles_round_trip() -> None:
    sample = [b"", b"x", bytes(range(256)) * 3, b"\x00" * 65535]
    data = tiles.bundle(sample)
    assert data[:2] == b"\x00\x00" and data[2:4] == b"\x00\x01"
    assert tiles.unbundle(data) == sample
    with pytest.raises(TileError, match="65536 bytes"):
        tiles.bundle([b"\x00" * 65536])
    with pytest.raises(TileError, match="truncated"):
        tiles.unbundle(data[:-1])


def _signed(tree: StoredTree, size: int, signer: note.Signer) -> bytes:
    head = checkpoint.Checkpoint(ORIGIN, size, merkle.tree_hash(size, tree.read))
    return checkpoint.sign(head, signer)


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def _publish(out: Path, tree: StoredTree, old: int, new: int, signer: note.Signer) -> list[str]:
    def read_entries(start: int, end: int) -> list[bytes]:
        assert end <= new
        return tree.entries[start:end]

    return tiles.write_tiles(out, old, new, tree.read, read_entries, _signed(tree, new, signer))


def test_publishing_writes_only_what_is_new_then_the_checkpoint(
    tmp_path: Path, tree: StoredTree
) -> None:
    signer = note.Signer.generate(ORIGIN)
    first = _publish(tmp_path, tree, 0, 300, signer)
    assert first == [
        "tile/0/000",
        "tile/0/001.p/44",
        "tile/1/000.p/1",
        "tile/entries/000",
        "tile/entries/001.p/44",
        "checkpoint",
    ]
    assert tiles.published_size(tmp_path) == 300
    second = _publish(tmp_path, tree, 300, SIZE, signer)
    assert second == [
        "tile/0/001",
        "tile/0/002",
        "tile/0/003.p/17",
        "tile/1/000.p/3",
        "tile/entries/001",
        "tile/entries/002",
        "tile/entries/003.p/17",
        "checkpoint",
    ]
    # The partial tiles a full one replaced are gone; the rest serve both checkpoints.
    assert _files(tmp_path) == {
        "checkpoint",
        "tile/0/000",
        "tile/0/001",
        "tile/0/002",
        "tile/0/003.p/17",
        "tile/1/000.p/1",
        "tile/1/000.p/3",
        "tile/entries/000",
        "tile/entries/001",
        "tile/entries/002",
        "tile/entries/003.p/17",
    }
    assert _publish(tmp_path, tree, SIZE, SIZE, signer) == ["checkpoint"]
    for path in _files(tmp_path) - {"checkpoint"}:
        tile = tiles.parse_path(path)
        data = (tmp_path / path).read_bytes()
        if tile.level == ENTRIES:
            assert tiles.unbundle(data) == tree.entries[tile.start : tile.start + tile.width]
        else:
            assert data == tiles.read_tiles([tile], tree.read)[0]
    opened = checkpoint.open((tmp_path / "checkpoint").read_bytes(), [signer.verifier], ORIGIN)
    assert opened.size == SIZE


def test_a_checkpoint_of_another_tree_is_not_published(tmp_path: Path, tree: StoredTree) -> None:
    signer = note.Signer.generate(ORIGIN)
    with pytest.raises(TileError, match=r"checkpoint \(size 300\) is not the tree of 301"):
        tiles.write_tiles(
            tmp_path, 0, 301, tree.read, lambda s, e: tree.entries[s:e], _signed(tree, 300, signer)
        )
    assert not tmp_path.joinpath("checkpoint").exists()


def test_entries_that_disagree_with_the_tree_are_not_published(
    tmp_path: Path, tree: StoredTree
) -> None:
    signer = note.Signer.generate(ORIGIN)

    def altered(start: int, end: int) -> list[bytes]:
        found = list(tree.entries[start:end])
        if start <= 42 < end:
            found[42 - start] = b"rewritten"
        return found

    with pytest.raises(TileError, match="entry 42 does not hash to its leaf"):
        tiles.write_tiles(tmp_path, 0, 300, tree.read, altered, _signed(tree, 300, signer))
    assert not tmp_path.joinpath("checkpoint").exists()
