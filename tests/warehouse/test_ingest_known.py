"""A listing of several batches is looked up in what the warehouse knows of its documents, read
once (``Ingestor._read_known``), not in every revision, sighting and membership there is:
the outcome must be exactly the one the per-batch lookups give."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from warehouse.canonical import canonical_json
from warehouse.ingest import Counts, Ingestor
from warehouse.ingest_batch import shared_prefix
from warehouse.records import Listing, Provenance, Record
from warehouse.runs import finish_run, start_run
from warehouse.scopes import CURRENT_IN_SCOPE
from warehouse.store import Warehouse


def rec(namespace: str, key: str, value: object, url: str | None = None) -> Record:
    return Record(
        doc_id=f"test/{namespace}/{key}",
        kind=namespace,
        body=canonical_json(value),
        provenance=Provenance(url=url, source_format="test"),
    )


def ingest(
    wh: Warehouse,
    records: Iterable[Record],
    *,
    scope: str,
    complete: bool,
    batch_size: int = 2,
) -> Counts:
    info = start_run(wh, "ingest", "c", "h")
    ingestor = Ingestor(wh, info.run_id, batch_size=batch_size, corpus="c", allow_mass_retire=True)
    try:
        counts = ingestor.ingest("test", Listing(scope, records, complete))
        ingestor.retire_departed()
        return counts
    finally:
        finish_run(wh, info.run_id, "ok", {}, [])


def contents(wh: Warehouse) -> dict[str, list[tuple[Any, ...]]]:
    """Every row the ingests wrote, but for the times they were written at."""
    queries = {
        "revisions": "SELECT doc_id, revision, content_hash, tombstone, valid_from_run, scope, "
        "source_url FROM revisions ORDER BY ALL",
        "snapshots": "SELECT content_hash, stored_run FROM snapshots ORDER BY ALL",
        "documents": "SELECT * FROM documents ORDER BY ALL",
        "sightings": "SELECT doc_id, content_hash, source_url, source_commit, run_id "
        "FROM sightings ORDER BY ALL",
        "memberships": "SELECT corpus, doc_id, event, run_id FROM memberships ORDER BY ALL",
        "listing_misses": "SELECT run_id, scope, doc_id, revision FROM listing_misses ORDER BY ALL",
        "run_progress": "SELECT run_id, batch_no, records, new, changed, unchanged, gone, "
        "restored FROM run_progress ORDER BY ALL",
    }
    return {name: wh._con.execute(query).fetchall() for name, query in queries.items()}


def known_tables(wh: Warehouse) -> list[str]:
    rows = wh._con.execute("SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()
    return [name for (name,) in rows if name.startswith("_known")]


# A listing: records of two namespaces (so that a batch may fall outside the prefix the first
# two share), values that repeat (unchanged, changed and restored documents), with or without
# a URL; complete or not (tombstones, misses).
records = st.lists(
    st.tuples(
        st.sampled_from(["item", "item", "item", "other"]),
        st.sampled_from("abcdefg"),
        st.integers(0, 2),
        st.sampled_from([None, "https://example.test/a", "https://example.test/b"]),
    ),
    max_size=9,
).map(lambda rows: [rec(n, k, {"v": v}, url) for n, k, v, url in rows])
listings = st.lists(st.tuples(records, st.booleans()), min_size=1, max_size=4)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(listings)
def test_the_known_tables_give_what_the_per_batch_lookups_give(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    runs: list[tuple[list[Record], bool]],
) -> None:
    directory = tmp_path_factory.mktemp("known")
    outcomes = []
    for known in (True, False):
        with monkeypatch.context() as patch:
            if not known:  # the per-batch lookups only: the known tables are never read
                patch.setattr(Ingestor, "_read_known", lambda self, prefix: None)
            with Warehouse.open(str(Path(directory) / f"{known}.duckdb")) as wh:
                counts = [
                    ingest(wh, batch, scope="s", complete=complete).as_dict()
                    for batch, complete in runs
                ]
                outcomes.append((counts, contents(wh)))
    assert outcomes[0] == outcomes[1]


def test_a_listing_of_several_batches_reads_what_is_known_of_its_prefix_once(
    wh: Warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    ingest(wh, [rec("other", "x", 1)], scope="o", complete=False)
    prefixes: list[str] = []
    read_known = Ingestor._read_known

    def spied(self: Ingestor, prefix: str) -> None:
        prefixes.append(prefix)
        read_known(self, prefix)

    monkeypatch.setattr(Ingestor, "_read_known", spied)
    items = [rec("item", f"k{i}", i, "https://example.test/") for i in range(7)]
    assert ingest(wh, items, scope="s", complete=False).new == 7
    again = ingest(wh, [*items, rec("other", "x", 1)], scope="s", complete=False)
    assert (again.unchanged, again.new) == (8, 0)
    # Read at the second batch of each listing, for the prefix its first two batches share;
    # on a lake (other writers), never.
    assert prefixes == ([] if wh.is_lake else ["test/item/k", "test/item/k"])
    assert known_tables(wh) == []  # dropped when the listing ends


def test_bytes_stored_by_a_batch_outside_the_prefix_are_not_stored_again(
    wh: Warehouse,
) -> None:
    # The third batch (outside the prefix of the first two) stores new bytes; the fourth, in
    # the prefix, holds the same bytes for another document: they are stored once.
    items = [rec("item", str(i), 0) for i in range(4)]
    listing = [*items, rec("other", "x", {"new": 1}), rec("other", "y", 0)]
    listing += [rec("item", "z", {"new": 1})]
    counts = ingest(wh, listing, scope="s", complete=False)
    assert counts.new == 7
    stored = wh._con.execute(
        "SELECT count(*), count(DISTINCT content_hash) FROM snapshots"
    ).fetchall()[0]
    assert stored == (2, 2)


def test_the_stored_hashes_are_read_at_the_first_batch_that_writes(wh: Warehouse) -> None:
    items = [rec("item", f"k{i}", i) for i in range(6)]
    ingest(wh, items, scope="s", complete=False)
    tables_at_batch: list[list[str]] = []

    def noted(_: Counts) -> None:
        tables_at_batch.append(known_tables(wh))

    def again(listing: list[Record]) -> Counts:
        info = start_run(wh, "ingest", "c", "h")
        ingestor = Ingestor(wh, info.run_id, batch_size=2, on_batch=noted)
        try:
            return ingestor.ingest("test", Listing("s", listing, False))
        finally:
            finish_run(wh, info.run_id, "ok", {}, [])

    # An identical re-ingest writes nothing and never reads them.
    assert again(items).unchanged == 6
    assert ["_known_stored" in tables for tables in tables_at_batch] == [False, False, False]
    if wh.is_lake:  # no known tables at all
        return
    # Read at the first batch that writes (the third), and kept up to date after it: the
    # fourth batch's bytes, stored by the third, are not stored again.
    tables_at_batch.clear()
    changed = [*items[:4], rec("item", "k4", "new"), rec("item", "k5", 5)]
    changed += [rec("item", "k6", "new"), rec("item", "k7", 7)]
    counts = again(changed)
    assert (counts.changed, counts.new, counts.unchanged) == (1, 2, 5)
    assert ["_known_stored" in tables for tables in tables_at_batch] == [False, False, True, True]
    assert wh._con.execute("SELECT count(*) FROM snapshots").fetchall()[0][0] == 8


def test_a_listing_of_one_batch_reads_nothing_more(
    wh: Warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(Ingestor, "_read_known", lambda self, prefix: calls.append(prefix))
    ingest(wh, [rec("item", "a", 1), rec("item", "b", 2)], scope="s", complete=True)
    assert calls == []


def test_the_known_tables_are_dropped_when_the_source_fails(wh: Warehouse) -> None:
    def failing() -> Iterator[Record]:
        yield from [rec("item", str(i), i) for i in range(5)]
        raise RuntimeError("the source broke")

    with pytest.raises(RuntimeError, match="the source broke"):
        ingest(wh, failing(), scope="s", complete=False)
    assert known_tables(wh) == []


@given(st.lists(st.text(alphabet="ab/", max_size=5), min_size=1, max_size=6))
def test_the_shared_prefix_is_the_longest_every_id_starts_with(ids: list[str]) -> None:
    prefix = shared_prefix(*ids)
    assert all(i.startswith(prefix) for i in ids)
    longer = {i[: len(prefix) + 1] for i in ids}
    assert len(longer) > 1 or any(len(i) == len(prefix) for i in ids)


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.tuples(
            st.lists(st.tuples(st.sampled_from("abcd"), st.integers(0, 2)), max_size=4),
            st.sampled_from(["s1", "s2"]),
            st.booleans(),
        ),
        min_size=1,
        max_size=5,
    )
)
def test_a_scopes_current_revisions_are_the_views(
    tmp_path_factory: pytest.TempPathFactory, runs: list[tuple[list[tuple[str, int]], str, bool]]
) -> None:
    """Documents change scope (a changed record listed under another one), go and come back:
    the scope's current revisions, found from its documents alone, are the view's."""
    path = tmp_path_factory.mktemp("scope") / "w.duckdb"
    with Warehouse.open(str(path)) as wh:
        for items, scope, complete in runs:
            ingest(wh, [rec("item", k, v) for k, v in items], scope=scope, complete=complete)
        for scope in ("s1", "s2"):
            mine = wh._con.execute(
                f"SELECT doc_id, revision, tombstone, content_hash FROM {CURRENT_IN_SCOPE} c "
                "WHERE scope = $scope AND NOT tombstone ORDER BY doc_id",
                {"scope": scope},
            ).fetchall()
            view = wh._con.execute(
                "SELECT doc_id, revision, tombstone, content_hash FROM current_revisions "
                "WHERE scope = $scope AND NOT tombstone ORDER BY doc_id",
                {"scope": scope},
            ).fetchall()
            assert mine == view
