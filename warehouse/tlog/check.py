"""Whether the log and the rows agree.

:func:`check_log` rebuilds everything (``receipts log verify``, ``receipts verify``): every
revision's entry from its rows and every push's from its receipt, compared with the stored
entries (an entry not stored, migration 0012: its hash with the stored leaf); the tree's
stored hashes computed again from the entries (from the stored leaf of an entry not stored);
each checkpoint's root against the rebuilt tree. A problem names the entry (its index) where
the log and the rows part, the first one first.

:func:`check_revisions` checks only the revisions a command is about to serve (``show``,
``export``, ``publish``), in O(log n) reads each: the revision's row rebuilt into its entry
and compared with the stored one (when stored), the entry's leaf hash with the stored leaf
(for an entry not stored, a difference is a rewritten row), the leaf with the latest
checkpoint's root by an inclusion proof (or, for an entry the latest checkpoint does not
cover yet, with the root of the stored tree), and the document's rows counted against its
entries (a deleted or duplicated revision row).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb

from warehouse.errors import LogMismatch
from warehouse.row_hints import source
from warehouse.store import Warehouse
from warehouse.tlog import merkle, store
from warehouse.tlog.appends import PUSH_ROWS, push_entry_of_row
from warehouse.tlog.entries import REVISION_KINDS
from warehouse.tlog.entries_sql import ROW_COLUMNS, revision_entry, rows_with_context

_KINDS = ", ".join(f"'{k}'" for k in REVISION_KINDS)


def _problem(
    check: str, index: int | None, doc_id: str | None, revision: int | None, message: str
) -> dict[str, Any]:
    return {
        "check": check,
        "index": index,
        "doc_id": doc_id,
        "revision": revision,
        "message": message,
    }


@dataclass
class LogReport:
    size: int
    checkpoints: int
    problems: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _entry_label(index: int | None) -> str:
    return "not in the log" if index is None else f"entry {index}"


# Every revision row rebuilt into its entry.
_REBUILT = (
    "CREATE OR REPLACE TEMP TABLE _tlog_rebuilt AS SELECT r.doc_id, r.revision, "
    f"{revision_entry(ROW_COLUMNS)} AS entry " + rows_with_context(where="true", docs="true")
)

# A stored leaf: the hash stored for entry ``e.idx``.
_LEAF = f"LEFT JOIN {store.HASHES} h ON h.idx = {store.stored_index_sql(0, 'e.idx')}"

# An entry stored is compared with the one rebuilt from its rows; one not stored (migration
# 0012), its leaf hash with the rebuilt one's.
_ENTRY_PROBLEMS = f"""
WITH e AS (SELECT e.idx, e.doc_id, e.revision, e.entry, h.hash AS leaf
           FROM {store.ENTRIES} e {_LEAF} WHERE e.kind IN ({_KINDS})),
     copies AS (SELECT doc_id, revision, count(*) AS n FROM _tlog_rebuilt GROUP BY ALL),
     logged AS (SELECT doc_id, revision, min(idx) AS first FROM e GROUP BY ALL)
SELECT e.idx, e.doc_id, e.revision, 'deleted' AS what FROM e
WHERE NOT EXISTS (SELECT 1 FROM _tlog_rebuilt r
                  WHERE r.doc_id = e.doc_id AND r.revision = e.revision)
UNION ALL
SELECT e.idx, e.doc_id, e.revision, 'duplicated' FROM e JOIN copies c USING (doc_id, revision)
WHERE c.n > 1
UNION ALL
SELECT e.idx, e.doc_id, e.revision, 'rewritten' FROM e JOIN copies c USING (doc_id, revision)
JOIN _tlog_rebuilt r USING (doc_id, revision)
WHERE c.n = 1 AND CASE WHEN e.entry IS NULL
                       THEN {store.leaf_hash_sql("r.entry")} IS DISTINCT FROM e.leaf
                       ELSE r.entry <> e.entry END
UNION ALL
SELECT e.idx, e.doc_id, e.revision, 'logged twice' FROM e JOIN logged l USING (doc_id, revision)
WHERE e.idx > l.first
UNION ALL
SELECT NULL, r.doc_id, r.revision, 'unlogged' FROM _tlog_rebuilt r
WHERE NOT EXISTS (SELECT 1 FROM e WHERE e.doc_id = r.doc_id AND e.revision = r.revision)
"""

_WHAT = {
    "deleted": "{doc} revision {rev} is in the log but its row is gone (deleted)",
    "duplicated": "{doc} revision {rev} is recorded more than once (a duplicated row)",
    "rewritten": "{doc} revision {rev} differs from its log entry (the row was rewritten)",
    "logged twice": "{doc} revision {rev} has more than one log entry",
    "unlogged": "{doc} revision {rev} has no log entry (a row without its leaf)",
}


def _sequence_problems(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    problems = []
    rows = con.execute(
        f"SELECT idx, count(*) FROM {store.ENTRIES} GROUP BY idx HAVING count(*) > 1 "
        "ORDER BY idx LIMIT 10"
    ).fetchall()
    for idx, n in rows:
        problems.append(_problem("log", int(idx), None, None, f"entry {idx} is stored {n} times"))
    count, top = con.execute(
        f"SELECT count(DISTINCT idx), coalesce(max(idx) + 1, 0) FROM {store.ENTRIES}"
    ).fetchall()[0]
    if int(count) != int(top):
        first_gap = con.execute(
            f"SELECT min(i) FROM range({int(top)}) t(i) "
            f"WHERE i NOT IN (SELECT idx FROM {store.ENTRIES})"
        ).fetchall()[0][0]
        problems.append(
            _problem("log", int(first_gap), None, None, f"entry {first_gap} is missing")
        )
    return problems


def _push_problems(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    problems = []
    rows = {int(r[0]): r for r in con.execute(PUSH_ROWS.format(where="true")).fetchall()}
    logged = con.execute(
        f"SELECT idx, push_id, entry FROM {store.ENTRIES} WHERE kind = 'push' ORDER BY idx"
    ).fetchall()
    seen = set()
    for idx, push_id, entry in logged:
        row = rows.get(int(push_id))
        seen.add(int(push_id))
        if row is None:
            message = f"push {push_id} is in the log but its receipt row is gone (deleted)"
        elif push_entry_of_row(row) != bytes(entry):
            message = f"push {push_id} differs from its log entry (the receipt was rewritten)"
        else:
            continue
        problems.append(_problem("log", int(idx), None, None, f"entry {idx}: {message}"))
    for push_id in sorted(set(rows) - seen):
        problems.append(
            _problem("log", None, None, None, f"push {push_id}'s receipt has no log entry")
        )
    return problems


def _tree_problems(con: duckdb.DuckDBPyConnection, size: int) -> list[dict[str, Any]]:
    """The stored hashes computed again from the stored entries (into ``_tlog_tree``) and
    compared; the first subtree that differs is named by its first leaf. An entry not stored
    has its stored leaf (checked against its rows by :data:`_ENTRY_PROBLEMS`)."""
    con.execute(f"CREATE OR REPLACE TEMP TABLE _tlog_tree AS SELECT * FROM {store.HASHES} LIMIT 0")
    con.execute(
        "CREATE OR REPLACE TEMP VIEW _tlog_all AS SELECT e.idx, "
        f"coalesce({store.leaf_hash_sql('e.entry')}, h.hash) AS leaf FROM {store.ENTRIES} e "
        f"{_LEAF}"
    )
    store.append_hashes(con, 0, size, source="_tlog_all", target="_tlog_tree", hashed=True)
    row = con.execute(
        f"SELECT min(coalesce(t.idx, s.idx)) FROM _tlog_tree t FULL JOIN {store.HASHES} s "
        "USING (idx) WHERE t.hash IS DISTINCT FROM s.hash"
    ).fetchall()[0]
    if row[0] is None:
        return []
    level, n = merkle.split_stored_hash_index(int(row[0]))
    first = n << level
    return [
        _problem(
            "log",
            first,
            None,
            None,
            f"entry {first}: the log's stored tree hash {row[0]} (level {level}) is not the "
            "hash of its entries",
        )
    ]


def _rebuilt_reader(con: duckdb.DuckDBPyConnection) -> merkle.HashReader:
    def read(indexes: Sequence[int]) -> list[bytes]:
        wanted = sorted(set(indexes))
        found = (
            {
                int(i): bytes(h)
                for i, h in con.execute(
                    f"SELECT idx, hash FROM _tlog_tree WHERE idx IN ({', '.join(map(str, wanted))})"
                ).fetchall()
            }
            if wanted
            else {}
        )
        return [found[i] for i in indexes]

    return read


def _checkpoint_problems(con: duckdb.DuckDBPyConnection, size: int) -> list[dict[str, Any]]:
    problems = []
    read = _rebuilt_reader(con)
    rows = con.execute(f"SELECT DISTINCT size, root FROM {store.CHECKPOINTS} ORDER BY size")
    for cp_size, root in rows.fetchall():
        cp_size = int(cp_size)
        if cp_size > size:
            problems.append(
                _problem(
                    "log",
                    size,
                    None,
                    None,
                    f"entry {size}: a checkpoint of size {cp_size} covers entries the log "
                    f"no longer holds (it holds {size})",
                )
            )
        elif cp_size and merkle.tree_hash(cp_size, read) != bytes(root):
            problems.append(
                _problem(
                    "log",
                    cp_size - 1,
                    None,
                    None,
                    f"the checkpoint of size {cp_size} does not match the tree rebuilt "
                    "from the rows",
                )
            )
    return problems


def check_log(warehouse: Warehouse) -> LogReport:
    """Rebuild the log from the rows and compare (see the module docstring). Every read is
    of one snapshot of the warehouse: on a lake, a writer committing while the check runs
    is not seen half-way (its entries without their hashes, say)."""
    with warehouse.read_snapshot():
        return _check_log(warehouse)


def _check_log(warehouse: Warehouse) -> LogReport:
    con = warehouse._con
    size = store.size(con)
    checkpoints = int(warehouse._scalar(f"SELECT count(*) FROM {store.CHECKPOINTS}") or 0)
    report = LogReport(size, checkpoints)
    con.execute(_REBUILT)
    try:
        for idx, doc_id, revision, what in con.execute(_ENTRY_PROBLEMS).fetchall():
            message = _WHAT[what].format(doc=doc_id, rev=revision)
            report.problems.append(
                _problem(
                    "log",
                    None if idx is None else int(idx),
                    str(doc_id),
                    int(revision),
                    f"{_entry_label(idx)}: {message}",
                )
            )
    finally:
        con.execute("DROP TABLE IF EXISTS _tlog_rebuilt")
    report.problems += _sequence_problems(con)
    report.problems += _push_problems(con)
    try:
        report.problems += _tree_problems(con, size)
        report.problems += _checkpoint_problems(con, size)
    finally:
        con.execute("DROP VIEW IF EXISTS _tlog_all")
        con.execute("DROP TABLE IF EXISTS _tlog_tree")
    report.problems.sort(key=_order)
    return report


def _order(problem: dict[str, Any]) -> tuple[int, int, str]:
    index = problem["index"]
    return (0 if index is not None else 1, index or 0, problem["message"])


# -- the revisions a command serves ---------------------------------------------------------
def _served_sql(revisions: str = "revisions", documents: str = "documents") -> str:
    """The check of the revisions in ``_tlog_wanted``; the FROM items name where their rows
    are (the tables, unless :mod:`warehouse.row_hints` says). The log's entries are always
    read whole."""
    return f"""
WITH wanted AS (SELECT * FROM _tlog_wanted),
     rows AS (
        SELECT r.doc_id, r.revision, {revision_entry(ROW_COLUMNS)} AS entry
        {
        rows_with_context(
            where="(r.doc_id, r.revision) IN (SELECT * FROM wanted)",
            docs="doc_id IN (SELECT doc_id FROM wanted)",
            revisions=revisions,
            documents=documents,
        )
    }
     ),
     e AS (
        SELECT idx, doc_id, revision, entry FROM {store.ENTRIES}
        WHERE kind IN ({_KINDS}) AND doc_id IN (SELECT doc_id FROM wanted)
     ),
     row_counts AS (
        SELECT doc_id, count(*) AS n, count(DISTINCT revision) AS d, max(revision) AS top
        FROM {revisions} WHERE doc_id IN (SELECT doc_id FROM wanted) GROUP BY doc_id
     ),
     entry_counts AS (
        SELECT doc_id, count(*) AS n, max(revision) AS top FROM e GROUP BY doc_id
     )
SELECT w.doc_id, w.revision, first(x.idx) AS idx, count(x.idx) AS entries,
       first(x.entry) AS logged, count(r.entry) AS rows, first(r.entry) AS rebuilt,
       first(rc.n) AS doc_rows, first(rc.d) AS doc_revisions, first(ec.n) AS doc_entries,
       first(ec.top) AS logged_top, first(rc.top) AS row_top
FROM wanted w
LEFT JOIN e x ON x.doc_id = w.doc_id AND x.revision = w.revision
LEFT JOIN rows r ON r.doc_id = w.doc_id AND r.revision = w.revision
LEFT JOIN row_counts rc ON rc.doc_id = w.doc_id
LEFT JOIN entry_counts ec ON ec.doc_id = w.doc_id
GROUP BY w.doc_id, w.revision
ORDER BY w.doc_id, w.revision
"""


_SERVED = _served_sql()  # over all of the tables
# Documents checked through their row hints at most (more read each table once instead).
_HINTED_DOCUMENTS = 8


_REWRITTEN = "{doc} revision {rev} differs from its log entry (the row was rewritten)"


def _served_problem(row: tuple[Any, ...]) -> str | None:
    (
        doc,
        rev,
        _idx,
        entries,
        logged,
        rows,
        rebuilt,
        doc_rows,
        doc_revisions,
        doc_entries,
        logged_top,
        row_top,
    ) = row
    if entries == 0:
        return f"{doc} revision {rev} has no log entry"
    if entries > 1:
        return f"{doc} revision {rev} has more than one log entry"
    if rows != 1 or doc_rows != doc_revisions:
        return f"{doc} has a revision recorded more than once (a duplicated row)"
    if logged is not None and bytes(rebuilt) != bytes(logged):
        return _REWRITTEN.format(doc=doc, rev=rev)
    if logged_top != row_top:
        return (
            f"{doc} revision {logged_top} is in the log but its row is gone: revision {row_top} "
            "is served as current"
        )
    if doc_entries != doc_rows:
        return f"{doc} has {doc_entries} revisions in the log but {doc_rows} rows (one deleted)"
    return None


def check_revisions(warehouse: Warehouse, revisions: Iterable[tuple[str, int]]) -> None:
    """:class:`LogMismatch` unless each (doc_id, revision) about to be served agrees with the
    log (see the module docstring)."""
    wanted = sorted(set(revisions))
    for start in range(0, len(wanted), SERVED_CHUNK):  # bounded memory, however many
        _check_chunk(warehouse, wanted[start : start + SERVED_CHUNK])


# Revisions checked per query (and per root worked out from their leaves): an export of
# 615,000 documents spent most of its time in chunks of 1,000, each query reading the log's
# and the revisions' key columns whole.
SERVED_CHUNK = 10_000


def _check_chunk(warehouse: Warehouse, wanted: list[tuple[str, int]]) -> None:
    con = warehouse._con
    if not wanted:
        return
    import pyarrow as pa

    table = pa.table(
        {"doc_id": [d for d, _ in wanted], "revision": [r for _, r in wanted]},
        schema=pa.schema([("doc_id", pa.string()), ("revision", pa.int32())]),
    )
    docs = {d for d, _ in wanted}
    if len(docs) <= _HINTED_DOCUMENTS:
        # the log's entries are read whole, never through hints: a revision row whose hint
        # was removed is then one row fewer than the log's entries, and refused
        query = _served_sql(
            source(warehouse, "revisions", docs), source(warehouse, "documents", docs)
        )
        con.register("_tlog_wanted", table)
        try:
            rows = con.execute(query).fetchall()
        finally:
            con.unregister("_tlog_wanted")
    else:
        rows = _served_rows(con, table)
    problems = []
    leaves: list[tuple[str, int, int, bytes, bool]] = []
    for row in rows:
        message = _served_problem(row)
        if message is not None:
            problems.append(_problem("log", row[2], row[0], row[1], message))
        elif row[4] is None:  # not stored: the rebuilt entry, checked against its leaf
            leaves.append((row[0], int(row[1]), int(row[2]), bytes(row[6]), True))
        else:
            leaves.append((row[0], int(row[1]), int(row[2]), bytes(row[4]), False))
    if not problems:
        problems = _inclusion_problems(con, leaves)
    if problems:
        raise LogMismatch(problems)


def _served_rows(con: duckdb.DuckDBPyConnection, table: Any) -> list[tuple[Any, ...]]:
    """The check's rows for the revisions of ``table``, copied into a temporary table first:
    DuckDB plans a registered Arrow table as one row, and with a few thousand revisions
    that plan's joins outgrew an 80 MB memory limit; with their real count, 12,000 took
    36 ms under it (and 10,000 of a 615,000-revision warehouse 56 ms, where a chunk of
    1,000 took 36 ms)."""
    con.register("_tlog_wanted_rows", table)
    try:
        con.execute("CREATE OR REPLACE TEMP TABLE _tlog_wanted AS SELECT * FROM _tlog_wanted_rows")
        return con.execute(_SERVED).fetchall()
    finally:
        con.unregister("_tlog_wanted_rows")
        con.execute("DROP TABLE IF EXISTS temp._tlog_wanted")


def _all_included(
    con: duckdb.DuckDBPyConnection,
    leaves: list[tuple[str, int, int, bytes, bool]],
    size: int,
    checkpoint: store.StoredCheckpoint | None,
) -> bool:
    """Whether every entry is in the latest checkpoint's tree (or, for entries it does not
    cover, in the stored tree), checked all at once: the root worked out from the entries'
    leaf hashes and the stored hashes of the rest (:func:`warehouse.tlog.merkle.root_from_leaves`,
    one read) is the checkpoint's root (or the stored tree's). A chunk of 1,000 revisions
    was checked in about a tenth of the time of a proof for each; when it fails, the
    proofs one by one name which entry is wrong."""
    covered = checkpoint.size if checkpoint is not None else 0
    groups: dict[int, dict[int, bytes]] = {}
    for _, _, index, entry, _ in leaves:
        t = covered if index < covered else size
        group = groups.setdefault(t, {})
        if index in group:  # two revisions at one entry: the proofs one by one say so
            return False
        group[index] = merkle.leaf_hash(entry)
    wanted: dict[int, None] = {}

    def record(indexes: Sequence[int]) -> list[bytes]:
        wanted.update(dict.fromkeys(indexes))
        return [bytes(32)] * len(indexes)

    for t, group in groups.items():
        merkle.root_from_leaves(t, group, record)
        if t != covered:
            merkle.tree_hash(t, record)
    hashes = dict(zip(wanted, store.read_hashes(con, list(wanted)), strict=True))

    def read(indexes: Sequence[int]) -> list[bytes]:
        return [hashes[i] for i in indexes]

    for t, group in groups.items():
        root = checkpoint.root if checkpoint is not None and t == covered else None
        if merkle.root_from_leaves(t, group, read) != (root or merkle.tree_hash(t, read)):
            return False
    return True


def _inclusion_problems(
    con: duckdb.DuckDBPyConnection, leaves: list[tuple[str, int, int, bytes, bool]]
) -> list[dict[str, Any]]:
    """Each entry's leaf hash proved into the latest checkpoint's root (or the stored tree's
    root, for entries it does not cover), its proof's hashes read in one query, once
    :func:`_all_included` has found one that is not. An entry ``rebuilt`` from its rows
    (not stored) whose hash is not its leaf: the row was rewritten."""
    size = store.size(con)
    checkpoint = store.latest_checkpoint(con)
    if _all_included(con, leaves, size, checkpoint):
        return []
    wanted: dict[int, None] = {}

    def record(indexes: Sequence[int]) -> list[bytes]:
        wanted.update(dict.fromkeys(indexes))
        return [bytes(32)] * len(indexes)

    refs: list[int] = []
    for _, _, index, _, _ in leaves:
        t = checkpoint.size if checkpoint is not None and index < checkpoint.size else size
        refs.append(t)
        merkle.prove_record(t, index, record)
        wanted[merkle.stored_hash_index(0, index)] = None
    roots = {checkpoint.size} if checkpoint is not None else set()
    for t in set(refs) - roots:
        merkle.tree_hash(t, record)
    hashes = dict(zip(wanted, store.read_hashes(con, list(wanted)), strict=True))

    def read(indexes: Sequence[int]) -> list[bytes]:
        return [hashes[i] for i in indexes]

    root_of = {t: merkle.tree_hash(t, read) for t in set(refs) - roots}
    if checkpoint is not None:
        root_of[checkpoint.size] = checkpoint.root
    problems = []
    for (doc, rev, index, entry, rebuilt), t in zip(leaves, refs, strict=True):
        leaf = merkle.leaf_hash(entry)
        if hashes[merkle.stored_hash_index(0, index)] != leaf and rebuilt:
            message = _REWRITTEN.format(doc=doc, rev=rev)
        elif hashes[merkle.stored_hash_index(0, index)] != leaf:
            message = f"{doc} revision {rev}: its log entry {index} does not hash to its leaf"
        else:
            try:
                merkle.check_record(merkle.prove_record(t, index, read), t, root_of[t], index, leaf)
                continue
            except merkle.ProofError:
                message = (
                    f"{doc} revision {rev}: its log entry {index} is not in the tree of size "
                    f"{t} (root {root_of[t].hex()[:16]}...)"
                )
        problems.append(_problem("log", index, doc, rev, message))
    return problems
