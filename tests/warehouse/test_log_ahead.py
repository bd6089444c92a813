"""A DuckDB file's ingest batches make their log entries on a second connection while the
batch's rows are written (warehouse.tlog.ahead): the log still agrees with the rows, a
failure there fails the batch with nothing written, and entries numbered against a log that
moved are refused."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from warehouse.canonical import canonical_json
from warehouse.digests import row_counts
from warehouse.errors import IntegrityError
from warehouse.ingest import Counts, Ingestor
from warehouse.ingest_batch import payload_table
from warehouse.records import Listing, Provenance, Record
from warehouse.runs import finish_run, start_run
from warehouse.store import Warehouse
from warehouse.tlog import store
from warehouse.tlog.ahead import Ahead
from warehouse.tlog.check import check_log


@pytest.fixture
def file_wh(tmp_path: Path) -> Iterator[Warehouse]:
    warehouse = Warehouse.open(str(tmp_path / "w.duckdb"))
    yield warehouse
    warehouse.close()


def rec(key: int, value: object) -> Record:
    return Record(
        doc_id=f"test/item/{key}",
        kind="item",
        body=canonical_json(value),
        provenance=Provenance(url=f"https://example.test/{key}", source_format="test"),
    )


def run_listing(wh: Warehouse, records: list[Record], complete: bool = True) -> Counts:
    info = start_run(wh, "ingest", "test", "h")
    try:
        return Ingestor(wh, info.run_id, batch_size=3).ingest(
            "test", Listing("test:all", iter(records), complete)
        )
    finally:
        finish_run(wh, info.run_id, "ok", {}, [])


def kinds(wh: Warehouse) -> list[tuple[str, str, int]]:
    rows = wh._con.execute(
        f"SELECT kind, doc_id, revision FROM {store.ENTRIES} ORDER BY idx"
    ).fetchall()
    return [(str(k), str(d), int(r)) for k, d, r in rows]


def test_new_changed_gone_and_restored_documents_log_as_in_the_transaction(
    file_wh: Warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[str] = []
    real = store.prepare

    def watched(*args: object, **kwargs: object) -> store.Prepared:
        threads.append(threading.current_thread().name)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "prepare", watched)
    five = [rec(i, {"i": i}) for i in range(5)]
    run_listing(file_wh, five)
    run_listing(file_wh, [rec(0, {"i": "changed"}), *five[1:4]])  # 4 gone
    assert run_listing(file_wh, [rec(0, {"i": "changed"}), *five[1:]]).restored == 1

    # The batches' entries were made on the ahead thread; the tombstone's in the transaction.
    assert threads.count("tlog-ahead") == 2 + 1 + 1
    assert "MainThread" in threads
    logged = kinds(file_wh)
    assert logged[:5] == [("revision", f"test/item/{i}", 1) for i in range(5)]
    assert logged[5:] == [
        ("revision", "test/item/0", 2),
        ("tombstone", "test/item/4", 2),
        ("restoration", "test/item/4", 3),
    ]
    report = check_log(file_wh)  # every leaf rebuilt from its rows, the tree again in SQL
    assert report.problems == []
    assert report.size == 8


def test_a_failure_making_the_entries_fails_the_batch_and_writes_nothing(
    file_wh: Warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_listing(file_wh, [rec(0, {"i": 0})])
    before = row_counts(file_wh, ("documents", "snapshots", "revisions", "sightings"))

    def broken(*args: object, **kwargs: object) -> store.Prepared:
        raise RuntimeError("the entries could not be made")

    monkeypatch.setattr(store, "prepare", broken)
    with pytest.raises(RuntimeError, match="could not be made"):
        run_listing(file_wh, [rec(0, {"i": 0}), rec(1, {"i": 1})], complete=False)
    monkeypatch.undo()
    assert row_counts(file_wh, ("documents", "snapshots", "revisions", "sightings")) == before
    assert store.size(file_wh._con) == 1
    assert check_log(file_wh).problems == []


def test_entries_numbered_against_a_log_that_moved_are_refused(file_wh: Warehouse) -> None:
    run_listing(file_wh, [rec(0, {"i": 0})])
    payload = payload_table([rec(1, {"i": 1})], ["0" * 64], [None])
    with (
        pytest.raises(
            IntegrityError, match="holds 2 entries where this batch's were numbered from 1"
        ),
        file_wh._transaction() as con,
        Ahead(con, payload, [], 1) as ahead,
    ):
        store.append(
            con,
            "SELECT 'push' AS kind, CAST(NULL AS VARCHAR) AS doc_id, "
            "CAST(NULL AS INTEGER) AS revision, 7 AS push_id, 'x'::BLOB AS entry",
            "push_id",
        )
        ahead.write(con)
    assert store.size(file_wh._con) == 1  # the transaction rolled back


def test_a_batch_that_fails_beside_them_leaves_no_thread_and_writes_nothing(
    file_wh: Warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    import duckdb

    from warehouse import ingest_sql

    run_listing(file_wh, [rec(0, {"i": 0})])
    before = row_counts(file_wh, ("documents", "snapshots", "revisions", "sightings"))
    monkeypatch.setattr(
        ingest_sql, "INSERT_REVISIONS", "INSERT INTO no_such_table VALUES ($run, $at, $scope)"
    )
    with pytest.raises(duckdb.CatalogException, match="no_such_table"):
        run_listing(file_wh, [rec(1, {"i": 1})], complete=False)
    monkeypatch.undo()
    assert not [t for t in threading.enumerate() if t.name == "tlog-ahead"]
    assert row_counts(file_wh, ("documents", "snapshots", "revisions", "sightings")) == before
    assert store.size(file_wh._con) == 1
    assert run_listing(file_wh, [rec(1, {"i": 1})], complete=False).new == 1  # and goes on
    assert check_log(file_wh).problems == []
