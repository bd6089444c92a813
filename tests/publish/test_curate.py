"""Curation: deterministic ``_id``s, renames, ``_key``s, references, provenance that does
not churn, and a corpus limited to the manifest's documents."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipelines.ingest import run_ingest
from pipelines.manifest import Publish, load_manifest
from pipelines.publish.curate import (
    RevisionMeta,
    build_document,
    curate_manifest,
    document_hash,
    hash_of_target_document,
    strong_refs,
    with_keys,
)
from sources.base import Curated, CurationInput
from sources.registry import SOURCES
from tests.publish_corpus import FIXTURE_SOURCE, FixtureEntry, ingest, manifest_text, register
from tests.publish_corpus import curate as fixture_curate
from warehouse.canonical import canonical_json
from warehouse.errors import CurationError
from warehouse.store import Warehouse

META = RevisionMeta(
    doc_id="fixture/record/24V064000",
    kind="record",
    revision=2,
    content_hash="ab" * 32,
    source_url="https://fixture.test/record/24V064000",
    source_commit=None,
    valid_from=datetime(2026, 11, 1, 6, 0, tzinfo=UTC),
    valid_from_run=3,
    first_seen_run=1,
)


@pytest.fixture(autouse=True)
def _fixture_source(monkeypatch: pytest.MonkeyPatch) -> None:
    register(monkeypatch)


# -- pure pieces ---------------------------------------------------------------------------
def test_keys_are_content_digests_with_repeats_numbered_and_given_keys_kept() -> None:
    keyed = with_keys(
        {
            "components": [{"name": "A"}, {"name": "B"}, {"name": "A"}, {"_key": "mine", "x": 1}],
            "tags": ["a", "b"],
            "nested": {"rows": [{"cells": [{"v": 1}]}]},
        }
    )
    keys = [item["_key"] for item in keyed["components"]]
    assert keys[0] != keys[1]
    assert keys[2] == keys[0] + "-2"
    assert keys[3] == "mine"
    assert keyed["tags"] == ["a", "b"]
    assert "_key" in keyed["nested"]["rows"][0]["cells"][0]
    # the key of an object does not depend on its position
    moved = with_keys({"components": [{"name": "B"}, {"name": "A"}]})
    assert moved["components"][1]["_key"] == keys[0]


@given(st.lists(st.dictionaries(st.sampled_from("abc"), st.integers(0, 3), min_size=1)))
def test_keys_are_unique_within_every_array(items: list[dict[str, int]]) -> None:
    keys = [item["_key"] for item in with_keys(items)]
    assert len(keys) == len(set(keys))
    assert with_keys(items) == with_keys(items)


def test_strong_refs_are_in_namespace_and_not_weak() -> None:
    value = {
        "a": {"_type": "reference", "_ref": "ns.article.1"},
        "b": [{"_ref": "ns.comment.2", "_weak": True}, {"_ref": "other.thing"}],
        "c": {"deep": [{"_ref": "ns.comment.3"}]},
    }
    assert strong_refs(value, "ns") == {"ns.article.1", "ns.comment.3"}


def test_build_document_applies_renames_keys_and_provenance() -> None:
    curated = Curated(
        "safetyRecord",
        {"subject": "Air bag", "components": [{"name": "AIR BAGS"}], "licence": "CC0"},
    )
    publish = Publish(types={"safetyRecord": "tsb"}, fields={"safetyRecord": {"subject": "title"}})
    document = build_document("ns", "ns.record.24V064000", META, curated, publish)
    body = document.document()
    assert body["_id"] == "ns.record.24V064000"
    assert body["_type"] == "tsb"
    assert body["title"] == "Air bag" and "subject" not in body
    assert set(body["components"][0]) == {"_key", "name"}
    assert body["provenance"] == {
        "docId": "fixture/record/24V064000",
        "revision": 2,
        "contentHash": "ab" * 32,
        "sourceUrl": "https://fixture.test/record/24V064000",
        "capturedAt": "2026-11-01T06:00:00Z",
        "firstSeenRun": 1,
        "lastVerifiedRun": 3,
        "ownedFields": ["components", "licence", "title"],
        "curatedHash": document.curated_hash,
    }
    assert document.owned_fields == ("components", "licence", "title")


def test_curated_hash_covers_everything_owned_and_survives_a_round_trip() -> None:
    document = build_document("ns", "ns.x.1", META, Curated("t", {"a": 1, "b": [1]}), Publish())
    body = document.document()
    assert hash_of_target_document(body) == document.curated_hash
    # fields the pipeline does not own (a Studio note, system fields) do not matter
    assert hash_of_target_document({**body, "note": "mine", "_rev": "r"}) == document.curated_hash
    # an owned field edited in the target does
    assert hash_of_target_document({**body, "a": 2}) != document.curated_hash
    renamed = build_document("ns", "ns.x.1", META, Curated("u", {"a": 1, "b": [1]}), Publish())
    assert renamed.curated_hash != document.curated_hash
    assert hash_of_target_document({"_id": "ns.x.1", "_type": "t"}) is None
    owned = {"a": 1, "b": [1], "provenance": body["provenance"]}
    assert document.curated_hash == document_hash("t", owned)


@pytest.mark.parametrize(
    ("fields", "publish", "message"),
    [
        ({"provenance": 1}, Publish(), "field 'provenance' is not a field the pipeline may own"),
        ({"_secret": 1}, Publish(), "field '_secret'"),
        (
            {"a": 1, "b": 2},
            Publish(fields={"t": {"a": "b"}}),
            "two fields would be named 'b'",
        ),
    ],
)
def test_build_document_refuses_fields_it_cannot_own(
    fields: dict[str, int], publish: Publish, message: str
) -> None:
    with pytest.raises(CurationError, match=message):
        build_document("ns", "ns.x.1", META, Curated("t", fields), publish)


# -- from the warehouse --------------------------------------------------------------------
def test_curated_corpus_has_references_keys_and_a_stable_order(
    tmp_path: Path, wh: Warehouse
) -> None:
    path = ingest(tmp_path, wh, manifest_text(synthetic=3))
    documents = curate_manifest(load_manifest(path), wh)
    ids = [d.id for d in documents]
    assert ids == sorted(ids)
    assert ids == [
        "atlas.article.101",
        "atlas.comment.2a4b9",
        "atlas.comment.2a4bc",
        "atlas.record.24V064000",
        "atlas.record.bulk-0",
        "atlas.record.bulk-1",
        "atlas.record.bulk-2",
    ]
    by_id = {d.id: d for d in documents}
    reply = by_id["atlas.comment.2a4bc"]
    assert reply.fields["parent"] == {"_type": "reference", "_ref": "atlas.comment.2a4b9"}
    assert reply.fields["article"]["_ref"] == "atlas.article.101"
    assert reply.refs == ("atlas.article.101", "atlas.comment.2a4b9")
    record = by_id["atlas.record.24V064000"]
    keys = [c["_key"] for c in record.fields["components"]]
    assert len(set(keys)) == 3 and keys[2] == keys[0] + "-2"
    assert record.fields["licence"] == "CC-BY-4.0"  # curation metadata from the manifest entry
    assert by_id["atlas.record.bulk-0"].type == "syntheticRecord"


def test_same_upstream_bytes_give_the_same_documents_byte_for_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RECEIPTS_NOW", "2026-11-01T06:00:00Z")
    outputs = []
    for name in ("one", "two"):
        with Warehouse.open(str(tmp_path / f"{name}.duckdb")) as wh:
            path = ingest(tmp_path, wh, manifest_text(synthetic=5))
            documents = curate_manifest(load_manifest(path), wh)
            outputs.append(b"\n".join(canonical_json(d.document()) for d in documents))
    assert outputs[0] == outputs[1]


def test_a_run_that_finds_nothing_new_changes_no_field(tmp_path: Path, wh: Warehouse) -> None:
    path = ingest(tmp_path, wh, manifest_text(synthetic=5))
    first = curate_manifest(load_manifest(path), wh)
    ingest(tmp_path, wh, manifest_text(synthetic=5))  # run 2: same upstream
    second = curate_manifest(load_manifest(path), wh)
    assert [d.document() for d in first] == [d.document() for d in second]
    assert {d.fields["provenance"]["lastVerifiedRun"] for d in second} == {1}

    ingest(tmp_path, wh, manifest_text(synthetic=5, revision=1))  # run 3: one comment changed
    third = {d.id: d for d in curate_manifest(load_manifest(path), wh)}
    changed = third["atlas.comment.2a4b9"].fields["provenance"]
    assert (changed["revision"], changed["lastVerifiedRun"], changed["firstSeenRun"]) == (2, 3, 1)
    unchanged = [d for d in first if d.id != "atlas.comment.2a4b9"]
    assert all(third[d.id].curated_hash == d.curated_hash for d in unchanged)


def test_tombstoned_and_foreign_documents_are_not_curated(tmp_path: Path, wh: Warehouse) -> None:
    path = ingest(tmp_path, wh, manifest_text())
    ingest(tmp_path, wh, manifest_text(drop=["comment/2a4bc"]))
    other = tmp_path / "other.toml"
    other.write_text(
        '[corpus]\nname = "other"\nnamespace = "other"\n[[synthetic]]\nname = "o"\ncount = 2\n'
    )
    run_ingest(load_manifest(other), wh)
    ids = [d.id for d in curate_manifest(load_manifest(path), wh)]
    assert "atlas.comment.2a4bc" not in ids  # tombstone
    assert not any("o-" in i for i in ids)  # another manifest's scope
    assert [d.id for d in curate_manifest(load_manifest(other), wh)] == [
        "other.record.o-0",
        "other.record.o-1",
    ]


def test_documents_of_an_entry_removed_from_the_manifest_leave_the_corpus(
    tmp_path: Path, wh: Warehouse
) -> None:
    path = ingest(tmp_path, wh, manifest_text(synthetic=2))
    assert len(curate_manifest(load_manifest(path), wh)) == 6
    ingest(tmp_path, wh, manifest_text())  # a complete run without the [[synthetic]] entry
    ids = [d.id for d in curate_manifest(load_manifest(path), wh)]
    assert ids == [
        "atlas.article.101",
        "atlas.comment.2a4b9",
        "atlas.comment.2a4bc",
        "atlas.record.24V064000",
    ]


def test_one_document_that_cannot_be_curated_stops_the_whole_corpus(
    tmp_path: Path, wh: Warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = ingest(tmp_path, wh, manifest_text(synthetic=2))

    def broken(document: CurationInput, entries: list[FixtureEntry]) -> Curated:
        if document.kind == "comment":
            raise KeyError("body_html")
        return fixture_curate(document, entries)

    monkeypatch.setitem(SOURCES, "fixture", dataclasses.replace(FIXTURE_SOURCE, curate=broken))
    with pytest.raises(CurationError) as caught:
        curate_manifest(load_manifest(path), wh)
    message = str(caught.value)
    assert message.startswith("2 document(s) of atlas could not be curated, so nothing was")
    assert "fixture/comment/2a4b9: 'body_html'" in message


def test_a_source_without_curation_is_named(
    tmp_path: Path, wh: Warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = ingest(tmp_path, wh, manifest_text())
    monkeypatch.setitem(SOURCES, "fixture", dataclasses.replace(FIXTURE_SOURCE, curate=None))
    with pytest.raises(CurationError, match="its source does not curate documents"):
        curate_manifest(load_manifest(path), wh)
