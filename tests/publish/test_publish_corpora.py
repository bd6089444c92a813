"""Two corpora in one warehouse publishing to one target: neither plans, prunes or counts as
its own a document the other publishes, and the receipt sees any change to them (against
the Content Lake fake whose queries groq-js evaluates)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fakes.node_lake import NodeLake
from pipelines.checks.target_drift import target_drift
from pipelines.cli.exits import EXIT_GUARD, EXIT_USAGE
from pipelines.manifest import load_manifest
from pipelines.publish.curate import curate_manifest
from pipelines.publish.targets.ndjson import NdjsonTarget
from pipelines.publish.targets.sanity_http import SanityHttpTarget, SanitySettings
from sources.http import HttpFactory
from tests.conftest import cli
from tests.publish_corpus import ingest, manifest_text, publish, register
from warehouse import pushes as ledger
from warehouse.errors import NamespaceTaken, NamespaceViolation
from warehouse.pushes import Receipt
from warehouse.store import Warehouse

TARGET = "sanity:fakeproj/production"
# Documents a corpus published under "atlas.legacy", a namespace from before namespaces
# were single segments: inside "atlas", but not atlas's.
LEGACY = [
    {"_id": "atlas.legacy.page.1", "_type": "page", "title": "legacy one"},
    {"_id": "atlas.legacy.page.2", "_type": "page", "title": "legacy two"},
    {"_id": "drafts.atlas.legacy.page.2", "_type": "page", "title": "legacy draft"},
]


@pytest.fixture(autouse=True)
def _fixture_source(monkeypatch: pytest.MonkeyPatch) -> None:
    register(monkeypatch)


def corpus_text(name: str, **options: Any) -> str:
    return manifest_text(**options).replace('name = "atlas"', f'name = "{name}"', 1)


def legacy_corpus(wh: Warehouse, lake: NodeLake | None, target: str = TARGET) -> None:
    """What an earlier version left: a corpus that pushed namespace "atlas.legacy" to the
    target (its ledger rows) and the documents it wrote there."""
    for document in LEGACY if lake is not None else []:
        lake.put(document)
    push_id = ledger.start_push(
        wh,
        target=target,
        namespace="atlas.legacy",
        manifest_name="legacy",
        run_id=None,
        plan_counts={"create": 2},
        unrelated_before=0,
    )
    ledger.finish_push(
        wh,
        push_id,
        status="ok",
        applied=2,
        transaction_ids=[],
        receipt=Receipt(0, 0, 0),
        conflicts=[],
        notices=[],
        message=None,
    )


def test_a_corpus_never_prunes_or_counts_as_its_own_another_corpus_documents(
    tmp_path: Path, wh: Warehouse, node_lake: NodeLake
) -> None:
    node_lake.put({"_id": "homepage", "_type": "page"})
    legacy_corpus(wh, node_lake)
    path = ingest(tmp_path, wh, manifest_text())
    result = publish(path, wh, prune=True)
    assert result.status == "ok", result.message
    assert result.plan.orphan == [] and result.plan.counts()["delete"] == 0
    assert all(not i.startswith("atlas.legacy.") for i in result.plan.create)
    # the legacy corpus's documents, its draft included, are unrelated to atlas
    assert (result.unrelated_before, result.unrelated_after) == (4, 4)
    assert any("atlas.legacy" in n and "unrelated" in n for n in result.notices)
    for document in LEGACY:
        assert node_lake.documents[document["_id"]]["title"] == document["title"]
    # and target drift does not report them as atlas's
    settings, http = SanitySettings.from_env(), HttpFactory(user_agent="receipts-tests")
    assert settings is not None
    target = SanityHttpTarget(settings, http)
    try:
        documents = curate_manifest(load_manifest(path), wh)
        drift = target_drift(wh, target, "atlas", "atlas", documents)
    finally:
        target.close()
        http.close()
    assert not drift.found and drift.written == [] and drift.deleted == []


def test_a_deletion_of_another_corpus_document_during_a_push_trips_the_guard(
    tmp_path: Path, warehouse_path: Path, node_lake: NodeLake
) -> None:
    with Warehouse.open(str(warehouse_path)) as wh:
        legacy_corpus(wh, node_lake)
    path = tmp_path / "atlas.toml"
    path.write_text(manifest_text())
    assert cli("ingest", path, "--warehouse", warehouse_path).exit_code == 0
    node_lake.before_mutation({"delete": {"id": "atlas.legacy.page.1"}})
    result = cli("publish", path, "--warehouse", warehouse_path)
    assert result.exit_code == EXIT_GUARD, result.output
    assert "unrelated documents moved during the push: 3 before, 2 after (-1)" in result.stderr
    assert "receipt: unrelated documents before 3, after 2; touched by us 0" in result.stdout


def test_a_transaction_writing_another_corpus_document_trips_the_guard(
    tmp_path: Path, wh: Warehouse, node_lake: NodeLake
) -> None:
    legacy_corpus(wh, node_lake)
    path = ingest(tmp_path, wh, manifest_text())
    node_lake.write_alongside("atlas.legacy.page.2", {"title": "rewritten"})
    result = publish(path, wh)
    assert result.status == "guard-tripped"
    assert result.touched_by_us == 1 and result.touched_ids == ["atlas.legacy.page.2"]


def test_a_curated_id_inside_another_corpus_namespace_is_refused(
    tmp_path: Path, wh: Warehouse, node_lake: NodeLake
) -> None:
    # "atlas.comment" as another corpus's (legacy) namespace: atlas's comments would be its
    legacy_push = ledger.start_push(
        wh,
        target=TARGET,
        namespace="atlas.comment",
        manifest_name="legacy",
        run_id=None,
        plan_counts={},
        unrelated_before=0,
    )
    assert legacy_push == 1
    path = ingest(tmp_path, wh, manifest_text())
    with pytest.raises(NamespaceViolation, match=r"would write into namespace 'atlas\.comment'"):
        publish(path, wh)
    assert node_lake.mutation_requests() == []


def test_a_second_corpus_with_the_same_namespace_is_refused_and_prunes_nothing(
    tmp_path: Path, warehouse_path: Path, node_lake: NodeLake
) -> None:
    first = tmp_path / "first.toml"
    first.write_text(corpus_text("first", synthetic=3))
    second = tmp_path / "second.toml"
    second.write_text(corpus_text("second"))
    for path in (first, second):
        assert cli("ingest", path, "--warehouse", warehouse_path).exit_code == 0
    assert cli("publish", first, "--warehouse", warehouse_path).exit_code == 0
    published = dict(node_lake.documents)
    assert len(published) == 7

    for args in (["--prune"], ["--dry-run"], []):
        refused = cli("publish", second, "--warehouse", warehouse_path, *args)
        assert refused.exit_code == EXIT_USAGE, refused.output
        assert "namespace 'atlas' in sanity:fakeproj/production is published by another " in (
            refused.stderr
        )
        assert "'first' (push 1)" in refused.stderr
    assert node_lake.documents == published
    assert node_lake.mutation_requests()[-1]["body"]["transactionId"].startswith("rcpt-1-")

    # a refused push claims nothing: the first corpus still publishes, and prunes its own
    first.write_text(corpus_text("first", synthetic=3, drop=["comment/2a4bc"]))
    assert cli("ingest", first, "--warehouse", warehouse_path).exit_code == 0
    pruned = cli("publish", first, "--warehouse", warehouse_path, "--prune", "--json")
    assert pruned.exit_code == 0, pruned.output
    assert json.loads(pruned.stdout)["plan"]["delete"] == 1
    with Warehouse.open(str(warehouse_path), read_only=True) as wh:
        statuses = [(r["manifest"], r["status"]) for r in ledger.pushes(wh)]
    assert statuses == [
        ("first", "ok"),
        ("second", "refused"),
        ("second", "refused"),
        ("first", "ok"),
    ]


def test_a_renamed_corpus_takes_over_its_old_namespace_only_when_told(
    tmp_path: Path, warehouse_path: Path, node_lake: NodeLake
) -> None:
    """Renaming a corpus (its manifest's name) makes its own namespace look taken; `publish
    --take-over OLD` hands it over, recorded with the push: then the new name publishes (and
    prunes) it as its own, and the old name, if it comes back, is the one refused."""
    old, new = tmp_path / "old.toml", tmp_path / "new.toml"
    old.write_text(corpus_text("first", synthetic=3))
    new.write_text(corpus_text("renamed", synthetic=3, drop=["comment/2a4bc"]))
    assert cli("ingest", old, "--warehouse", warehouse_path).exit_code == 0
    assert cli("publish", old, "--warehouse", warehouse_path).exit_code == 0
    published = dict(node_lake.documents)
    assert cli("ingest", new, "--warehouse", warehouse_path).exit_code == 0

    refused = cli("publish", new, "--warehouse", warehouse_path, "--prune")
    assert refused.exit_code == EXIT_USAGE
    assert "`receipts publish MANIFEST --take-over first` hands its namespace over" in (
        refused.stderr
    )
    for wrong in ("nobody", "renamed"):
        unknown = cli("publish", new, "--warehouse", warehouse_path, "--take-over", wrong)
        assert unknown.exit_code == EXIT_USAGE
        assert f"--take-over '{wrong}': no other corpus of that name publishes" in unknown.stderr
    dry = cli("publish", new, "--warehouse", warehouse_path, "--take-over", "first", "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert cli("publish", new, "--warehouse", warehouse_path).exit_code == EXIT_USAGE
    assert node_lake.documents == published  # refusals and a dry run sent nothing

    taken = cli("publish", new, "--warehouse", warehouse_path, "--take-over", "first",
                "--prune", "--json")  # fmt: skip
    assert taken.exit_code == 0, taken.output
    report = json.loads(taken.stdout)
    assert report["plan"]["delete"] == 1  # the old name's document the new one dropped
    assert any("takes over namespace 'atlas' from corpus 'first'" in n for n in report["notices"])
    assert len(node_lake.documents) == len(published) - 1
    assert cli("publish", new, "--warehouse", warehouse_path).exit_code == 0

    back = cli("publish", old, "--warehouse", warehouse_path)
    assert back.exit_code == EXIT_USAGE
    assert "is published by another corpus of this warehouse: 'renamed'" in back.stderr
    with Warehouse.open(str(warehouse_path), read_only=True) as wh:
        statuses = [(r["manifest"], r["status"]) for r in ledger.pushes(wh)]
    assert statuses == [  # newest first
        ("first", "refused"),
        ("renamed", "ok"),
        ("renamed", "ok"),
        ("renamed", "refused"),
        ("renamed", "refused"),
        ("first", "ok"),
    ]


def test_the_ndjson_target_keeps_another_corpus_documents_too(
    tmp_path: Path, wh: Warehouse
) -> None:
    out = tmp_path / "out.ndjson"
    target = NdjsonTarget(out)
    legacy_corpus(wh, None, target=target.name)
    out.write_text("".join(json.dumps(d) + "\n" for d in LEGACY))
    path = ingest(tmp_path, wh, manifest_text())
    result = publish(path, wh, target=target, prune=True)
    assert result.status == "ok" and result.plan.orphan == []
    assert (result.unrelated_before, result.unrelated_after) == (3, 3)
    assert all(d["_id"] in out.read_text() for d in LEGACY)

    other = tmp_path / "other.toml"
    other.write_text(corpus_text("other"))
    with pytest.raises(NamespaceTaken):
        publish(other, wh, target=NdjsonTarget(out))
