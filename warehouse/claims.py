"""The claims ledger: each check of a claim set appended to ``claim_checks``, every
claim's verdict in one transaction; the latest statuses, what changed after a run, a
claim's history.

A claim cites a quote from one revision of one document. What a check searches (quotes'
search strings, snapshots' reader text) is :mod:`warehouse.claim_texts`'s; the check itself,
in bulk, :mod:`warehouse.claim_check`'s. Their names are importable from here too.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

import pyarrow as pa

from warehouse.claim_check import ClaimColumns as ClaimColumns
from warehouse.claim_check import ClaimQuery as ClaimQuery
from warehouse.claim_check import ClaimVerdicts as ClaimVerdicts
from warehouse.claim_check import claim_verdicts as claim_verdicts
from warehouse.claim_texts import QuoteNeedles as QuoteNeedles
from warehouse.claim_texts import ReaderTextRow as ReaderTextRow
from warehouse.claim_texts import UnreadSnapshot as UnreadSnapshot
from warehouse.claim_texts import is_read_only as is_read_only
from warehouse.claim_texts import quotes_without_needles as quotes_without_needles
from warehouse.claim_texts import scratch_texts as scratch_texts
from warehouse.claim_texts import store_needles as store_needles
from warehouse.claim_texts import store_reader_texts as store_reader_texts
from warehouse.claim_texts import stored_needles as stored_needles
from warehouse.claim_texts import unread_snapshots as unread_snapshots
from warehouse.clock import now
from warehouse.store import Warehouse, _local_path, resolve_location
from warehouse.tlog.entries_sql import instant_sql


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


def latest_statuses(
    warehouse: Warehouse,
    claim_set: str,
    claim_ids: Collection[str] | None = None,
    *,
    before: int | None = None,
) -> dict[str, str]:
    """The status of every claim of ``claim_set`` at its latest check (``before``: the
    latest before that check); with ``claim_ids``, at least of those claims. A check records
    every claim of its set, so the set's latest check alone usually has them all: the
    ledger's history is read only for those it lacks."""
    if claim_ids is not None:
        last = _statuses(warehouse, _LAST_CHECK, claim_set, before)
        if all(claim_id in last for claim_id in claim_ids):
            return last
    return _statuses(warehouse, _LATEST_STATUSES, claim_set, before)


_LATEST_STATUSES = """
SELECT claim_id, arg_max(status, check_id) AS status FROM claim_checks
WHERE claim_set = $s AND ($before IS NULL OR check_id < $before) GROUP BY claim_id
"""
_LAST_CHECK = """
SELECT claim_id, status FROM claim_checks
WHERE claim_set = $s
  AND check_id = (
      SELECT max(check_id) FROM claim_checks
      WHERE claim_set = $s AND ($before IS NULL OR check_id < $before)
  )
"""


def _statuses(
    warehouse: Warehouse, query: str, claim_set: str, before: int | None
) -> dict[str, str]:
    table = warehouse._con.sql(query, params={"s": claim_set, "before": before}).to_arrow_table()
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


# What a check found, claim by claim: two checks with the same rows found the same.
_FOUND = (
    "claim_id, doc_id, quote_hash, cited_revision, cited_hash, status, checked_revision, "
    "at_revision, found_in"
)
_SAME_AS_LATEST = f"""
WITH latest AS (
    SELECT {_FOUND} FROM claim_checks
    WHERE claim_set = $set
      AND check_id = (SELECT max(check_id) FROM claim_checks WHERE claim_set = $set)
)
SELECT
    (SELECT count(*) FROM latest) = (SELECT count(*) FROM _checks)
    AND NOT EXISTS (SELECT {_FOUND} FROM _checks EXCEPT ALL SELECT * FROM latest)
"""


def same_as_latest_check(
    warehouse: Warehouse, claim_set: str, verdicts: ClaimVerdicts
) -> int | None:
    """The id of ``claim_set``'s latest check when it found what ``verdicts`` say, claim
    for claim (the same claims, quotes, citations, statuses and revisions); else None."""
    if verdicts.rows is None:
        raise ValueError("these verdicts are incomplete: some claimed revision was unread")
    latest = warehouse._scalar(
        "SELECT max(check_id) FROM claim_checks WHERE claim_set = $set", {"set": claim_set}
    )
    if latest is None:
        return None
    con = warehouse._con
    con.register("_checks", verdicts.rows)
    try:
        same = con.execute(_SAME_AS_LATEST, {"set": claim_set}).fetchone()
    finally:
        con.unregister("_checks")
    return int(latest) if same is not None and same[0] else None


def cannot_write(location: str | None) -> bool:
    """Whether the warehouse file at ``location`` (resolved as :meth:`Warehouse.open`
    resolves it) exists but this process may not write it or its folder (where its lock
    and write-ahead log go): a read-only file or mount. False for a lake (its catalog
    decides) and for a file that is not there."""
    path = _local_path(resolve_location(location))
    if path is None or not path.exists():
        return False
    return not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK))


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


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def claim_histories(
    warehouse: Warehouse, claim_ids: Sequence[str]
) -> dict[str, list[ClaimHistoryRow]]:
    """:func:`claim_history` of many claims in one query."""
    if not claim_ids:
        return {}
    con = warehouse._con
    # a registered Arrow table, not a list parameter: DuckDB converts a list value by value
    con.register("_claims_wanted", pa.table({"claim_id": pa.array(sorted(set(claim_ids)))}))
    try:
        rows = con.execute(
            "SELECT check_id, claim_set, run_id, epoch_us(recorded_at), doc_id, quote_hash, "
            "cited_revision, cited_hash, status, checked_revision, at_revision, found_in, "
            "claim_id FROM claim_checks SEMI JOIN _claims_wanted USING (claim_id) "
            "ORDER BY check_id"
        ).fetchall()
    finally:
        con.unregister("_claims_wanted")
    # instants as microseconds: DuckDB's TIMESTAMPTZ to Python goes through pytz, row by row
    out: dict[str, list[ClaimHistoryRow]] = {}
    for row in rows:
        at = _EPOCH + timedelta(microseconds=int(row[3]))
        history = ClaimHistoryRow._make([*row[:3], at, *row[4:11], [int(n) for n in row[11] or []]])
        out.setdefault(str(row[12]), []).append(history)
    return out


StatusCheck = tuple[int, str, str, int | None, str | None]


def status_histories(
    warehouse: Warehouse, claim_ids: Sequence[str]
) -> dict[str, list[StatusCheck]]:
    """Each claim's checks, oldest first, as a proof bundle's claim history lists them:
    (check id, status, instant, cited revision, cited hash), the instant as the log writes
    one (UTC text with microseconds and ``Z``, made by DuckDB: no datetime per row). Only
    these columns are read, as Arrow columns (a third of the time of :func:`claim_histories`
    on 10,000 claims)."""
    if not claim_ids:
        return {}
    con = warehouse._con
    con.register("_claims_wanted", pa.table({"claim_id": pa.array(sorted(set(claim_ids)))}))
    try:
        table = con.execute(
            f"SELECT claim_id, check_id, status, {instant_sql('recorded_at')}, cited_revision, "
            "cited_hash "
            "FROM claim_checks SEMI JOIN _claims_wanted USING (claim_id) ORDER BY check_id"
        ).to_arrow_table()
    finally:
        con.unregister("_claims_wanted")
    out: dict[str, list[StatusCheck]] = {}
    ids, *columns = (column.to_pylist() for column in table.columns)
    for claim_id, check in zip(ids, zip(*columns, strict=True), strict=True):
        out.setdefault(claim_id, []).append(check)
    return out


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
