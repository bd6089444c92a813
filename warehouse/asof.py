"""The corpus as it stood at a point in time: after a run, or at an instant.

A point is a cut through the append-only revisions. At run ``R`` a document's revision is
its newest revision written by run ``R`` or earlier; at instant ``T`` it is its newest
revision that became valid at or before ``T``. A document whose revision at the point is a
tombstone was not part of the corpus then.

Points are written ``RUN`` (a run id, e.g. ``3``), ``DATE`` (ISO-8601: ``2026-11-01``
means 00:00 UTC that day; ``2026-11-01T06:00:00Z`` or with an offset; no offset means UTC),
a time ago (``2 days ago``, ``90 minutes ago``, ``1 week ago``; ``yesterday`` and ``today``
are 00:00 UTC that day) or ``now`` (the current state), each by the warehouse clock.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any, NamedTuple

from warehouse.clock import now
from warehouse.errors import PointError
from warehouse.staged import PREVIOUS, staged_rows
from warehouse.store import Warehouse
from warehouse.timestamps import utc_iso as utc_iso  # re-exported: its readers import it here

_RUN = re.compile(r"\d+", re.ASCII)
_AGO = re.compile(r"(\d+)\s*(second|minute|hour|day|week)s?\s+ago", re.ASCII | re.IGNORECASE)
_UNITS = {"second": 1, "minute": 60, "hour": 3600, "day": 86_400, "week": 604_800}


def parse_instant(text: str) -> datetime:
    """An ISO-8601 date (00:00 UTC that day) or date-time (no offset means UTC), a time ago
    (``2 days ago``) or ``yesterday`` / ``today`` (00:00 UTC), by the warehouse clock."""
    value = text.strip()
    ago = _AGO.fullmatch(value)
    if ago is not None:
        return now() - timedelta(seconds=int(ago.group(1)) * _UNITS[ago.group(2).lower()])
    if value.lower() in ("today", "yesterday"):
        day = now().astimezone(UTC).date() - timedelta(days=value.lower() == "yesterday")
        return datetime(day.year, day.month, day.day, tzinfo=UTC)
    try:
        if len(value) == 10:
            day = date.fromisoformat(value)
            return datetime(day.year, day.month, day.day, tzinfo=UTC)
        moment = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise PointError(
            f"{text!r} is neither a run id (e.g. 3), an ISO-8601 date or date-time "
            "(e.g. 2026-11-01 or 2026-11-01T06:00:00Z), a time ago (e.g. '2 days ago', "
            "yesterday) nor now"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Point:
    """A cut through the revisions: exactly one of ``run_id`` (0 = before the first run)
    and ``at`` is set."""

    run_id: int | None = None
    at: datetime | None = None

    @classmethod
    def before_any_run(cls) -> Point:
        return cls(run_id=0)

    def condition(
        self,
        alias: str,
        param: str,
        run_column: str = "valid_from_run",
        time_column: str = "valid_from",
    ) -> tuple[str, dict[str, Any]]:
        """SQL selecting the rows of table ``alias`` written by this point: revisions by
        default, or another ledger given its run and time columns."""
        if self.run_id is not None:
            return f"{alias}.{run_column} <= ${param}", {param: self.run_id}
        return f"{alias}.{time_column} <= ${param}", {param: self.at}

    @property
    def label(self) -> str:
        if self.run_id == 0:
            return "before the first run"
        if self.run_id is not None:
            return f"run {self.run_id}"
        return f"{utc_iso(self.at.replace(microsecond=0) if self.at else None)}"

    def as_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "at": utc_iso(self.at), "label": self.label}


def run_exists(warehouse: Warehouse, run_id: int) -> bool:
    return bool(warehouse._scalar("SELECT count(*) FROM runs WHERE run_id = $r", {"r": run_id}))


def resolve_point(warehouse: Warehouse, text: str) -> Point:
    """``RUN``, ``DATE`` or ``now`` (the warehouse clock) as a :class:`Point`; a run must
    exist in the ledger."""
    value = text.strip()
    if value.lower() == "now":
        return Point(at=now())
    if _RUN.fullmatch(value):
        run_id = int(value)
        if not run_exists(warehouse, run_id):
            newest = warehouse._scalar("SELECT max(run_id) FROM runs")
            known = f"runs are 1..{newest}" if newest else "no run has been recorded yet"
            raise PointError(f"no run {run_id} in {warehouse.location}; {known}")
        return Point(run_id=run_id)
    return Point(at=parse_instant(value))


def members_sql(point: Point, param: str) -> tuple[str, dict[str, Any]]:
    """A query of ``(doc_id, member)`` for corpus ``$corpus`` at ``point``: each document's
    latest membership event by then (as the ``corpus_members`` view decides: the newest run
    wins, 'joined' before 'left')."""
    condition, params = point.condition("m", param, "run_id", "recorded_at")
    sql = (
        "SELECT m.doc_id, m.event = 'joined' AS member FROM memberships m "
        f"WHERE m.corpus = $corpus AND {condition} "
        "QUALIFY row_number() OVER (PARTITION BY m.doc_id ORDER BY m.run_id DESC, m.event) = 1"
    )
    return sql, params


class CorpusRow(NamedTuple):
    """One document of the corpus at a point (a tuple: corpora have many documents)."""

    doc_id: str
    source: str
    kind: str
    revision: int
    content_hash: str
    valid_from_run: int

    def as_json(self) -> dict[str, Any]:
        return {
            "doc_id": self.doc_id,
            "source": self.source,
            "kind": self.kind,
            "revision": self.revision,
            "content_hash": self.content_hash,
            "valid_from_run": self.valid_from_run,
        }


def iter_as_of(
    warehouse: Warehouse,
    point: Point,
    source: str | None = None,
    corpus: str | None = None,
    *,
    limit: int | None = None,
    offset: int = 0,
) -> Iterator[CorpusRow]:
    """Every document the warehouse held at ``point`` (of one source, of the members of
    one corpus), with the revision it had then and the run that wrote it, ordered by
    doc_id, read as a stream (see :mod:`warehouse.staged`); ``limit`` and ``offset`` take a
    page of them. Documents tombstoned at that point are left out."""
    condition, params = point.condition("r", "point")
    source_filter = ""
    filter_params: dict[str, Any] = {}
    if source is not None:
        source_filter += "AND d.source = $source"
        filter_params["source"] = source
    if corpus is not None:
        members, member_params = members_sql(point, "member_point")
        source_filter += f" AND r.doc_id IN (SELECT doc_id FROM ({members}) WHERE member)"
        filter_params.update(member_params, corpus=corpus)
    stages = [
        (
            f"SELECT r.doc_id, max(r.revision) AS revision FROM revisions r WHERE {condition} "
            "GROUP BY r.doc_id",
            params,
        ),
        (
            "SELECT r.doc_id, r.revision, r.content_hash, r.valid_from_run "
            f"FROM {PREVIOUS} cut JOIN revisions r USING (doc_id, revision) WHERE NOT r.tombstone",
            {},
        ),
        (
            "SELECT r.doc_id, d.source, d.kind, r.revision, r.content_hash, r.valid_from_run "
            f"FROM {PREVIOUS} r JOIN documents d USING (doc_id) WHERE TRUE {source_filter}",
            filter_params,
        ),
    ]
    for row in staged_rows(warehouse, stages, "doc_id", limit, offset):
        yield CorpusRow._make(row)


def as_of(
    warehouse: Warehouse, point: Point, source: str | None = None, corpus: str | None = None
) -> list[CorpusRow]:
    """:func:`iter_as_of`, as a list."""
    return list(iter_as_of(warehouse, point, source, corpus))


def known_sources(warehouse: Warehouse) -> list[str]:
    """The sources that have documents in the warehouse."""
    rows = warehouse._con.execute("SELECT DISTINCT source FROM documents ORDER BY 1").fetchall()
    return [str(source) for (source,) in rows]


def known_corpora(warehouse: Warehouse) -> list[str]:
    """The corpora that have (or had) members in the warehouse."""
    rows = warehouse._con.execute("SELECT DISTINCT corpus FROM memberships ORDER BY 1").fetchall()
    return [str(corpus) for (corpus,) in rows]
