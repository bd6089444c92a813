"""The claims ledger, and the bulk read behind a claim check.

A claim cites a quote from one revision of one document. Checking many claims is one query:
every claimed document's revisions joined with their reader text (``reader_texts``, filled
once per snapshot and rule version by the caller), and the quote searched in each with
DuckDB's ``contains``. Each check's verdicts are appended to ``claim_checks``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import NamedTuple

import pyarrow as pa

from warehouse.clock import now
from warehouse.store import Warehouse


class ClaimQuery(NamedTuple):
    """One claim as the bulk check reads it: the cited revision or hash prefix, and the
    quote as reader text (``needle``) and as literal text where it differs, for plain and for
    Markdown snapshots."""

    claim_id: str
    doc_id: str
    cited_revision: int | None
    cited_hash: str | None
    needle: str
    literal: str | None
    needle_md: str | None  # None: no reader text in a Markdown snapshot, matches nothing
    literal_md: str | None


class ClaimMatch(NamedTuple):
    """What the bulk check found for one claim whose document is in the warehouse: its
    document's current revision, the cited one, and which revisions contain the quote."""

    current: int  # the document's latest revision
    current_tombstone: bool
    cited: int | None  # the latest revision the claim cites (None: no such revision or hash)
    cited_ambiguous: bool  # the cited revisions have more than one content hash
    cited_found: bool | None  # whether the cited revision contains the quote (None: no text)
    cited_tombstone: bool
    found_in: list[int]  # every revision that contains the quote, in order
    after_found: int | None  # the revision after the last one that contains it
    left_corpus: bool  # the document left the corpus (or every corpus it was in)
    unseen: bool = False  # the latest listing of its scope missed it (not provably gone)


class UnreadSnapshot(NamedTuple):
    content_hash: str
    media_type: str
    body: bytes


class ReaderTextRow(NamedTuple):
    content_hash: str
    markdown: bool
    text: str | None
    problem: str | None


class ClaimCheck(NamedTuple):
    """One claim's verdict, as the ledger records it."""

    claim_id: str
    doc_id: str
    quote_hash: str
    cited_revision: int | None
    cited_hash: str | None
    status: str
    checked_revision: int | None
    at_revision: int | None
    found_in: list[int]


class ClaimHistoryRow(NamedTuple):
    check_id: int
    claim_set: str
    run_id: int | None
    recorded_at: datetime
    doc_id: str
    quote_hash: str
    cited_revision: int | None
    cited_hash: str | None
    status: str
    checked_revision: int | None
    at_revision: int | None
    found_in: list[int]


class ClaimKey(NamedTuple):
    """One claim as the bulk check reads it: its document, the cited revision or hash
    prefix, and the hash of its quote (whose search strings are in ``quote_needles``)."""

    doc_id: str
    cited_revision: int | None
    cited_hash: str | None
    quote_hash: str


class QuoteNeedles(NamedTuple):
    """A quote's search strings under one version of the quote rules (see ClaimQuery)."""

    quote_hash: str
    needle: str
    literal: str | None
    needle_md: str | None
    literal_md: str | None


def _claims_table(claims: Sequence[ClaimKey]) -> pa.Table:
    """The claims as the match query reads them: ``n`` is the claim's position."""
    return pa.table(
        {
            "n": pa.array(range(len(claims)), pa.int32()),
            "doc_id": pa.array([q.doc_id for q in claims], pa.string()),
            "cited_revision": pa.array([q.cited_revision for q in claims], pa.int32()),
            "cited_hash": pa.array([q.cited_hash for q in claims], pa.string()),
            "quote_hash": pa.array([q.quote_hash for q in claims], pa.string()),
        }
    )


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
    yet, ``chunk`` at a time (stream them into :func:`store_reader_texts`)."""
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
        yield [UnreadSnapshot(str(h), str(m), bytes(b)) for h, m, b in rows[start : start + chunk]]


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


# -- the bulk check ------------------------------------------------------------------------
# Each claim is joined to the revisions of its own document first (no text yet: a small hash
# table); the reader texts are then scanned once, streaming, each searched for the needles
# of the claims on that snapshot, and every claim's verdict inputs come out of one grouping
# by conditional aggregates (no per-revision lists). DuckDB would build its hash table on
# the reader texts (its estimate of the filtered table is the smaller), which at 100,000
# claims is hundreds of MB spilled to disk; the query is run with that choice left to its
# join order (``_PROBE_TEXTS``), which scans them.
_MATCH = """
WITH claimed AS (SELECT DISTINCT doc_id FROM _claims),
needles AS (
    SELECT
        quote_hash, needle, literal,
        needle_md IS NOT DISTINCT FROM needle AND literal_md IS NOT DISTINCT FROM literal
            AS md_same,
        needle_md, literal_md
    FROM quote_needles
    WHERE rules = $rules AND quote_hash IN (SELECT quote_hash FROM _claims)
),
pairs AS (
    SELECT
        c.n, r.revision, r.content_hash, r.tombstone, r.scope,
        (c.cited_revision IS NULL OR r.revision = c.cited_revision)
            AND (c.cited_hash IS NULL OR coalesce(starts_with(r.content_hash, c.cited_hash), false))
            AS cited,
        q.needle, q.literal, q.md_same, q.needle_md, q.literal_md
    FROM _claims c
    JOIN needles q ON q.quote_hash = c.quote_hash
    JOIN revisions r ON r.doc_id = c.doc_id
),
scored AS (
    SELECT
        p.n, p.revision, p.content_hash, p.tombstone, p.scope, p.cited,
        CASE
            WHEN p.tombstone OR t.text IS NULL THEN NULL
            WHEN t.markdown AND NOT p.md_same THEN coalesce(contains(t.text, p.needle_md), false)
                OR coalesce(contains(t.text, p.literal_md), false)
            ELSE contains(t.text, p.needle) OR coalesce(contains(t.text, p.literal), false)
        END AS found,
        p.content_hash IS NOT NULL AND t.content_hash IS NULL AS unread
    FROM reader_texts t
    RIGHT JOIN pairs p ON t.content_hash = p.content_hash AND t.rules = $rules
),
summary AS (
    SELECT
        n,
        max(revision) AS current,
        arg_max(tombstone, revision) AS current_tombstone,
        arg_max(scope, revision) AS current_scope,
        max(revision) FILTER (WHERE cited) AS cited,
        min(content_hash) FILTER (WHERE cited) <> max(content_hash) FILTER (WHERE cited)
            AS cited_ambiguous,
        -- found as 1/0/2 (2: no text): arg_max skips a NULL value
        arg_max(CASE WHEN found THEN 1 WHEN NOT found THEN 0 ELSE 2 END, revision)
            FILTER (WHERE cited) AS cited_found,
        arg_max(tombstone, revision) FILTER (WHERE cited) AS cited_tombstone,
        list_sort(list(revision) FILTER (WHERE found)) AS found_in,
        list(revision) FILTER (WHERE found IS NOT TRUE) AS not_found,
        bool_or(unread) AS unread
    FROM scored
    GROUP BY n
),
departed AS (
    SELECT doc_id FROM memberships
    WHERE doc_id IN (SELECT doc_id FROM claimed)
      AND ($corpus::VARCHAR IS NULL OR corpus = $corpus::VARCHAR)
    EXCEPT
    SELECT doc_id FROM corpus_members
    WHERE doc_id IN (SELECT doc_id FROM claimed)
      AND ($corpus::VARCHAR IS NULL OR corpus = $corpus::VARCHAR)
),
-- unseen: the latest run that listed the scope of the document's current revision missed
-- it (the drift report's definition, see warehouse.drift)
latest_listing AS (
    SELECT scope, max(run_id) AS run_id FROM run_progress GROUP BY scope
),
unseen AS (
    SELECT DISTINCT m.doc_id, m.scope FROM run_misses m
    JOIN latest_listing l ON l.scope = m.scope AND l.run_id = m.run_id
    WHERE m.doc_id IN (SELECT doc_id FROM claimed)
)
SELECT
    s.n, s.current, s.current_tombstone, s.cited, coalesce(s.cited_ambiguous, false),
    s.cited_found, s.cited_tombstone, s.found_in,
    list_min(list_filter(s.not_found, lambda r: r > list_max(s.found_in))),
    d.doc_id IS NOT NULL,
    u.doc_id IS NOT NULL AND NOT s.current_tombstone,
    s.unread
FROM summary s
JOIN _claims c ON c.n = s.n
LEFT JOIN departed d ON d.doc_id = c.doc_id
LEFT JOIN unseen u ON u.doc_id = c.doc_id AND u.scope = s.current_scope
"""
_FOUND = {0: False, 1: True, 2: None}


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


class ClaimMatches(NamedTuple):
    """What the bulk check found, by the claims' positions (None: no such document); and
    whether any of their revisions has no reader text under the rules searched yet."""

    matches: list[ClaimMatch | None]
    unread: bool


def claim_matches(
    warehouse: Warehouse, claims: Sequence[ClaimKey], rules: str, corpus: str | None = None
) -> ClaimMatches:
    """For every claim whose document is in the warehouse: what each revision holds of its
    quote, in one query. Every claim's quote must have its search strings stored under
    ``rules`` (:func:`store_needles`); a revision without reader text under ``rules`` counts
    as unreadable and sets ``unread``: store its text and ask again. A document has left
    the corpus when it was a member of ``corpus`` (of any corpus, without one) and no longer
    is."""
    con = warehouse._con
    con.register("_claims", _claims_table(claims))
    try:
        with _optimizers_disabled(warehouse, _PROBE_TEXTS):
            params = {"rules": rules, "corpus": corpus}
            table = con.sql(_MATCH, params=params).to_arrow_table()
    finally:
        con.unregister("_claims")
    columns = [table.column(n).to_pylist() for n in table.column_names]
    out: list[ClaimMatch | None] = [None] * len(claims)
    unread = False
    for row in zip(*columns, strict=True):
        out[row[0]] = ClaimMatch(
            row[1],
            row[2],
            row[3],
            row[4],
            None if row[5] is None else _FOUND[row[5]],
            bool(row[6]),
            row[7] or [],
            row[8],
            row[9],
            row[10],
        )
        unread = unread or bool(row[11])
    return ClaimMatches(out, unread)


# -- the ledger ----------------------------------------------------------------------------
def latest_statuses(warehouse: Warehouse, claim_set: str) -> dict[str, str]:
    """The status of every claim of ``claim_set`` at its latest check."""
    table = warehouse._con.sql(
        "SELECT claim_id, arg_max(status, check_id) AS status FROM claim_checks "
        "WHERE claim_set = $s GROUP BY claim_id",
        params={"s": claim_set},
    ).to_arrow_table()
    return dict(zip(table.column(0).to_pylist(), table.column(1).to_pylist(), strict=True))


def record_checks(
    warehouse: Warehouse, claim_set: str, run_id: int | None, checks: Sequence[ClaimCheck]
) -> int:
    """Append one check of ``claim_set`` (every verdict in one transaction); its check id."""
    table = pa.table(
        {
            "claim_id": [c.claim_id for c in checks],
            "doc_id": [c.doc_id for c in checks],
            "quote_hash": [c.quote_hash for c in checks],
            "cited_revision": pa.array([c.cited_revision for c in checks], pa.int32()),
            "cited_hash": pa.array([c.cited_hash for c in checks], pa.string()),
            "status": [c.status for c in checks],
            "checked_revision": pa.array([c.checked_revision for c in checks], pa.int32()),
            "at_revision": pa.array([c.at_revision for c in checks], pa.int32()),
            "found_in": pa.array([c.found_in for c in checks], pa.list_(pa.int32())),
        },
    )
    con = warehouse._con
    con.register("_checks", table)
    try:
        # the id lock: two writers of a lake never take the same check id
        with warehouse.serial("ids:claim_checks"), warehouse._transaction():
            check_id = int(
                warehouse._scalar("SELECT coalesce(max(check_id), 0) + 1 FROM claim_checks")
            )
            con.execute(
                "INSERT INTO claim_checks SELECT $check, $set, $run, $at, claim_id, doc_id, "
                "quote_hash, cited_revision, cited_hash, status, checked_revision, "
                "at_revision, found_in FROM _checks",
                {"check": check_id, "set": claim_set, "run": run_id, "at": now()},
            )
    finally:
        con.unregister("_checks")
    return check_id


class StatusChange(NamedTuple):
    claim_id: str
    doc_id: str
    before: str | None
    after: str
    at_revision: int | None
    checked_revision: int | None


_CHANGES_AFTER_RUN = """
WITH this AS (
    SELECT * FROM claim_checks
    WHERE claim_set = $set
      AND check_id = (
          SELECT max(check_id) FROM claim_checks WHERE claim_set = $set AND run_id = $run
      )
),
before AS (
    SELECT claim_id, arg_max(status, check_id) AS status FROM claim_checks
    WHERE claim_set = $set AND check_id < (SELECT min(check_id) FROM this)
    GROUP BY claim_id
)
SELECT t.claim_id, t.doc_id, b.status, t.status, t.at_revision, t.checked_revision
FROM this t LEFT JOIN before b ON b.claim_id = t.claim_id
WHERE b.status IS DISTINCT FROM t.status AND (b.status IS NOT NULL OR t.status <> 'holds')
ORDER BY t.claim_id
"""


def changes_after_run(
    warehouse: Warehouse, claim_set: str, run_id: int
) -> list[StatusChange] | None:
    """The claims whose status changed in the check that followed run ``run_id``, compared
    with each claim's check before it (a claim seen for the first time counts unless it
    holds); None when no check of ``claim_set`` followed that run."""
    checked = warehouse._scalar(
        "SELECT count(*) FROM claim_checks WHERE claim_set = $set AND run_id = $run",
        {"set": claim_set, "run": run_id},
    )
    if not checked:
        return None
    rows = warehouse._con.execute(_CHANGES_AFTER_RUN, {"set": claim_set, "run": run_id})
    return [StatusChange._make(row) for row in rows.fetchall()]


def claim_history(warehouse: Warehouse, claim_id: str) -> list[ClaimHistoryRow]:
    """Every check of a claim (in every claim set), oldest first."""
    rows = warehouse._con.execute(
        "SELECT check_id, claim_set, run_id, recorded_at, doc_id, quote_hash, cited_revision, "
        "cited_hash, status, checked_revision, at_revision, found_in FROM claim_checks "
        "WHERE claim_id = $c ORDER BY check_id",
        {"c": claim_id},
    ).fetchall()
    return [ClaimHistoryRow._make([*row[:11], [int(n) for n in row[11] or []]]) for row in rows]


def scan_revision_text(warehouse: Warehouse, needle: str) -> int:
    """How many revisions' stored text contains ``needle``: one plain scan of every
    revision's bytes, the floor a bulk claim check is measured against (``bench/claims.py``)."""
    return int(
        warehouse._scalar(
            "SELECT count(*) FROM revisions r JOIN snapshots s ON s.content_hash = r.content_hash "
            "WHERE contains(decode(s.body), $needle)",
            {"needle": needle},
        )
    )
