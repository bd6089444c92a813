"""What a claim check searches: each quote's search strings (``quote_needles``) and each
snapshot's reader text (``reader_texts``), stored once per quote or snapshot and version of
the quote rules. The caller derives them (the rules are not the warehouse's); the bulk
check (:mod:`warehouse.claim_check`) reads them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import NamedTuple

import pyarrow as pa

from warehouse.snapshots import checked_body
from warehouse.store import Warehouse


class QuoteNeedles(NamedTuple):
    """A quote's search strings under one version of the quote rules (as in
    :class:`warehouse.claim_check.ClaimQuery`)."""

    quote_hash: str
    needle: str
    literal: str | None
    needle_md: str | None
    literal_md: str | None


class UnreadSnapshot(NamedTuple):
    content_hash: str
    media_type: str
    body: bytes


class ReaderTextRow(NamedTuple):
    content_hash: str
    markdown: bool
    text: str | None
    problem: str | None


# -- search strings of quotes --------------------------------------------------------------
def quotes_without_needles(
    warehouse: Warehouse, quote_hashes: Iterable[str], rules: str
) -> set[str]:
    """Which of these quote hashes have no search strings under ``rules`` yet."""
    con = warehouse._con
    wanted = pa.table({"quote_hash": pa.array(list(set(quote_hashes)), pa.string())})
    con.register("_quotes", wanted)
    try:
        rows = con.execute(
            "SELECT q.quote_hash FROM _quotes q ANTI JOIN (SELECT quote_hash FROM quote_needles "
            "WHERE rules = $rules) n ON n.quote_hash = q.quote_hash",
            {"rules": rules},
        ).fetchall()
    finally:
        con.unregister("_quotes")
    return {str(h) for (h,) in rows}


def store_needles(warehouse: Warehouse, rules: str, rows: Sequence[QuoteNeedles]) -> None:
    """Add quotes' search strings computed under ``rules``; those already stored are left
    alone."""
    if not rows:
        return
    table = pa.table(
        {
            name: pa.array([r[i] for r in rows], pa.string())
            for i, name in enumerate(QuoteNeedles._fields)
        }
    )
    con = warehouse._con
    con.register("_needles", table)
    try:
        with warehouse._transaction():
            con.execute(
                "INSERT INTO quote_needles "
                "SELECT DISTINCT ON (n.quote_hash) n.quote_hash, $rules, n.needle, n.literal, "
                "n.needle_md, n.literal_md FROM _needles n "
                "ANTI JOIN (SELECT quote_hash FROM quote_needles WHERE rules = $rules) t "
                "ON t.quote_hash = n.quote_hash",
                {"rules": rules},
            )
    finally:
        con.unregister("_needles")


def stored_needles(warehouse: Warehouse, rules: str) -> dict[str, QuoteNeedles]:
    """Every quote's search strings stored under ``rules``, by quote hash."""
    rows = warehouse._con.execute(
        "SELECT quote_hash, needle, literal, needle_md, literal_md FROM quote_needles "
        "WHERE rules = $rules",
        {"rules": rules},
    ).fetchall()
    return {str(r[0]): QuoteNeedles._make(r) for r in rows}


# -- reader text ---------------------------------------------------------------------------
_UNREAD = """
SELECT DISTINCT r.content_hash FROM revisions r
JOIN _claim_docs d ON d.doc_id = r.doc_id
ANTI JOIN (SELECT content_hash FROM reader_texts WHERE rules = $rules) t
    ON t.content_hash = r.content_hash
WHERE r.content_hash IS NOT NULL
"""
_BODIES = """
SELECT s.content_hash, s.media_type, s.body
FROM snapshots s JOIN _unread u ON u.content_hash = s.content_hash
"""


def unread_snapshots(
    warehouse: Warehouse, doc_ids: Sequence[str], rules: str, chunk: int = 20_000
) -> Iterator[list[UnreadSnapshot]]:
    """The snapshots of these documents' revisions that have no reader text under ``rules``
    yet, ``chunk`` at a time (stream them into :func:`store_reader_texts`). Their bytes are
    checked against their hash first (:func:`~warehouse.snapshots.checked_body`): a reader
    text is never derived from altered bytes."""
    con = warehouse._con
    cursor = con.cursor()
    cursor.register("_claim_docs", pa.table({"doc_id": pa.array(list(doc_ids), pa.string())}))
    try:
        # the hashes first (no snapshot read when every text is there), then their bytes
        hashes = [h for (h,) in cursor.execute(_UNREAD, {"rules": rules}).fetchall()]
        rows = []
        if hashes:
            cursor.register("_unread", pa.table({"content_hash": pa.array(hashes, pa.string())}))
            rows = cursor.execute(_BODIES).fetchall()
            cursor.unregister("_unread")
    finally:
        cursor.unregister("_claim_docs")
        cursor.close()
    # The whole list first: DuckDB refuses writes on the connection while a cursor reads.
    for start in range(0, len(rows), chunk):
        yield [
            UnreadSnapshot(str(h), str(m), checked_body(warehouse, str(h), bytes(b)))
            for h, m, b in rows[start : start + chunk]
        ]


def store_reader_texts(warehouse: Warehouse, rules: str, rows: Sequence[ReaderTextRow]) -> None:
    """Add reader texts computed under ``rules``; texts already stored are left alone."""
    if not rows:
        return
    table = pa.table(
        {
            "content_hash": [r.content_hash for r in rows],
            "markdown": [r.markdown for r in rows],
            "text": [r.text for r in rows],
            "problem": [r.problem for r in rows],
        },
        schema=pa.schema(
            [
                ("content_hash", pa.string()),
                ("markdown", pa.bool_()),
                ("text", pa.string()),
                ("problem", pa.string()),
            ]
        ),
    )
    con = warehouse._con
    con.register("_reader_texts", table)
    try:
        with warehouse._transaction():
            con.execute(
                "INSERT INTO reader_texts "
                "SELECT n.content_hash, $rules, n.markdown, n.text, n.problem "
                "FROM _reader_texts n WHERE NOT EXISTS (SELECT 1 FROM reader_texts t "
                "WHERE t.content_hash = n.content_hash AND t.rules = $rules)",
                {"rules": rules},
            )
    finally:
        con.unregister("_reader_texts")


# -- a read-only warehouse -----------------------------------------------------------------
def is_read_only(warehouse: Warehouse) -> bool:
    """Whether the warehouse's connection is read-only (nothing can be stored)."""
    return bool(
        warehouse._scalar(
            "SELECT readonly FROM duckdb_databases() WHERE database_name = current_database()"
        )
    )


_SCRATCH_NEEDLES = """
CREATE TEMP TABLE quote_needles AS
SELECT n.* FROM {stored}.quote_needles n
WHERE n.rules = $rules AND n.quote_hash IN (SELECT quote_hash FROM _scratch_quotes)
"""
_SCRATCH_TEXTS = """
CREATE TEMP TABLE reader_texts AS
SELECT t.* FROM {stored}.reader_texts t
WHERE t.rules = $rules AND t.content_hash IN (
    SELECT r.content_hash FROM {stored}.revisions r
    WHERE r.doc_id IN (SELECT doc_id FROM _scratch_docs)
)
"""


@contextmanager
def scratch_texts(
    warehouse: Warehouse, rules: str, quote_hashes: Sequence[str], doc_ids: Sequence[str]
) -> Iterator[None]:
    """On a read-only warehouse: ``quote_needles`` and ``reader_texts`` as temporary tables
    of this connection (which DuckDB reads before the stored ones of the same name), holding
    the stored rows of these quotes and documents under ``rules``; what a check stores in
    them is gone when it ends."""
    con = warehouse._con
    catalog = str(warehouse._scalar("SELECT current_database()")).replace('"', '""')
    stored = f'"{catalog}".main'
    con.register("_scratch_quotes", pa.table({"quote_hash": pa.array(quote_hashes, pa.string())}))
    con.register("_scratch_docs", pa.table({"doc_id": pa.array(doc_ids, pa.string())}))
    try:
        con.execute(_SCRATCH_NEEDLES.format(stored=stored), {"rules": rules})
        con.execute(_SCRATCH_TEXTS.format(stored=stored), {"rules": rules})
        yield
    finally:
        con.unregister("_scratch_quotes")
        con.unregister("_scratch_docs")
        con.execute("DROP TABLE IF EXISTS temp.quote_needles")
        con.execute("DROP TABLE IF EXISTS temp.reader_texts")
