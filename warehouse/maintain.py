"""Keeping a DuckLake warehouse small: merge its small data files, expire old catalog
snapshots and delete the files no snapshot needs any more, without changing one row (every
table's digest is the same before and after)."""

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


def _files(warehouse: Warehouse) -> int:
    return int(
        warehouse._scalar(
            f"SELECT count(*) FROM __ducklake_metadata_{LAKE_ALIAS}.ducklake_data_file "
            "WHERE end_snapshot IS NULL"
        )
    )


def _snapshots(warehouse: Warehouse) -> int:
    return int(warehouse._scalar(f"SELECT count(*) FROM ducklake_snapshots('{LAKE_ALIAS}')"))


def _check_unchanged(before: dict[str, str], after: dict[str, str]) -> None:
    if after != before:
        changed = sorted(t for t in before if before[t] != after.get(t))
        raise IntegrityError(f"maintenance changed {', '.join(changed)}; restore from a backup")


def maintain(
    warehouse: Warehouse, keep: timedelta = timedelta(days=7), progress: Progress | None = None
) -> MaintainReport:
    """Compact a lake's data files, expire catalog snapshots older than ``keep`` and clean
    up the files they alone used. A DuckDB file is checkpointed. Either way every table's
    digest (:func:`warehouse.digests.table_digest`) is the same after as before;
    ``progress(step, done, total)`` hears of the rows digested."""
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
    _check_unchanged(before, after)
    return MaintainReport(
        warehouse.backend, files, _files(warehouse), snapshots, _snapshots(warehouse), len(after)
    )
