"""Small trees for the log's tests: stored hashes kept in a list, read back through a
HashReader that counts its calls, and RFC 6962's definitions written as the RFC states them
(recursive, no stored hashes), to hold the fast algorithms against."""

from __future__ import annotations

from collections.abc import Sequence

from warehouse.tlog import merkle


class StoredTree:
    """A log whose stored hashes sit in a list, appended through ``stored_hashes``."""

    def __init__(self, entries: Sequence[bytes] = ()) -> None:
        self.hashes: list[bytes] = []
        self.entries: list[bytes] = []
        self.reads: list[list[int]] = []
        for entry in entries:
            self.append(entry)

    def read(self, indexes: Sequence[int]) -> list[bytes]:
        self.reads.append(list(indexes))
        return [self.hashes[i] for i in indexes]

    def append(self, entry: bytes) -> None:
        self.hashes.extend(merkle.stored_hashes(len(self.entries), entry, self.read))
        self.entries.append(entry)

    @property
    def size(self) -> int:
        return len(self.entries)


def entries(n: int) -> list[bytes]:
    """``n`` distinct entries of varied length."""
    return [f"entry {i}".encode() * (1 + i % 3) for i in range(n)]


def _split(n: int) -> int:
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def mth(leaves: Sequence[bytes]) -> bytes:
    """RFC 6962 section 2.1: MTH(D[n])."""
    if not leaves:
        return merkle.EMPTY_TREE_HASH
    if len(leaves) == 1:
        return merkle.leaf_hash(leaves[0])
    k = _split(len(leaves))
    return merkle.node_hash(mth(leaves[:k]), mth(leaves[k:]))


def path(m: int, leaves: Sequence[bytes]) -> list[bytes]:
    """RFC 6962 section 2.1.1: PATH(m, D[n])."""
    if len(leaves) == 1:
        return []
    k = _split(len(leaves))
    if m < k:
        return [*path(m, leaves[:k]), mth(leaves[k:])]
    return [*path(m - k, leaves[k:]), mth(leaves[:k])]


def subproof(m: int, leaves: Sequence[bytes], whole: bool) -> list[bytes]:
    """RFC 6962 section 2.1.2: SUBPROOF(m, D[n], b)."""
    n = len(leaves)
    if m == n:
        return [] if whole else [mth(leaves)]
    k = _split(n)
    if m <= k:
        return [*subproof(m, leaves[:k], whole), mth(leaves[k:])]
    return [*subproof(m - k, leaves[k:], False), mth(leaves[:k])]
