"""Where a corpus's revisions sit in the log: each one's entry index, and the size and
origin of the first checkpoint that covers it (the one a reader asks for its inclusion
proof against, and the log it belongs to). All are fixed once the checkpoint is recorded,
so a document that carries them is the same at every later push."""

from __future__ import annotations

from bisect import bisect_right
from typing import NamedTuple

from warehouse.store import Warehouse
from warehouse.tlog import store
from warehouse.tlog.entries import REVISION_KINDS


class LogPosition(NamedTuple):
    entry: int
    tree_size: int | None  # None until a checkpoint covers the entry
    origin: str | None = None  # that checkpoint's origin line


def corpus_positions(warehouse: Warehouse, corpus: str) -> dict[tuple[str, int], LogPosition]:
    """The position of every logged revision of ``corpus``'s members, by (doc_id, revision)."""
    con = warehouse._con
    if not store.has_log(con):
        return {}
    kinds = ", ".join(f"'{k}'" for k in REVISION_KINDS)
    rows = con.execute(
        f"SELECT doc_id, revision, min(idx) FROM {store.ENTRIES} "
        f"WHERE kind IN ({kinds}) AND doc_id IN "
        "(SELECT doc_id FROM corpus_members WHERE corpus = $c) GROUP BY ALL",
        {"c": corpus},
    ).fetchall()
    covering = store.covering_checkpoint_sizes(con)
    sizes = [size for size, _ in covering]
    out = {}
    for doc_id, revision, index in rows:
        at = bisect_right(sizes, int(index))
        size, origin = covering[at] if at < len(covering) else (None, None)
        out[(str(doc_id), int(revision))] = LogPosition(int(index), size, origin)
    return out


def corpus_current(warehouse: Warehouse, corpus: str) -> list[tuple[str, int]]:
    """The current revision of every member of ``corpus``, tombstones included: what a push
    publishes, or removes from the target."""
    rows = warehouse._con.execute(
        "SELECT doc_id, max(revision) FROM revisions WHERE doc_id IN "
        "(SELECT doc_id FROM corpus_members WHERE corpus = $c) GROUP BY doc_id",
        {"c": corpus},
    ).fetchall()
    return [(str(d), int(r)) for d, r in rows]
