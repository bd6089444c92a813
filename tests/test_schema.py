"""Golden test of the exact warehouse schema, and the migration ledger."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from warehouse.digests import row_counts
from warehouse.errors import SchemaError
from warehouse.store import Warehouse, migrations

GOLDEN = Path(__file__).parent / "golden" / "schema.txt"


def describe_schema(wh: Warehouse) -> str:
    lines = []
    for table in wh.tables():
        lines.append(f"{'view' if table.view else 'table'} {table.name}")
        for column in table.columns:
            null = "" if column.nullable else " NOT NULL"
            lines.append(f"  {column.name} {column.data_type}{null}")
    return "\n".join(lines) + "\n"


def test_schema_matches_golden(wh: Warehouse) -> None:
    actual = describe_schema(wh)
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.write_text(actual)
    assert actual == GOLDEN.read_text()


def test_migrations_are_recorded_with_checksums(wh: Warehouse) -> None:
    applied = wh.applied_migrations()
    assert applied == {m.version: m.checksum for m in migrations()}
    assert wh.meta() == {"hash_algorithm": "sha256", "canonical_form_version": "1"}


def test_reopening_applies_nothing_twice(warehouse_path: Path) -> None:
    with Warehouse.open(str(warehouse_path)) as first:
        assert first.applied_migrations()
    with Warehouse.open(str(warehouse_path)) as second:
        assert second.migrate() == []
        rows = row_counts(second, ["schema_migrations"])["schema_migrations"]
        assert rows == len(migrations())


def test_a_changed_migration_is_refused(warehouse_path: Path) -> None:
    with Warehouse.open(str(warehouse_path)) as wh:
        # test-only tamper, behind the warehouse's back
        wh._connection_for_tests().execute("UPDATE schema_migrations SET checksum = 'tampered'")
    with pytest.raises(SchemaError, match="changed after it was applied"):
        Warehouse.open(str(warehouse_path))


def test_read_only_open_of_a_missing_warehouse_says_what_to_do(tmp_path: Path) -> None:
    from warehouse.errors import WarehouseError

    with pytest.raises(WarehouseError, match="run `receipts ingest MANIFEST` first"):
        Warehouse.open(str(tmp_path / "none.duckdb"), read_only=True)
