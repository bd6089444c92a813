"""Counts over time for plots: revisions recorded per day per source, documents by status
and claims by status at the end of each day.

Each series is one aggregation in SQL (no document or snapshot is read into Python): the
rows returned are one per day and label, so their number grows with the days the
warehouse has been written on, not with its documents. Days are UTC calendar days, taken
from the epoch seconds of each moment, so they do not depend on the session's time zone.
A status series has a row for every calendar day from the first day anything of its kind
was recorded to the last, and every label the warehouse has used, zeros included: a level
holds on days when nothing changed, and a plot has a value for each label each day (so
at most days × labels rows). Revisions per day has rows only for the days and sources
with revisions. Rows are sorted by day, then label.
"""

from __future__ import annotations

import datetime

from warehouse.store import Warehouse

_EPOCH = datetime.date(1970, 1, 1)

# The UTC day of a TIMESTAMPTZ column, as days since 1970-01-01.
_DAY = "CAST(floor(epoch({column}) / 86400) AS BIGINT)"

# A doc_id is ``<source>/<kind>/<key...>`` (warehouse.ids.doc_id): its source is its first
# part, so no join with ``documents`` is needed.
_REVISIONS_PER_DAY = f"""
SELECT {_DAY.format(column="valid_from")} AS day, split_part(doc_id, '/', 1) AS label,
    count(*) AS n
FROM revisions
GROUP BY ALL ORDER BY day, label
"""

# ``events``: (key, day, order, label) rows, one per recorded state of one key. A key that
# only ever had one label (most documents: never tombstoned) moves into it on its first
# day, counted by one aggregation; only keys whose label changed are read in order: their
# state at the end of a day is their last event of that day, and each change of state
# moves one key from its previous label to its new one. The running sum of the moves is
# the number of keys in each label at the end of each day.
_STATUS_OVER_TIME = """
WITH events AS ({events}),
keys AS (
    SELECT key, min(day) AS day, max(day) AS last_day, min(label) AS label,
        min(label) <> max(label) AS varied
    FROM events GROUP BY key
),
daily AS (
    SELECT key, day, arg_max(label, ord) AS label
    FROM events SEMI JOIN (SELECT key FROM keys WHERE varied) v USING (key)
    GROUP BY key, day
),
changes AS (
    SELECT day, label, lag(label) OVER (PARTITION BY key ORDER BY day) AS before FROM daily
),
moves AS (
    SELECT day, label, count(*) AS delta FROM keys WHERE NOT varied GROUP BY day, label
    UNION ALL
    SELECT day, label, 1 FROM changes WHERE before IS DISTINCT FROM label
    UNION ALL
    SELECT day, before, -1 FROM changes WHERE before IS NOT NULL AND before <> label
),
per_day AS (SELECT day, label, sum(delta) AS delta FROM moves GROUP BY day, label),
days AS (
    SELECT unnest(range(min(day), max(last_day) + 1)) AS day FROM keys HAVING count(*) > 0
),
grid AS (
    SELECT d.day, l.label FROM days d CROSS JOIN (SELECT DISTINCT label FROM per_day) l
)
SELECT g.day, g.label,
    CAST(sum(coalesce(p.delta, 0)) OVER (PARTITION BY g.label ORDER BY g.day) AS BIGINT) AS n
FROM grid g LEFT JOIN per_day p USING (day, label)
ORDER BY g.day, g.label
"""

_DOCUMENT_EVENTS = f"""
SELECT doc_id AS key, {_DAY.format(column="valid_from")} AS day, revision AS ord,
    CASE WHEN tombstone THEN 'tombstoned' ELSE 'current' END AS label
FROM revisions
"""

# A claim is one claim id of one claim set (a corpus or a claims file).
_CLAIM_EVENTS = f"""
SELECT claim_set || chr(0) || claim_id AS key, {_DAY.format(column="recorded_at")} AS day,
    check_id AS ord, status AS label
FROM claim_checks
"""


def _rows(warehouse: Warehouse, sql: str) -> list[tuple[datetime.date, str, int]]:
    return [
        (_EPOCH + datetime.timedelta(days=int(day)), str(label), int(n))
        for day, label, n in warehouse._con.execute(sql).fetchall()
    ]


def revisions_per_day(warehouse: Warehouse) -> list[tuple[datetime.date, str, int]]:
    """(day, source, revisions recorded that day), tombstones included: a revision counts on
    the day it became valid."""
    return _rows(warehouse, _REVISIONS_PER_DAY)


def documents_by_status(warehouse: Warehouse) -> list[tuple[datetime.date, str, int]]:
    """(day, status, documents in that status at the end of that day): ``current`` for a
    document whose latest revision then held content, ``tombstoned`` for one whose latest
    revision was a tombstone."""
    return _rows(warehouse, _STATUS_OVER_TIME.format(events=_DOCUMENT_EVENTS))


def claims_by_status(warehouse: Warehouse) -> list[tuple[datetime.date, str, int]]:
    """(day, claim status, claims in that status at the end of that day), from the stored
    claim checks: each claim of each claim set counts with the status of its latest check
    recorded by the end of that day (a claim no longer checked keeps its last status)."""
    return _rows(warehouse, _STATUS_OVER_TIME.format(events=_CLAIM_EVENTS))
