"""A DuckDB warehouse file is attached with row groups of ``ROW_GROUP_SIZE`` rows, and the
ingest engine's and the backfill's default batches fill them: a batch of new documents is
written straight into the file (compressed), not into the WAL and again at a checkpoint."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from bench.nhtsa_backfill import generate
from pipelines.backfill.request import BackfillRequest
from pipelines.backfill.run import run_backfill
from pipelines.ingest import run_ingest
from pipelines.manifest import parse_manifest
from warehouse.backends import ROW_GROUP_SIZE
from warehouse.errors import ReceiptsError
from warehouse.ingest import DEFAULT_BATCH_SIZE
from warehouse.store import Warehouse


def _wal_bytes(path: Path) -> int:
    wal = Path(f"{path}.wal")
    return wal.stat().st_size if wal.exists() else 0


def _body_bytes(wh: Warehouse) -> tuple[int, int]:
    """The bytes of every stored body, and of those past the last whole row group."""
    whole = int(wh._scalar("SELECT count(*) FROM snapshots")) // ROW_GROUP_SIZE * ROW_GROUP_SIZE
    row = wh._first_row(
        "SELECT sum(octet_length(body)), "
        "coalesce(sum(octet_length(body)) FILTER (WHERE rowid >= $whole), 0) FROM snapshots",
        {"whole": whole},
    )
    assert row is not None
    return int(row[0]), int(row[1])


def _assert_bodies_skipped_the_wal(wh: Warehouse, path: Path) -> None:
    """Through the WAL, every body would sit there until a checkpoint (the bulk threshold
    is 512 MB); written into the file, only those of a partly filled row group do (with
    the other tables' rows of those documents)."""
    total, partial = _body_bytes(wh)
    whole = total - partial
    assert whole > 16 << 20  # at least a row group of bodies went into the file
    assert _wal_bytes(path) < partial + whole // 2


def _row_group_rows(wh: Warehouse, table: str) -> list[int]:
    con = wh._connection_for_tests()
    con.execute("CHECKPOINT")
    rows = con.execute(
        f"SELECT max(count) FROM pragma_storage_info('{table}') GROUP BY row_group_id "
        "ORDER BY row_group_id"
    ).fetchall()
    return [int(n) for (n,) in rows]


def test_batches_are_row_groups() -> None:
    assert DEFAULT_BATCH_SIZE == ROW_GROUP_SIZE
    assert BackfillRequest(Path("f.zip"), "complaints").batch_size == ROW_GROUP_SIZE


def test_an_ingest_batch_of_new_records_is_written_into_the_file(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    manifest = parse_manifest(
        '[corpus]\nname="rg"\nnamespace="rg"\n'
        f'[[synthetic]]\nname="rg"\ncount={2 * ROW_GROUP_SIZE + 100}\nsize=1024\n',
        Path("rg.toml"),
    )
    with Warehouse.open(str(path)) as wh:
        result = run_ingest(manifest, wh)
        assert result.counts["synthetic"]["new"] == 2 * ROW_GROUP_SIZE + 100
        _assert_bodies_skipped_the_wal(wh, path)
        assert _row_group_rows(wh, "snapshots")[:2] == [ROW_GROUP_SIZE, ROW_GROUP_SIZE]


def test_a_backfill_batch_is_written_into_the_file(tmp_path: Path) -> None:
    source = generate(tmp_path / "FLAT_CMPL.zip", 24_000)
    path = tmp_path / "w.duckdb"
    with Warehouse.open(str(path)) as wh:
        result = run_backfill(wh, BackfillRequest(source, "complaints"))
        assert result.documents.new > ROW_GROUP_SIZE
        _assert_bodies_skipped_the_wal(wh, path)
        assert _row_group_rows(wh, "revisions")[0] == ROW_GROUP_SIZE


def test_a_file_spills_beside_itself_and_cursors_see_its_tables(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    with Warehouse.open(str(path)) as wh:
        con = wh._connection_for_tests()
        spill = Path(wh._scalar("SELECT current_setting('temp_directory')"))
        assert spill.parent == Path(f"{path}.tmp") and spill.name.startswith("receipts-write-")
        cursor = con.cursor()  # a reader's own cursor: the warehouse is its default catalog
        assert cursor.execute("SELECT count(*) FROM revisions").fetchone() == (0,)


def test_a_file_opened_for_reading_refuses_writes(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    Warehouse.open(str(path)).close()
    with Warehouse.open(str(path), read_only=True) as wh:
        con = wh._connection_for_tests()
        with pytest.raises(duckdb.Error, match="read-only"):
            con.execute("INSERT INTO runs (run_id) VALUES (1)")
        with pytest.raises(duckdb.Error, match="read-only"):
            con.cursor().execute("CREATE TABLE scribble (a INTEGER)")


def test_a_missing_file_is_not_created_for_reading(tmp_path: Path) -> None:
    with pytest.raises(ReceiptsError, match="no warehouse"):
        Warehouse.open(str(tmp_path / "absent.duckdb"), read_only=True)
    assert not (tmp_path / "absent.duckdb").exists()
