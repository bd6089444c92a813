"""The log's Merkle tree (RFC 6962 section 2.1, RFC 9162 section 2.1), kept as a flat,
append-only sequence of "stored hashes", the layout of Go's ``golang.org/x/mod/sumdb/tlog``
(https://pkg.go.dev/golang.org/x/mod/sumdb/tlog).

Every complete subtree of the tree has one stored hash: the hash of the subtree at ``level``
(a leaf is level 0, a node over 2**L leaves is level L) and position ``n`` within its level.
When record ``n`` is appended, its leaf hash is stored, followed by the hash of every subtree
that leaf completes, lowest level first. Nothing stored is ever rewritten, so a warehouse
keeps the tree in an append-only table keyed by the stored-hash index.

Everything here is pure: hashes are read through a ``HashReader`` (stored-hash indexes in,
hashes out, in the same order), which the warehouse answers with one SQL query. Each function
that reads makes one call of O(log n) indexes.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence

# Re-exported: callers catch merkle.ProofError.
from warehouse.tlog.errors import ProofError as ProofError

HashReader = Callable[[Sequence[int]], Sequence[bytes]]

HASH_SIZE = 32
# RFC 6962 section 2.1: the domain separation of leaves and interior nodes.
_LEAF_PREFIX = b"\x00"
_NODE_PREFIX = b"\x01"
# RFC 9162 section 2.1.1: the hash of an empty list is the hash of the empty string.
EMPTY_TREE_HASH = hashlib.sha256(b"").digest()
_sha256 = hashlib.sha256


def leaf_hash(entry: bytes) -> bytes:
    """The hash of a log entry as a leaf: SHA-256(0x00 || entry)."""
    return hashlib.sha256(_LEAF_PREFIX + entry).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """The hash of an interior node: SHA-256(0x01 || left || right)."""
    return hashlib.sha256(_NODE_PREFIX + left + right).digest()


def stored_hash_index(level: int, n: int) -> int:
    """Where the hash of the ``n``-th subtree of ``level`` sits in the stored sequence.

    That subtree ends with leaf ``m = (n + 1) * 2**level - 1``; it is stored right after the
    leaf's own hash and the hashes of the lower subtrees that leaf completes. Before leaf
    ``m`` come ``m`` records of stored hashes, ``2m - popcount(m)`` in all.
    """
    if level < 0 or n < 0:
        raise ValueError(f"no stored hash at level {level}, position {n}")
    last = ((n + 1) << level) - 1
    return 2 * last - last.bit_count() + level


def split_stored_hash_index(index: int) -> tuple[int, int]:
    """The (level, position) of the subtree whose hash is stored at ``index``."""
    if index < 0:
        raise ValueError(f"no stored hash at index {index}")
    # The record whose append stored this hash is the last one whose leaf sits at or before
    # it: leaf m is at 2m - popcount(m) >= m, so m lies in [index / 2, index].
    lo, hi = index // 2, index
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if 2 * mid - mid.bit_count() <= index:
            lo = mid
        else:
            hi = mid - 1
    level = index - (2 * lo - lo.bit_count())
    return level, ((lo + 1) >> level) - 1


def stored_hash_count(n: int) -> int:
    """How many hashes a tree of ``n`` records stores: ``2n - popcount(n)``."""
    if n < 0:
        raise ValueError(f"no tree of {n} records")
    return 2 * n - n.bit_count()


def _read(read: HashReader, indexes: Sequence[int]) -> list[bytes]:
    if not indexes:
        return []
    hashes = list(read(indexes))
    if len(hashes) != len(indexes):
        raise ValueError(f"hash reader returned {len(hashes)} hashes for {len(indexes)} indexes")
    return hashes


def _trailing_ones(n: int) -> int:
    return (~n & (n + 1)).bit_length() - 1


def stored_hashes(n: int, entry: bytes, read: HashReader) -> list[bytes]:
    """The hashes to store, in order, when record ``n`` is appended to a tree of ``n``
    records: its leaf hash, then one hash per subtree the leaf completes (one read of the
    left siblings)."""
    if n < 0:
        raise ValueError(f"no record {n}")
    levels = _trailing_ones(n)
    siblings = _read(read, [stored_hash_index(level, (n >> level) - 1) for level in range(levels)])
    hashes = [leaf_hash(entry)]
    for sibling in siblings:
        hashes.append(node_hash(sibling, hashes[-1]))
    return hashes


def _subtrees(lo: int, hi: int) -> list[tuple[int, int]]:
    """The maximal complete subtrees covering records ``[lo, hi)``, left to right, as
    (level, position). The ranges the proofs use start at a multiple of a power of two no
    smaller than their width, so these are the subtrees RFC 6962's recursion reaches."""
    found = []
    while lo < hi:
        level = (hi - lo).bit_length() - 1
        while lo % (1 << level):
            level -= 1
        found.append((level, lo >> level))
        lo += 1 << level
    return found


def _fold(hashes: Sequence[bytes]) -> bytes:
    """The root over complete subtrees given left to right, largest first (RFC 6962's MTH
    splits at the largest power of two, so the rightmost subtrees join first)."""
    root = hashes[-1]
    for left in reversed(hashes[:-1]):
        root = node_hash(left, root)
    return root


def _range_hashes(ranges: Sequence[tuple[int, int]], read: HashReader) -> list[bytes]:
    """The Merkle tree hash of each ``[lo, hi)`` of ``ranges``, with one read."""
    covers = [_subtrees(lo, hi) for lo, hi in ranges]
    stored = _read(read, [stored_hash_index(level, n) for cover in covers for level, n in cover])
    result, at = [], 0
    for cover in covers:
        result.append(_fold(stored[at : at + len(cover)]))
        at += len(cover)
    return result


def tree_hash(n: int, read: HashReader) -> bytes:
    """The root hash of the tree of the first ``n`` records (RFC 6962's MTH; the hash of the
    empty string for an empty tree, per RFC 9162 section 2.1.1)."""
    if n < 0:
        raise ValueError(f"no tree of {n} records")
    if n == 0:
        return EMPTY_TREE_HASH
    return _range_hashes([(0, n)], read)[0]


def _split(width: int) -> int:
    """The largest power of two smaller than ``width`` (``width >= 2``)."""
    return 1 << ((width - 1).bit_length() - 1)


def _record_ranges(t: int, n: int) -> list[tuple[int, int]]:
    """The subtrees whose hashes prove record ``n`` in tree ``t``: RFC 6962 section 2.1.1's
    PATH(n, D[0:t]), listed from the leaf up."""
    ranges = []
    lo, hi = 0, t
    while hi - lo > 1:
        k = 1 << ((hi - lo - 1).bit_length() - 1)  # _split, inlined: bulk proofs call this a lot
        if n < lo + k:
            ranges.append((lo + k, hi))
            hi = lo + k
        else:
            ranges.append((lo, lo + k))
            lo += k
    ranges.reverse()
    return ranges


def prove_record(t: int, n: int, read: HashReader) -> list[bytes]:
    """The inclusion proof of record ``n`` in the tree of ``t`` records (RFC 6962 2.1.1)."""
    if not 0 <= n < t:
        raise ValueError(f"no record {n} in a tree of {t} records")
    return _range_hashes(_record_ranges(t, n), read)


def record_paths(
    t: int, ns: Sequence[int], read: HashReader
) -> tuple[dict[int, tuple[tuple[int, int], ...]], dict[tuple[int, int], bytes]]:
    """The inclusion proofs of many records of the tree of ``t`` records, as each proof's
    subtrees (``[lo, hi)`` ranges, from the leaf up) and every distinct subtree's hash, with
    one read of the stored hashes. The tree is walked once from the root down to the wanted
    records: the part of a path several proofs share (every path shares the top of the
    tree) is worked out once, and its subtrees hashed once."""
    wanted = sorted(set(ns))
    for n in wanted[:1] + wanted[-1:]:
        if not 0 <= n < t:
            raise ValueError(f"no record {n} in a tree of {t} records")
    paths: dict[int, tuple[tuple[int, int], ...]] = {}
    # every sibling's stored-hash index, where it is a complete subtree (all of them but
    # those along the right edge of the tree), else the ones its hash is folded from
    whole: dict[tuple[int, int], int] = {}
    partial: list[tuple[int, int]] = []
    # (lo, hi, first, end, path): the subtree [lo, hi) holds wanted[first:end]; ``path`` is
    # its siblings' ranges from it up to the root. Each ``lo`` is a multiple of the
    # subtree's width rounded up to a power of two, so a left sibling is always complete.
    todo: list[tuple[int, int, int, int, tuple[tuple[int, int], ...]]] = []
    if wanted:
        todo.append((0, t, 0, len(wanted), ()))
    while todo:
        lo, hi, first, end, path = todo.pop()
        if hi - lo == 1:
            paths[lo] = path
            continue
        level = (hi - lo - 1).bit_length() - 1
        mid = lo + (1 << level)  # _split, inlined
        cut = bisect_left(wanted, mid, first, end)
        if first < cut:
            if hi - mid == mid - lo:  # stored_hash_index(level, mid >> level), inlined
                whole[(mid, hi)] = 2 * (hi - 1) - (hi - 1).bit_count() + level
            else:
                partial.append((mid, hi))
            todo.append((lo, mid, first, cut, ((mid, hi), *path)))
        if cut < end:
            whole[(lo, mid)] = 2 * (mid - 1) - (mid - 1).bit_count() + level
            todo.append((mid, hi, cut, end, ((lo, mid), *path)))
    covers = [_subtrees(lo, hi) for lo, hi in partial]
    folded = [stored_hash_index(level, n) for cover in covers for level, n in cover]
    stored = _read(read, [*whole.values(), *folded])
    hashes = dict(zip(whole, stored, strict=False))
    at = len(whole)
    for sibling, cover in zip(partial, covers, strict=True):
        hashes[sibling] = _fold(stored[at : at + len(cover)])
        at += len(cover)
    return paths, hashes


def prove_records(t: int, ns: Sequence[int], read: HashReader) -> dict[int, list[bytes]]:
    """:func:`prove_record` for each of ``ns``, in bulk (:func:`record_paths`)."""
    paths, hashes = record_paths(t, ns, read)
    return {n: [hashes[r] for r in ranges] for n, ranges in paths.items()}


def root_from_leaves(t: int, leaves: Mapping[int, bytes], read: HashReader) -> bytes:
    """The root hash of the tree of ``t`` records worked out from ``leaves`` (record number
    to leaf hash) and, for every subtree holding none of them, its stored hash (or the
    stored hashes it folds from), with one read.

    It is the root of a tree that holds each of ``leaves`` at its number: when it equals a
    root the log signed, each of them is in that tree, as its inclusion proof would show
    (the proofs' hashes are the stored ones read here). Checking many records this way
    hashes each node on their paths once, where a proof per record hashes the shared top of
    the tree again for each (RFC 6962's MTH, walked down to the records only)."""
    wanted = sorted(leaves)
    for n in wanted[:1] + wanted[-1:]:
        if not 0 <= n < t:
            raise ValueError(f"no record {n} in a tree of {t} records")
    if not wanted:
        return tree_hash(t, read)
    needed: list[int] = []

    def gather(lo: int, hi: int, first: int, end: int) -> None:
        if first == end:
            needed.extend(stored_hash_index(level, n) for level, n in _subtrees(lo, hi))
        elif hi - lo > 1:
            mid = lo + _split(hi - lo)
            cut = bisect_left(wanted, mid, first, end)
            gather(lo, mid, first, cut)
            gather(mid, hi, cut, end)

    gather(0, t, 0, len(wanted))
    stored = iter(_read(read, needed))  # consumed in the order gather listed them

    def compute(lo: int, hi: int, first: int, end: int) -> bytes:
        if first == end:
            return _fold([next(stored) for _ in _subtrees(lo, hi)])
        if hi - lo == 1:
            return leaves[lo]
        mid = lo + _split(hi - lo)
        cut = bisect_left(wanted, mid, first, end)
        left = compute(lo, mid, first, cut)
        return node_hash(left, compute(mid, hi, cut, end))

    return compute(0, t, 0, len(wanted))


def _tree_ranges(t: int, n: int) -> list[tuple[int, int]]:
    """The subtrees whose hashes prove that tree ``n`` is a prefix of tree ``t``: RFC 6962
    section 2.1.2's SUBPROOF(n, D[0:t], true), listed from the bottom up."""
    ranges = []
    lo, hi, whole = 0, t, True
    while n != hi:
        k = _split(hi - lo)
        if n <= lo + k:
            ranges.append((lo + k, hi))
            hi = lo + k
        else:
            ranges.append((lo, lo + k))
            lo += k
            whole = False
    if not whole:
        ranges.append((lo, hi))
    ranges.reverse()
    return ranges


def prove_tree(t: int, n: int, read: HashReader) -> list[bytes]:
    """The consistency proof that the tree of ``n`` records is a prefix of the tree of ``t``
    records (RFC 6962 2.1.2); empty when ``n == t``."""
    if not 1 <= n <= t:
        raise ValueError(f"no consistency proof from a tree of {n} records to one of {t}")
    return _range_hashes(_tree_ranges(t, n), read)


def _check_hashes(proof: Sequence[bytes], *hashes: bytes) -> None:
    for value in (*proof, *hashes):
        if not isinstance(value, bytes | bytearray) or len(value) != HASH_SIZE:
            raise ProofError(f"a hash in the proof is not {HASH_SIZE} bytes")


def _climb(path: Sequence[bytes], fn: int, sn: int, start: bytes, what: str) -> tuple[bytes, bytes]:
    """RFC 9162's walk up the tree (sections 2.1.3.2 and 2.1.4.2) from node ``fn`` of a
    tree whose last node is ``sn``: the root reached over the nodes left of the path only
    (the old tree, for a consistency proof), and the root reached over the whole path."""
    fr = sr = start
    for c in path:
        if sn == 0:
            raise ProofError(f"{what} is longer than the tree needs")
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            while fn and not fn & 1:
                fn >>= 1
                sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise ProofError(f"{what} is shorter than the tree needs")
    return fr, sr


def check_record(proof: Sequence[bytes], t: int, th: bytes, n: int, h: bytes) -> None:
    """Check that ``proof`` shows the tree of ``t`` records with root ``th`` holds ``h`` as
    the hash of record ``n``; raise ProofError if it does not. The steps are RFC 9162
    section 2.1.3.2's, independent of how ``prove_record`` builds the proof."""
    if not 0 <= n < t:
        raise ProofError(f"record {n} is not in a tree of {t} records")
    _check_hashes(proof, th, h)
    what = f"the inclusion proof of record {n} in tree {t}"
    if _climb(proof, n, t - 1, h, what)[1] != th:
        raise ProofError(f"{what} does not lead to the tree's root")


def check_tree(proof: Sequence[bytes], t: int, th: bytes, n: int, h: bytes) -> None:
    """Check that ``proof`` shows the tree of ``t`` records with root ``th`` extends the tree
    of ``n`` records with root ``h``; raise ProofError if it does not (RFC 9162 section
    2.1.4.2)."""
    if not 1 <= n <= t:
        raise ProofError(f"no consistency proof from a tree of {n} records to one of {t}")
    _check_hashes(proof, th, h)
    if n == t:
        if proof:
            raise ProofError(f"the consistency proof of tree {n} with itself is not empty")
        if th != h:
            raise ProofError(f"two different roots for the same tree size {n}")
        return
    what = f"the consistency proof from tree {n} to tree {t}"
    if not proof:
        raise ProofError(f"{what} is empty")
    path = list(proof)
    if n & (n - 1) == 0:  # an exact power of two: the old tree is itself a subtree
        path.insert(0, h)
    fn, sn = n - 1, t - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr, sr = _climb(path[1:], fn, sn, path[0], what)
    if fr != h:
        raise ProofError(f"{what} does not lead to tree {n}'s root")
    if sr != th:
        raise ProofError(f"{what} does not lead to tree {t}'s root")


class Appender:
    """Appends records in bulk: keeps the right edge of the tree (one hash per complete
    subtree of the current tree, O(log n) of them) in memory, so each append hashes without
    reading anything. The edge is read once, when the appender is made."""

    def __init__(self, size: int, read: HashReader) -> None:
        if size < 0:
            raise ValueError(f"no tree of {size} records")
        self.size = size
        self._edge = _read(read, [stored_hash_index(lv, n) for lv, n in _subtrees(0, size)])

    def append(self, entry: bytes) -> list[tuple[int, bytes]]:
        """Append one entry; the (stored index, hash) pairs to store, in index order."""
        n = self.size
        index = 2 * n - n.bit_count()  # stored_hash_count(n), inlined: this is the hot loop
        h = _sha256(_LEAF_PREFIX + entry).digest()
        stored = [(index, h)]
        edge = self._edge
        while n & 1:  # each trailing one of n is a subtree this leaf completes
            n >>= 1
            index += 1
            h = _sha256(_NODE_PREFIX + edge.pop() + h).digest()
            stored.append((index, h))
        edge.append(h)
        self.size += 1
        return stored

    def extend(self, entries: Sequence[bytes]) -> list[tuple[int, int, list[bytes]]]:
        """Append many entries at once; the hashes to store, a level at a time: for each
        level, lowest first, ``(level, position of the first, hashes)`` of the subtrees the
        entries complete there (their stored-hash indexes are :func:`stored_hash_index`).
        The same hashes as :meth:`append` gives entry by entry, hashed a level at a time
        (a list comprehension per level: about twice as fast in bulk)."""
        old, new = self.size, self.size + len(entries)
        if old == new:
            return []
        # The old tree's maximal complete subtrees: one per one-bit of its size.
        before = {level: h for (level, _), h in zip(_subtrees(0, old), self._edge, strict=True)}
        sha, leaf, node = _sha256, _LEAF_PREFIX, _NODE_PREFIX
        hashes = [sha(leaf + entry).digest() for entry in entries]
        levels = [(0, old, hashes)]
        level, first = 0, old
        while (new >> (level + 1)) > (old >> (level + 1)):
            if first & 1:  # the first one's left sibling was complete before
                hashes = [before[level], *hashes]
            lo, count = old >> (level + 1), (new >> (level + 1)) - (old >> (level + 1))
            hashes = [sha(node + hashes[2 * i] + hashes[2 * i + 1]).digest() for i in range(count)]
            level, first = level + 1, lo
            levels.append((level, first, hashes))
        runs = {lv: (start, run) for lv, start, run in levels}
        edge = []
        for lv, n in _subtrees(0, new):
            start, run = runs.get(lv, (n + 1, []))
            edge.append(run[n - start] if n >= start else before[lv])
        self._edge, self.size = edge, new
        return levels

    def root(self) -> bytes:
        """The root hash of the tree as it stands (no read)."""
        return _fold(self._edge) if self._edge else EMPTY_TREE_HASH
