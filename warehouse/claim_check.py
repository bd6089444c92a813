"""The bulk claim check: every claim's verdict in a few statements over whole columns,
whatever their number.

Every claimed document's revisions are joined with their reader text (``reader_texts``, see
:mod:`warehouse.claim_texts`), the quote searched in each with DuckDB's ``contains``, and
every claim's status decided in SQL; the verdicts carry the rows the ledger
(:func:`warehouse.claims.record_verdicts`) appends as they are.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from itertools import pairwise
from typing import NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from warehouse.store import Warehouse


class ClaimQuery(NamedTuple):
    """One claim as the bulk check reads it: the cited revision or hash prefix, and the
    quote as reader text, read as the snapshot is (``needle``: its HTML markup read;
    ``needle_md``: rendered as Markdown), and as literal text copied from the page where it
    differs (``literal``, ``literal_md``)."""

    claim_id: str
    doc_id: str
    cited_revision: int | None
    cited_hash: str | None
    needle: str
    literal: str | None
    needle_md: str | None  # None: no reader text in a Markdown snapshot, matches nothing
    literal_md: str | None


class ClaimColumns(NamedTuple):
    """Claims as the bulk check reads them, one list per field: each claim's id, its
    document, the cited revision or hash prefix, and the hash of its quote (whose search
    strings are in ``quote_needles``)."""

    claim_id: Sequence[str]
    doc_id: Sequence[str]
    cited_revision: Sequence[int | None]
    cited_hash: Sequence[str | None]
    quote_hash: Sequence[str]


# -- the bulk check ------------------------------------------------------------------------
# A check is two statements over whole columns, never one query per claim:
#
# 1. ``_SUMMARY``: every claim beside each revision of its document (a hash table of the
#    claims, probed by one scan of ``revisions``); the reader texts scanned once, streaming,
#    each probing a hash table of those pairs, which holds no text and no search string (a
#    pair names its quote by a small integer, the quotes' search strings are joined after);
#    each pair's quote searched with ``contains``, and every claim's verdict inputs grouped
#    by conditional aggregates. DuckDB would build its hash tables on the reader texts and
#    on the revisions (its estimates of them are the smaller), hundreds of MB spilled to
#    disk under the warehouse's memory limit: this statement is run with that choice left
#    to its join order (``_PROBE_TEXTS``), which builds on the right side of each join as
#    written;
# 2. ``_VERDICTS``: every claim's status from those inputs, with whether its document left
#    the corpus or went unseen, in the rows the ledger appends as they are (with DuckDB's
#    own choice of sides: the tables of memberships and misses are small).
_SUMMARY = """
WITH pairs AS (
    SELECT
        c.n, c.q, r.revision, r.content_hash, r.tombstone,
        (c.cited_revision IS NULL OR r.revision = c.cited_revision)
            AND (c.cited_hash IS NULL OR coalesce(starts_with(r.content_hash, c.cited_hash), false))
            AS cited,
        c.cited_hash IS NOT NULL AS by_hash
    FROM revisions r JOIN _claims c ON c.doc_id = r.doc_id
),
needles AS (
    SELECT
        u.q, n.needle, n.literal,
        n.needle_md IS NOT DISTINCT FROM n.needle AND n.literal_md IS NOT DISTINCT FROM n.literal
            AS md_same,
        n.needle_md, n.literal_md
    FROM quote_needles n JOIN _quotes u ON u.quote_hash = n.quote_hash
    WHERE n.rules = $rules
),
texts AS (
    SELECT
        p.*, t.text, t.markdown,
        p.content_hash IS NOT NULL AND t.content_hash IS NULL AS unread
    FROM reader_texts t RIGHT JOIN pairs p ON t.content_hash = p.content_hash AND t.rules = $rules
),
scored AS (
    SELECT
        x.n, x.revision, x.content_hash, x.tombstone, x.cited, x.by_hash,
        x.unread OR q.q IS NULL AS unread,
        CASE
            WHEN x.tombstone OR x.text IS NULL THEN NULL
            WHEN x.markdown AND NOT q.md_same THEN coalesce(contains(x.text, q.needle_md), false)
                OR coalesce(contains(x.text, q.literal_md), false)
            ELSE contains(x.text, q.needle) OR coalesce(contains(x.text, q.literal), false)
        END AS found
    FROM texts x LEFT JOIN needles q ON q.q = x.q
)
SELECT
    n,
    max(revision) AS current,
    arg_max(tombstone, revision) AS current_tombstone,
    max(revision) FILTER (WHERE cited) AS cited,
    -- only a hash prefix can cite more than one revision
    min(content_hash) FILTER (WHERE cited AND by_hash)
        <> max(content_hash) FILTER (WHERE cited AND by_hash) AS cited_ambiguous,
    -- found as 1/0/2 (2: no text): arg_max skips a NULL value
    arg_max(CASE WHEN found THEN 1 WHEN NOT found THEN 0 ELSE 2 END, revision)
        FILTER (WHERE cited) AS cited_found,
    arg_max(tombstone, revision) FILTER (WHERE cited) AS cited_tombstone,
    list_sort(list(revision) FILTER (WHERE found)) AS found_in,
    list(revision) FILTER (WHERE found IS NOT TRUE) AS not_found,
    bool_or(unread) AS unread
FROM scored
GROUP BY n
"""
# Each claim's status is the first of these cases that applies (the rules documented in
# pipelines.checks.claims); ``reason`` says which case of its status it is, for its message.
_VERDICTS = """
WITH claimed AS (SELECT DISTINCT doc_id FROM _claims),
-- left the corpus: a member once (of $corpus, of any corpus without one) and a member of
-- none now, the latest event of each (corpus, document) deciding as in the corpus_members
-- view (migration 2); read for the claimed documents only (the view ranks every event)
departed AS (
    SELECT doc_id FROM (
        SELECT m.doc_id, first(m.event ORDER BY m.run_id DESC, m.event) AS latest
        FROM memberships m SEMI JOIN claimed c ON c.doc_id = m.doc_id
        WHERE $corpus::VARCHAR IS NULL OR m.corpus = $corpus::VARCHAR
        GROUP BY m.corpus, m.doc_id
    )
    GROUP BY doc_id
    HAVING NOT bool_or(latest = 'joined')
),
-- unseen: the latest run that listed the scope of the document's current revision missed
-- it (the drift report's definition, see warehouse.unseen)
latest_listing AS (
    SELECT scope, max(run_id) AS run_id FROM run_progress GROUP BY scope
),
missed AS (
    SELECT DISTINCT m.doc_id, m.scope FROM run_misses m
    JOIN latest_listing l ON l.scope = m.scope AND l.run_id = m.run_id
    WHERE m.doc_id IN (SELECT doc_id FROM claimed)
),
unseen AS (
    SELECT m.doc_id FROM missed m
    JOIN (
        SELECT doc_id, arg_max(scope, revision) AS scope FROM revisions
        WHERE doc_id IN (SELECT doc_id FROM missed)
        GROUP BY doc_id
    ) r ON r.doc_id = m.doc_id AND r.scope = m.scope
),
facts AS (
    SELECT
        c.n, s.current, s.current_tombstone, s.cited, s.cited_found, s.cited_tombstone,
        CASE
            WHEN s.current IS NULL THEN 'no-document'
            WHEN s.cited IS NULL THEN 'no-revision'
            WHEN s.cited_ambiguous THEN 'ambiguous'
        END AS unknown,
        coalesce(s.found_in, []) AS found_in,
        list_min(list_filter(s.not_found, lambda r: r > list_max(s.found_in))) AS after_found,
        d.doc_id IS NOT NULL AS left_corpus,
        u.doc_id IS NOT NULL AND NOT s.current_tombstone AS unseen
    FROM _claims c
    LEFT JOIN _summary s ON s.n = c.n
    LEFT JOIN departed d ON d.doc_id = c.doc_id
    LEFT JOIN unseen u ON u.doc_id = c.doc_id
),
judged AS (
    SELECT
        *,
        CASE
            WHEN unknown IS NOT NULL THEN 'unknown'
            WHEN cited_found <> 1 AND len(found_in) > 0 THEN 'misattributed'
            WHEN cited_found <> 1 THEN 'missing'
            WHEN current_tombstone OR left_corpus THEN 'gone'
            WHEN unseen THEN 'unseen'
            WHEN list_contains(found_in, current) THEN 'holds'
            ELSE 'stale'
        END AS status
    FROM facts
)
SELECT
    status,
    CASE
        WHEN status = 'unknown' THEN unknown
        WHEN status IN ('misattributed', 'missing') THEN
            CASE
                WHEN cited_tombstone THEN 'tombstone'
                WHEN cited_found = 2 THEN 'unreadable'
                ELSE 'absent'
            END
        WHEN status = 'gone' THEN
            CASE WHEN current_tombstone THEN 'tombstoned' ELSE 'left-corpus' END
    END AS reason,
    CASE WHEN status <> 'unknown' THEN cited END AS found_cited,
    current AS checked_revision,
    CASE status
        WHEN 'misattributed' THEN found_in[1]
        WHEN 'gone' THEN CASE WHEN current_tombstone THEN current END
        WHEN 'stale' THEN after_found
    END AS at_revision,
    CASE WHEN status = 'unknown' THEN []::INTEGER[] ELSE found_in END AS found_in
FROM judged
ORDER BY n
"""


_PROBE_TEXTS = "build_side_probe_side"


@contextmanager
def _optimizers_disabled(warehouse: Warehouse, names: str) -> Iterator[None]:
    con = warehouse._con
    previous = str(warehouse._scalar("SELECT current_setting('disabled_optimizers')") or "")
    disabled = ",".join(filter(None, [previous, names]))
    con.execute("SET disabled_optimizers = $names", {"names": disabled})
    try:
        yield
    finally:
        con.execute("SET disabled_optimizers = $names", {"names": previous})


class ClaimVerdicts(NamedTuple):
    """Every claim's verdict, in the claims' order, as columns: its ``status``, the
    ``reason`` for it (which case of the status: ``no-document``, ``no-revision`` or
    ``ambiguous`` for unknown; ``tombstone``, ``unreadable`` or ``absent`` for the cited
    revision of a misattributed or missing claim; ``tombstoned`` or ``left-corpus`` for
    gone), the revision cited and the current one, the revision the status names
    (``at_revision``) and every revision that contains the quote. ``unread``: some claimed
    revision has no reader text, or some quote no search strings, under the rules searched
    (then nothing else is filled in: store them and ask again)."""

    status: list[str]
    reason: list[str | None]
    cited: list[int | None]
    current: list[int | None]
    at_revision: list[int | None]
    found_in: list[tuple[int, ...]]
    unread: bool
    rows: pa.Table | None  # the ledger's rows (record_verdicts)


def _claims_tables(claims: ClaimColumns) -> tuple[pa.Table, pa.Table]:
    """The claims as the statements read them (``n``: the claim's position, ``q``: the
    number of its quote), and their quotes by number."""
    quotes: dict[str, int] = {}
    q = [quotes.setdefault(h, len(quotes)) for h in claims.quote_hash]
    table = pa.table(
        {
            "n": pa.array(range(len(q)), pa.int32()),
            "claim_id": pa.array(claims.claim_id, pa.string()),
            "doc_id": pa.array(claims.doc_id, pa.string()),
            "cited_revision": pa.array(claims.cited_revision, pa.int32()),
            "cited_hash": pa.array(claims.cited_hash, pa.string()),
            "quote_hash": pa.array(claims.quote_hash, pa.string()),
            "q": pa.array(q, pa.int32()),
        }
    )
    return table, pa.table(
        {"q": pa.array(range(len(quotes)), pa.int32()), "quote_hash": list(quotes)}
    )


def claim_verdicts(
    warehouse: Warehouse,
    claims: ClaimColumns,
    rules: str,
    corpus: str | None = None,
    *,
    unread_ok: bool = False,
) -> ClaimVerdicts:
    """Every claim's verdict, in bulk, under the quote rules ``rules``. A claimed revision
    without reader text, or a claim on one whose quote has no search strings
    (:func:`store_needles`), sets ``unread``: store them and ask again; with ``unread_ok``
    the revision counts as unreadable. A document has left the corpus when it was a member
    of ``corpus`` (of any corpus, without one) and no longer is."""
    con = warehouse._con
    claims_table, quotes_table = _claims_tables(claims)
    registered = ["_claims", "_quotes"]
    con.register("_claims", claims_table)
    con.register("_quotes", quotes_table)
    try:
        with _optimizers_disabled(warehouse, _PROBE_TEXTS):
            summary = con.sql(_SUMMARY, params={"rules": rules}).to_arrow_table()
        if not unread_ok and pc.any(summary.column("unread")).as_py():
            return ClaimVerdicts([], [], [], [], [], [], True, None)
        con.register("_summary", summary)
        registered.append("_summary")
        rows = con.sql(_VERDICTS, params={"corpus": corpus}).to_arrow_table()
    finally:
        for name in registered:
            con.unregister(name)
    checks = claims_table.select(
        ["claim_id", "doc_id", "quote_hash", "cited_revision", "cited_hash"]
    ).append_column("status", rows.column("status"))
    for name in ("checked_revision", "at_revision", "found_in"):
        checks = checks.append_column(name, rows.column(name))
    return ClaimVerdicts(
        rows.column("status").to_pylist(),
        rows.column("reason").to_pylist(),
        rows.column("found_cited").to_pylist(),
        rows.column("checked_revision").to_pylist(),
        rows.column("at_revision").to_pylist(),
        _tuples(rows.column("found_in").combine_chunks()),
        False,
        checks,
    )


def _tuples(lists: pa.ListArray) -> list[tuple[int, ...]]:
    """A list column without nulls as tuples (3× faster than ``to_pylist``)."""
    offsets = lists.offsets.to_pylist()
    values = lists.values.to_pylist()
    return [tuple(values[a:b]) for a, b in pairwise(offsets)]
