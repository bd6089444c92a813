"""Golden test of the exact warehouse schema, and the migration ledger."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import cli
from warehouse.digests import row_counts
from warehouse.errors import SchemaError
from warehouse.schema import migrations
from warehouse.store import Warehouse

GOLDEN = Path(__file__).parent.parent / "golden" / "schema.txt"


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
    meta = wh.meta()
    assert meta.pop("log_origin").startswith("receipts/")  # the transparency log's origin
    assert meta == {"hash_algorithm": "sha256", "canonical_form_version": "2"}


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
    with pytest.raises(SchemaError, match="differs from the one this version ships"):
        Warehouse.open(str(warehouse_path))


def test_read_only_open_of_a_missing_warehouse_says_what_to_do(tmp_path: Path) -> None:
    from warehouse.errors import WarehouseError

    with pytest.raises(WarehouseError, match="run `receipts ingest MANIFEST` first"):
        Warehouse.open(str(tmp_path / "none.duckdb"), read_only=True)


@pytest.fixture
def behind(warehouse_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A warehouse made by a version that shipped every migration but the last."""
    with monkeypatch.context() as patched:
        patched.setattr("warehouse.schema.migrations", lambda: migrations()[:-1])
        Warehouse.open(str(warehouse_path)).close()
    return warehouse_path


def test_a_warehouse_behind_is_refused_by_readers_and_brought_up_by_migrate(behind: Path) -> None:
    before, last = migrations()[-2:]
    name = f"{last.version:04d}_{last.name}"
    listed = cli("ls", "--warehouse", behind)
    assert listed.exit_code == 1
    assert f"schema version {before.version}, behind" in listed.stderr
    assert "run `receipts migrate`" in listed.stderr
    checked = cli("migrate", "--check", "--warehouse", behind)
    assert checked.exit_code == 1
    assert checked.stdout.endswith(f"schema version {before.version}; pending: {name}\n")
    as_json = cli("migrate", "--check", "--json", "--warehouse", behind)
    assert as_json.exit_code == 1
    assert json.loads(as_json.stdout)["pending"] == [name]
    with Warehouse.open(str(behind), read_only=True, migrate=False) as wh:
        assert wh.schema_version() == before.version  # --check changed nothing
    migrated = cli("migrate", "--json", "--warehouse", behind)
    assert migrated.exit_code == 0, migrated.stderr
    report = json.loads(migrated.stdout)
    assert (report["applied"], report["schema_version"]) == ([name], last.version)
    again = cli("migrate", "--check", "--warehouse", behind)
    assert again.exit_code == 0
    assert again.stdout.endswith(f"schema version {last.version}, up to date\n")
    assert cli("ls", "--warehouse", behind).exit_code == 0


def test_a_newer_schema_is_refused_for_writing_too(warehouse_path: Path) -> None:
    """An older receipts (a forgotten cron job, say) must not write to a warehouse a newer
    one migrated: it would write rows without what the newer schema holds them to."""
    with Warehouse.open(str(warehouse_path)) as wh:
        # test-only: a migration from a future version, behind the warehouse's back
        wh._connection_for_tests().execute(
            "INSERT INTO schema_migrations SELECT 99, 'future', 'x', now()"
        )
    with pytest.raises(SchemaError, match="newer than this receipts understands"):
        Warehouse.open(str(warehouse_path))
    migrated = cli("migrate", "--warehouse", warehouse_path)
    assert migrated.exit_code == 1
    assert "schema version 99, newer than this receipts" in migrated.stderr
    assert cli("ls", "--warehouse", warehouse_path).exit_code == 1
