"""Snapshot bodies on a DuckDB file are stored with zstd (migration 8); a lake records the
migration with nothing to do; bodies written before it read back byte for byte after it."""

from __future__ import annotations

from pathlib import Path

import duckdb

from warehouse.ingest import ingest_records
from warehouse.records import Provenance, Record
from warehouse.runs import finish_run, start_run
from warehouse.schema import Migration, migrations
from warehouse.store import Warehouse

ZSTD_VERSION = 8


def _records(count: int, variant: str) -> list[Record]:
    return [
        Record(
            doc_id=f"synthetic/record/z-{i}",
            kind="record",
            body=(f'{{"i":{i},"text":"{variant} ' + "lorem ipsum " * (50 + i % 7) + '"}').encode(),
            provenance=Provenance(source_format="synthetic"),
        )
        for i in range(count)
    ]


def _ingest(wh: Warehouse, records: list[Record]) -> None:
    info = start_run(wh, "test", "test", "test")
    ingest_records(wh, info.run_id, "synthetic", "synthetic:z", records)
    finish_run(wh, info.run_id, "ok", {}, [])


def _snapshots(wh: Warehouse) -> list[tuple[object, ...]]:
    return (
        wh._connection_for_tests()
        .execute("SELECT * FROM snapshots ORDER BY content_hash")
        .fetchall()
    )


def _body_compressions(wh: Warehouse) -> set[str]:
    con = wh._connection_for_tests()
    con.execute("CHECKPOINT")
    rows = con.execute(
        "SELECT DISTINCT compression FROM pragma_storage_info('snapshots') "
        "WHERE column_name = 'body' AND segment_type <> 'VALIDITY'"
    ).fetchall()
    return {str(c) for (c,) in rows}


def test_only_the_body_migration_is_about_storage() -> None:
    assert [m.version for m in migrations() if m.storage_only] == [ZSTD_VERSION]
    # Only the header counts: the words further down are not a marker.
    late = Migration(99, "late", "CREATE TABLE t (a INTEGER);\n-- backend: duckdb\n")
    assert not late.storage_only


def test_a_file_in_a_format_without_zstd_keeps_its_bodies_as_they_were(tmp_path: Path) -> None:
    """A DuckDB 1.x file in its default format (v1.0.0): the rebuild would store the bodies
    uncompressed, so the migration is recorded with nothing to do."""
    path = tmp_path / "v1.duckdb"
    con = duckdb.connect(str(path), config={"storage_compatibility_version": "v1.0.0"})
    con.close()
    with Warehouse.open(str(path)) as wh:
        assert ZSTD_VERSION in wh.applied_migrations()
        _ingest(wh, _records(300, "a"))
        assert len(_snapshots(wh)) == 300
        compressions = _body_compressions(wh)
    assert compressions and not compressions & {"ZSTD", "Uncompressed"}


def test_bodies_are_stored_with_zstd_and_read_back_whole(wh: Warehouse) -> None:
    records = _records(300, "a")
    _ingest(wh, records)
    assert ZSTD_VERSION in wh.applied_migrations()
    stored = {row[0]: row[3] for row in _snapshots(wh)}
    assert sorted(stored.values()) == sorted(r.body for r in records)
    if wh.is_lake:  # Parquet files, compressed by DuckLake; no table was rebuilt
        tables = {t.name for t in wh.tables()}
        assert "snapshots_zstd" not in tables
        return
    assert _body_compressions(wh) == {"ZSTD"}


def test_a_warehouse_from_before_keeps_every_body_when_migrated(tmp_path: Path) -> None:
    path = str(tmp_path / "old.duckdb")
    with Warehouse.open(path) as old:
        _ingest(old, _records(500, "a"))
        _ingest(old, _records(500, "b"))  # a second revision of every document
        # As before migration 8 (today's writers need the later migrations, so the rows are
        # written first): the snapshots table as 0001 made it, the migration not recorded.
        con = old._connection_for_tests()
        con.execute(
            "CREATE TABLE snapshots_plain (content_hash VARCHAR NOT NULL, size BIGINT NOT NULL, "
            "media_type VARCHAR NOT NULL, body BLOB NOT NULL, stored_run BIGINT NOT NULL)"
        )
        con.execute("INSERT INTO snapshots_plain SELECT * FROM snapshots")
        con.execute("DROP TABLE snapshots")
        con.execute("ALTER TABLE snapshots_plain RENAME TO snapshots")
        con.execute("DELETE FROM schema_migrations WHERE version = ?", [ZSTD_VERSION])
        rows = _snapshots(old)
        assert ZSTD_VERSION not in old.applied_migrations()
        assert _body_compressions(old) != {"ZSTD"}
    with Warehouse.open(path) as new:
        assert ZSTD_VERSION in new.applied_migrations()
        assert _snapshots(new) == rows
        assert _body_compressions(new) == {"ZSTD"}
        fresh = Warehouse.open(str(tmp_path / "fresh.duckdb"))
        try:
            assert new.tables() == fresh.tables()
        finally:
            fresh.close()


def test_duckdb_draws_no_progress_bar_of_its_own(wh: Warehouse) -> None:
    """A migration copying a large table runs for seconds: DuckDB would draw its progress
    bar into stdout, where `--json` output goes."""
    con = wh._connection_for_tests()
    assert con.execute("SELECT current_setting('enable_progress_bar')").fetchone() == (False,)
