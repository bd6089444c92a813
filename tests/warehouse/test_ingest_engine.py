"""The ingest engine against DESIGN.md's invariants: determinism, idempotency, append-only
history, tombstones with a circuit breaker, restoration, and hash-what-you-store."""

from __future__ import annotations

import hashlib
import re
import sys
from collections.abc import Iterable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import REPO, TEST_WAREHOUSE
from warehouse import history, integrity
from warehouse.canonical import canonical_json
from warehouse.digests import row_counts
from warehouse.errors import MassRetireRefused
from warehouse.ingest import Counts, Ingestor
from warehouse.records import Listing, Provenance, Record
from warehouse.runs import finish_run, progress, start_run
from warehouse.store import Warehouse


def rec(key: str, value: object, url: str | None = None, commit: str | None = None) -> Record:
    return Record(
        doc_id=f"test/item/{key}",
        kind="item",
        body=canonical_json(value),
        provenance=Provenance(url=url, commit=commit, source_format="test"),
    )


def run_listing(
    wh: Warehouse,
    records: Iterable[Record],
    *,
    complete: bool = False,
    scope: str = "test:all",
    allow_mass_retire: bool = False,
    batch_size: int = 3,
) -> Counts:
    info = start_run(wh, "ingest", "test", "h")
    ingestor = Ingestor(wh, info.run_id, batch_size=batch_size, allow_mass_retire=allow_mass_retire)
    try:
        return ingestor.ingest("test", Listing(scope, records, complete))
    finally:
        finish_run(wh, info.run_id, "ok", {}, [])


def table_counts(wh: Warehouse) -> dict[str, int]:
    return row_counts(wh, ("documents", "snapshots", "revisions", "sightings"))


def test_first_ingest_then_identical_reingest_writes_nothing(wh: Warehouse) -> None:
    records = [rec(str(i), {"i": i}) for i in range(10)]
    first = run_listing(wh, records)
    assert (first.new, first.unchanged) == (10, 0)
    before = table_counts(wh)
    again = run_listing(wh, records)
    assert (again.new, again.changed, again.unchanged) == (0, 0, 10)
    assert table_counts(wh) == before


def test_hash_what_you_store(wh: Warehouse) -> None:
    run_listing(wh, [rec("a", {"x": 1}), rec("b", {"x": 2})])
    stored = list(integrity.iter_snapshots(wh))
    assert len(stored) == 2
    for content_hash, body in stored:
        assert hashlib.sha256(body).hexdigest() == content_hash


def test_change_creates_a_new_revision_and_keeps_the_old_bytes(wh: Warehouse) -> None:
    run_listing(wh, [rec("a", {"text": "first wording"})])
    counts = run_listing(wh, [rec("a", {"text": "second wording"})])
    assert counts.changed == 1
    revisions = history.history(wh, "test/item/a")
    assert [r["revision"] for r in revisions] == [1, 2]
    assert revisions[0]["valid_until_run"] == revisions[1]["valid_from_run"]
    assert revisions[1]["current"] and not revisions[0]["current"]
    old = history.snapshot(wh, "test/item/a", revision=1)
    assert old.body == b'{"text":"first wording"}'


def test_identical_bytes_are_stored_once(wh: Warehouse) -> None:
    run_listing(wh, [rec("a", {"same": 1}), rec("b", {"same": 1})])
    assert row_counts(wh, ("snapshots", "revisions")) == {"snapshots": 1, "revisions": 2}


def test_bytes_already_stored_are_not_stored_again_by_a_later_batch(wh: Warehouse) -> None:
    # b takes a's first wording in the batch after the one that stored it, and a goes back
    # to its first wording in a later run: both are revisions of a snapshot already held.
    run_listing(
        wh, [rec("a", {"text": "first"}), rec("c", 1), rec("b", {"text": "first"})], batch_size=2
    )
    run_listing(wh, [rec("a", {"text": "second"})])
    counts = run_listing(wh, [rec("a", {"text": "first"})])
    assert counts.changed == 1
    assert row_counts(wh, ("snapshots", "revisions")) == {"snapshots": 3, "revisions": 5}
    assert history.snapshot(wh, "test/item/a").body == b'{"text":"first"}'


@pytest.mark.parametrize("batch_size", [1, 10])
def test_a_doc_id_repeated_in_a_listing_keeps_the_first(wh: Warehouse, batch_size: int) -> None:
    listing = [rec("a", {"v": 1}), rec("b", 0), rec("a", {"v": 2})]
    counts = run_listing(wh, listing, batch_size=batch_size)
    assert (counts.new, counts.changed) == (2, 0)
    assert history.snapshot(wh, "test/item/a").body == b'{"v":1}'
    assert run_listing(wh, listing, batch_size=batch_size).unchanged == 2


def test_complete_listing_tombstones_the_missing_and_restores_on_return(wh: Warehouse) -> None:
    everything = [rec(str(i), {"i": i}) for i in range(4)]
    run_listing(wh, everything, complete=True)
    counts = run_listing(wh, everything[1:], complete=True)
    assert counts.gone == 1
    revs = history.history(wh, "test/item/0")
    assert revs[-1]["tombstone"] and revs[-1]["tombstone_reason"] == "gone upstream"
    # Gone again is not gone twice.
    assert run_listing(wh, everything[1:], complete=True).gone == 0
    restored = run_listing(wh, everything, complete=True)
    assert restored.restored == 1
    revs = history.history(wh, "test/item/0")
    assert [r["tombstone"] for r in revs] == [False, True, False]
    assert revs[2]["content_hash"] == revs[0]["content_hash"]


def test_incomplete_listings_never_tombstone(wh: Warehouse) -> None:
    run_listing(wh, [rec("a", 1), rec("b", 2)])
    assert run_listing(wh, [rec("a", 1)]).gone == 0


def test_tombstones_stay_inside_their_scope(wh: Warehouse) -> None:
    run_listing(wh, [rec("a", 1), rec("b", 2)], complete=True, scope="s1")
    run_listing(wh, [rec("c", 3)], complete=True, scope="s2")
    assert run_listing(wh, [rec("c", 3)], complete=True, scope="s2").gone == 0
    assert history.history(wh, "test/item/a")[-1]["tombstone"] is False


def test_circuit_breaker_refuses_mass_retirement(wh: Warehouse) -> None:
    everything = [rec(str(i), {"i": i}) for i in range(10)]
    run_listing(wh, everything, complete=True)
    with pytest.raises(MassRetireRefused, match="refusing to retire 6 of 10"):
        run_listing(wh, everything[:4], complete=True)
    assert not any(r.tombstone for r in history.revisions(wh))
    allowed = run_listing(wh, everything[:4], complete=True, allow_mass_retire=True)
    assert allowed.gone == 6


def test_half_of_a_scope_may_go_without_override(wh: Warehouse) -> None:
    everything = [rec(str(i), {"i": i}) for i in range(4)]
    run_listing(wh, everything, complete=True)
    assert run_listing(wh, everything[:2], complete=True).gone == 2


def test_sightings_record_every_commit_at_which_bytes_were_seen(wh: Warehouse) -> None:
    run_listing(wh, [rec("f", {"x": 1}, url="https://h/f", commit="a" * 40)])
    counts = run_listing(wh, [rec("f", {"x": 1}, url="https://h/f", commit="b" * 40)])
    assert counts.unchanged == 1
    revs = history.history(wh, "test/item/f")
    assert len(revs) == 1
    assert [s["commit"] for s in revs[0]["seen_at"]] == ["a" * 40, "b" * 40]
    # Seen again at a known commit: nothing new is written.
    before = table_counts(wh)
    run_listing(wh, [rec("f", {"x": 1}, url="https://h/f", commit="b" * 40)])
    assert table_counts(wh) == before


def test_batches_commit_with_their_progress(wh: Warehouse) -> None:
    run_listing(wh, [rec(str(i), i) for i in range(7)], batch_size=3)
    rows = [(p.batch_no, p.records, p.new) for p in progress(wh)]
    assert rows == [(1, 3, 3), (2, 3, 3), (3, 1, 1)]


def test_a_listing_of_whole_batches_commits_no_empty_one_and_an_empty_listing_one(
    wh: Warehouse,
) -> None:
    run_listing(wh, [rec(str(i), i) for i in range(6)], batch_size=3)
    assert [(p.batch_no, p.records) for p in progress(wh)] == [(1, 3), (2, 3)]
    assert run_listing(wh, [], batch_size=3).records == 0
    assert [(p.batch_no, p.records) for p in progress(wh)][2:] == [(1, 0)]


def test_the_write_path_never_updates_or_deletes() -> None:
    """Append-only: no UPDATE/DELETE/UPSERT statement anywhere in the packages. The one
    exception is the search index (warehouse/search_index.py): derived from the history,
    never part of it, replaced whole by each ``receipts index``; it empties only its own
    tables."""
    from warehouse import search_index

    pattern = re.compile(
        r"\b(UPDATE\s+\w+\s+SET|DELETE\s+FROM|ON\s+CONFLICT|INSERT\s+OR\s+REPLACE)\b", re.I
    )
    offenders = []
    for package in ("warehouse", "pipelines", "sources"):
        for path in (REPO / package).rglob("*"):
            if path.suffix in (".py", ".sql") and pattern.search(path.read_text()):
                offenders.append(str(path.relative_to(REPO)))
    assert offenders == ["warehouse/search_index.py"]
    text = (REPO / "warehouse" / "search_index.py").read_text()
    assert [m.group(0) for m in pattern.finditer(text)] == ["DELETE FROM"]
    assert 'con.execute(f"DELETE FROM {table}")' in text
    assert search_index._TABLES and all(t.startswith("search_") for t in search_index._TABLES)


def test_schema_declares_no_key_constraints() -> None:
    sql = "\n".join(p.read_text() for p in (REPO / "warehouse" / "migrations").glob("*.sql"))
    sql = re.sub(r"--[^\n]*", "", sql)
    assert not re.search(r"PRIMARY\s+KEY|UNIQUE", sql, re.I)


values = st.dictionaries(st.sampled_from("abcdef"), st.integers(0, 3), min_size=1)


# Fewer examples in a lake session (the lake subset runs this module again; this test
# writes a DuckDB file of its own there too).
@settings(
    max_examples=25 if TEST_WAREHOUSE == "duckdb" else 8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(st.lists(st.tuples(st.sampled_from("pqrstu"), values), min_size=1, max_size=12))
def test_reingesting_the_same_input_changes_nothing(
    tmp_path_factory: pytest.TempPathFactory, items: list[tuple[str, dict[str, int]]]
) -> None:
    path = tmp_path_factory.mktemp("prop") / "w.duckdb"
    with Warehouse.open(str(path)) as wh:
        records = [rec(k, v) for k, v in items]
        run_listing(wh, records, complete=True)
        before = table_counts(wh)
        again = run_listing(wh, records, complete=True)
        assert again.new == again.changed == again.gone == again.restored == 0
        assert table_counts(wh) == before
        # Store -> load round-trips the bytes exactly.
        first: dict[str, bytes] = {}
        for r in records:
            first.setdefault(r.doc_id, r.body)
        for doc, body in first.items():
            assert history.snapshot(wh, doc).body == body


def departed_after(wh: Warehouse, listing: Listing) -> list[str]:
    """Ingest one listing as a whole run of corpus ``c``; what left the corpus."""
    info = start_run(wh, "ingest", "c", "h")
    ingestor = Ingestor(wh, info.run_id, corpus="c")
    try:
        ingestor.ingest("test", listing)
        return ingestor.retire_departed()
    finally:
        finish_run(wh, info.run_id, "ok", {}, [])


def test_a_lower_bound_listing_keeps_what_it_missed_in_the_corpus(wh: Warehouse) -> None:
    records = [rec(str(i), {"i": i}) for i in range(4)]
    assert departed_after(wh, Listing("test:s", records)) == []
    assert departed_after(wh, Listing("test:s", records[:3], lower_bound=True)) == []
    assert [r["tombstone"] for r in history.history(wh, "test/item/3")] == [False]
    # The same short listing, not declared a lower bound, lets the missing one go.
    assert departed_after(wh, Listing("test:s", records[:3])) == ["test/item/3"]


def test_a_listing_cannot_be_complete_and_a_lower_bound() -> None:
    with pytest.raises(ValueError, match="cannot be complete and a lower bound"):
        Listing("test:s", [], complete=True, lower_bound=True)


def test_an_ingest_asks_once_whether_the_warehouse_has_the_log(
    wh: Warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inside a lake's transaction the catalog takes 30-40 ms to answer; a run asks once,
    whatever its batches, and every batch's revisions and its tombstones are still logged."""
    import warehouse.ingest
    from warehouse.tlog import store as tlog_store

    asked: list[str] = []
    real = tlog_store.has_log

    def counted(con: object) -> bool:  # by whom (the run's checkpoint asks too, once)
        caller = sys._getframe(1).f_globals["__name__"]
        if caller in ("warehouse.ingest", "warehouse.tlog.store"):
            asked.append("has_log")
        return real(con)  # type: ignore[arg-type]

    monkeypatch.setattr(warehouse.ingest, "has_log", counted, raising=False)
    monkeypatch.setattr(tlog_store, "has_log", counted)
    run_listing(wh, [rec(str(i), i) for i in range(7)], batch_size=3)
    assert asked == ["has_log"]
    asked.clear()
    run_listing(wh, [rec(str(i), i) for i in range(3)], complete=True, allow_mass_retire=True)
    assert asked == ["has_log"]
    assert tlog_store.size(wh._con) == 7 + 4  # seven revisions, then four tombstones
