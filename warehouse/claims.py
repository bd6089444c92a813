"""The claims ledger, and the bulk read behind a claim check.

A claim cites a quote from one revision of one document. Checking many claims is a few
statements over whole columns, whatever their number: every claimed document's revisions
joined with their reader text (``reader_texts``, filled once per snapshot and rule version
by the caller from bytes checked against their hash), the quote searched in each with
DuckDB's ``contains``, and every claim's status decided in SQL. Each check's verdicts are
appended to ``claim_checks`` straight from those statements' rows.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from itertools import pairwise
from typing import NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from warehouse.clock import now
from warehouse.snapshots import checked_body
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


class UnreadSnapshot(NamedTuple):
    content_hash: str
    media_type: str
    body: bytes


class ReaderTextRow(NamedTuple):
    content_hash: str
    markdown: bool
    text: str | None
    problem: str | None


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


class ClaimColumns(NamedTuple):
    """Claims as the bulk check reads them, one list per field: each claim's id, its
    document, the cited revision or hash prefix, and the hash of its quote (whose search
    strings are in ``quote_needles``)."""

    claim_id: Sequence[str]
    doc_id: Sequence[str]
    cited_revision: Sequence[int | None]
    cited_hash: Sequence[str | None]
    quote_hash: Sequence[str]


class QuoteNeedles(NamedTuple):
    """A quote's search strings under one version of the quote rules (see ClaimQuery)."""

    quote_hash: str
    needle: str
    literal: str | None
    needle_md: str | None
    literal_md: str | None


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
# pipelines.audit.claims); ``reason`` says which case of its status it is, for its message.
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
-- it (the drift report's definition, see warehouse.drift)
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


# -- the ledger ----------------------------------------------------------------------------
def latest_statuses(
    warehouse: Warehouse, claim_set: str, claim_ids: Collection[str] | None = None
) -> dict[str, str]:
    """The status of every claim of ``claim_set`` at its latest check; with ``claim_ids``,
    at least of those claims. A check records every claim of its set, so the set's latest
    check alone usually has them all: the ledger's history is read only for those it lacks."""
    if claim_ids is not None:
        last = _statuses(warehouse, _LAST_CHECK, claim_set)
        if all(claim_id in last for claim_id in claim_ids):
            return last
    return _statuses(warehouse, _LATEST_STATUSES, claim_set)


_LATEST_STATUSES = """
SELECT claim_id, arg_max(status, check_id) AS status FROM claim_checks
WHERE claim_set = $s GROUP BY claim_id
"""
_LAST_CHECK = """
SELECT claim_id, status FROM claim_checks
WHERE claim_set = $s
  AND check_id = (SELECT max(check_id) FROM claim_checks WHERE claim_set = $s)
"""


def _statuses(warehouse: Warehouse, query: str, claim_set: str) -> dict[str, str]:
    table = warehouse._con.sql(query, params={"s": claim_set}).to_arrow_table()
    return dict(zip(table.column(0).to_pylist(), table.column(1).to_pylist(), strict=True))


def record_verdicts(
    warehouse: Warehouse, claim_set: str, run_id: int | None, verdicts: ClaimVerdicts
) -> int:
    """Append one check of ``claim_set`` (every verdict in one transaction); its check id."""
    if verdicts.rows is None:
        raise ValueError("these verdicts are incomplete: some claimed revision was unread")
    con = warehouse._con
    con.register("_checks", verdicts.rows)
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
