"""Keeping a DuckLake warehouse small: merge its small data files, expire old catalog
snapshots and delete the files no snapshot needs any more, without changing one row (every
table's digest is the same before and after). Other writers of a lake may commit while it
runs (maintenance takes no corpus lock): a table one of them wrote to is reported as
written meanwhile, not compared, rather than taken for a change maintenance made."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from warehouse.backends import LAKE_ALIAS
from warehouse.digests import Progress, table_digests
from warehouse.errors import IntegrityError
from warehouse.store import Warehouse


@dataclass(frozen=True)
class MaintainReport:
    backend: str
    data_files_before: int
    data_files_after: int
    snapshots_before: int
    snapshots_after: int
    tables_checked: int
    # Tables another writer of the lake committed to while maintenance ran: their digests
    # were not compared (rows added alongside are not a change maintenance made).
    written_meanwhile: tuple[str, ...] = ()


# What the maintenance calls themselves commit to a lake's snapshots: merging adjacent files
# (expiring snapshots and cleaning up files commit none).
_MAINTENANCE_CHANGES = frozenset({"merge_adjacent"})


def _files(warehouse: Warehouse) -> int:
    return int(
        warehouse._scalar(
            f"SELECT count(*) FROM __ducklake_metadata_{LAKE_ALIAS}.ducklake_data_file "
            "WHERE end_snapshot IS NULL"
        )
    )


def _snapshots(warehouse: Warehouse) -> int:
    return int(warehouse._scalar(f"SELECT count(*) FROM ducklake_snapshots('{LAKE_ALIAS}')"))


def _latest_snapshot(warehouse: Warehouse) -> int:
    query = f"SELECT max(snapshot_id) FROM ducklake_snapshots('{LAKE_ALIAS}')"
    return int(warehouse._scalar(query))


def _written_since(warehouse: Warehouse, snapshot: int, tables: list[str]) -> set[str]:
    """Of ``tables``, those a snapshot after ``snapshot`` changed other than by maintenance
    (another writer's commit): all of them when a change names what cannot be told."""
    names = {
        str(table_id): str(name)
        for table_id, name in warehouse._con.execute(
            f"SELECT table_id, table_name FROM __ducklake_metadata_{LAKE_ALIAS}.ducklake_table"
        ).fetchall()
    }
    written: set[str] = set()
    rows = warehouse._con.execute(
        f"SELECT changes FROM ducklake_snapshots('{LAKE_ALIAS}') WHERE snapshot_id > $s",
        {"s": snapshot},
    ).fetchall()
    for (changes,) in rows:
        for kind, values in (changes or {}).items():
            if kind in _MAINTENANCE_CHANGES:
                continue
            for value in values or []:
                name = names.get(value) or value.rsplit(".", 1)[-1]
                if name not in tables:
                    return set(tables)  # a change this cannot place: nothing is comparable
                written.add(name)
    return written


def _check_unchanged(
    before: dict[str, str], after: dict[str, str], written: set[str] | None = None
) -> None:
    """Every table's digest the same after as before, but for those in ``written``."""
    skip = written or set()
    changed = sorted(t for t in before if t not in skip and before[t] != after.get(t))
    if changed:
        raise IntegrityError(f"maintenance changed {', '.join(changed)}; restore from a backup")


def maintain(
    warehouse: Warehouse, keep: timedelta = timedelta(days=7), progress: Progress | None = None
) -> MaintainReport:
    """Compact a lake's data files, expire catalog snapshots older than ``keep`` and clean
    up the files they alone used. A DuckDB file is checkpointed. Either way every table's
    digest (:func:`warehouse.digests.table_digest`) is the same after as before;
    ``progress(step, done, total)`` hears of the rows digested."""
    # Other writers of a lake may commit while this runs: what they wrote is told apart by
    # the snapshots committed after this one.
    # Merging writes every row of a table of small files at once (100,000 documents in 250
    # files ran out of memory at the default limit without it).
    warehouse.bound_row_groups()
    start = _latest_snapshot(warehouse) if warehouse.is_lake else 0
    before = table_digests(warehouse, progress, "rows digested before")
    if not warehouse.is_lake:
        warehouse._con.execute("CHECKPOINT")
        _check_unchanged(before, table_digests(warehouse, progress, "rows digested after"))
        return MaintainReport(warehouse.backend, 1, 1, 0, 0, len(before))
    files, snapshots = _files(warehouse), _snapshots(warehouse)
    with warehouse.serial("maintain"):
        warehouse._con.execute(f"CALL ducklake_merge_adjacent_files('{LAKE_ALIAS}')")
        cutoff = datetime.now(UTC) - keep
        warehouse._con.execute(
            f"CALL ducklake_expire_snapshots('{LAKE_ALIAS}', older_than => $cutoff)",
            {"cutoff": cutoff},
        )
        # The files only expired snapshots used: no reader can be on one of those.
        warehouse._con.execute(
            f"CALL ducklake_cleanup_old_files('{LAKE_ALIAS}', cleanup_all => true)"
        )
    after = table_digests(warehouse, progress, "rows digested after")
    written = _written_since(warehouse, start, sorted(before))
    _check_unchanged(before, after, written)
    return MaintainReport(
        warehouse.backend,
        files,
        _files(warehouse),
        snapshots,
        _snapshots(warehouse),
        len(before) - len(written),
        tuple(sorted(written)),
    )
