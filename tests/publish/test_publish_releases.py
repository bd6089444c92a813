"""Content Releases, Scheduled Drafts and document variants against a push, through the CLI
on the Content Lake fake (groq-js): the plan and the receipt name each release version that
will put another copy over a document the push writes, and when; ``--prune`` holds an orphan
a release would bring back unless ``--prune-versions``; ``drift --target`` lists versions;
the guard keeps counting other documents' versions as unrelated and ours as ours. Also the
API version floor, and unrelated documents someone else edited during a push.

Release documents are shaped as ``ReleaseDocument`` in sanity-io/client src/types.ts (``_id``
``_.releases.<id>``, ``_type`` ``system.release``, ``state``, ``publishAt``, ``metadata``
{``title``, ``releaseType``, ``intendedPublishAt``, ``cardinality``}) and the release
fixtures of sanity-io/sanity (packages/sanity/src/core/releases/__fixtures__); a Scheduled
Draft is a release with ``cardinality`` ``one`` (sanity-io/client
src/releases/scheduledDraft.ts); a version marked to unpublish has ``_system.delete`` true
(sanity-io/sanity packages/sanity/src/core/releases/util/isGoingToUnpublish.ts).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fakes.node_lake import NodeLake
from pipelines.cli.exits import EXIT_GUARD, EXIT_OK, EXIT_USAGE
from tests.conftest import cli
from tests.publish_corpus import manifest_text, register

UPDATED = "atlas.comment.2a4b9"  # its text changes with revision=1
ORPHAN = "atlas.comment.2a4bc"  # dropped from the corpus
SCHEDULED_AT = "2026-12-24T09:00:00.000Z"

SCHEDULED_DRAFT = {
    "_id": "_.releases.rSched01",
    "_type": "system.release",
    "name": "rSched01",
    "state": "scheduled",
    "publishAt": SCHEDULED_AT,
    "metadata": {
        "releaseType": "scheduled",
        "intendedPublishAt": SCHEDULED_AT,
        "cardinality": "one",
    },
}
ASAP_RELEASE = {
    "_id": "_.releases.rSpring",
    "_type": "system.release",
    "name": "rSpring",
    "state": "active",
    "metadata": {"title": "Spring launch", "releaseType": "asap"},
}
ARCHIVED_RELEASE = {
    "_id": "_.releases.rOld",
    "_type": "system.release",
    "name": "rOld",
    "state": "archived",
    "metadata": {"title": "Old", "releaseType": "undecided"},
}


@pytest.fixture(autouse=True)
def _fixture_source(monkeypatch: pytest.MonkeyPatch) -> None:
    register(monkeypatch)


def _corpus(tmp_path: Path, warehouse: Path, **options: Any) -> Path:
    path = tmp_path / "atlas.toml"
    path.write_text(manifest_text(synthetic=4, **options))
    assert cli("ingest", path, "--warehouse", warehouse).exit_code == 0
    return path


def _published(tmp_path: Path, warehouse: Path) -> Path:
    path = _corpus(tmp_path, warehouse)
    first = cli("publish", path, "--warehouse", warehouse)
    assert first.exit_code == EXIT_OK, first.output
    return path


def _version(release: str, published_id: str, **fields: Any) -> dict[str, Any]:
    return {"_id": f"versions.{release}.{published_id}", "_type": "comment", **fields}


def test_plan_and_receipt_name_each_release_over_an_update_and_when(
    tmp_path: Path, warehouse_path: Path, node_lake: NodeLake
) -> None:
    path = _published(tmp_path, warehouse_path)
    node_lake.put(SCHEDULED_DRAFT)
    node_lake.put(ASAP_RELEASE)
    node_lake.put(ARCHIVED_RELEASE)
    node_lake.put(_version("rSched01", UPDATED, body="scheduled"))
    node_lake.put(_version("rSpring", UPDATED, body="spring", _system={"delete": True}))
    node_lake.put(_version("rOld", UPDATED, body="old"))  # archived: publishes nothing
    node_lake.put(_version("vScope9x", UPDATED, body="variant"))  # no release document
    path.write_text(manifest_text(synthetic=4, revision=1))
    assert cli("ingest", path, "--warehouse", warehouse_path).exit_code == 0

    planned = cli("publish", path, "--warehouse", warehouse_path, "--dry-run", "--json")
    assert planned.exit_code == EXIT_OK, planned.output
    releases = json.loads(planned.stdout)["releases"]
    assert releases == [
        {
            "id": UPDATED,
            "version": f"versions.rSched01.{UPDATED}",
            "release": "rSched01",
            "kind": "scheduled draft",
            "action": "replace",
            "when": SCHEDULED_AT,
            "when_text": f"at {SCHEDULED_AT} (scheduled)",
        },
        {
            "id": UPDATED,
            "version": f"versions.rSpring.{UPDATED}",
            "release": "rSpring 'Spring launch'",
            "kind": "release",
            "action": "unpublish",
            "when": None,
            "when_text": "as soon as it is published (asap; no time set)",
        },
        {
            "id": UPDATED,
            "version": f"versions.vScope9x.{UPDATED}",
            "release": "vScope9x",
            "kind": "unknown scope",
            "action": "replace",
            "when": None,
            "when_text": "at a time not known (no release document: a document variant, "
            "or a release this token cannot read)",
        },
    ]

    pushed = cli("publish", path, "--warehouse", warehouse_path)
    assert pushed.exit_code == EXIT_OK, pushed.output
    assert (
        f"notice: {UPDATED}: scheduled draft rSched01 will put its own copy over this push "
        f"at {SCHEDULED_AT} (scheduled) (versions.rSched01.{UPDATED})"
    ) in pushed.stdout
    assert "release rSpring 'Spring launch' will unpublish (delete) it" in pushed.stdout
    assert "rOld" not in pushed.stdout
    # the receipt: release documents and versions of nobody's documents are unrelated, ours
    # are not, and none of them was written by this push
    assert "receipt: unrelated documents before 3, after 3; touched by us 0" in pushed.stdout
    ledger = json.loads(cli("pushes", "--warehouse", warehouse_path, "--json").stdout)
    assert any("rSched01" in notice for notice in ledger[0]["notices"])


def test_the_guard_counts_other_versions_as_unrelated_and_ours_as_ours_by_their_rev(
    tmp_path: Path, warehouse_path: Path, node_lake: NodeLake
) -> None:
    path = _published(tmp_path, warehouse_path)
    node_lake.put(ASAP_RELEASE)
    node_lake.put(_version("rSpring", UPDATED, body="ours"))
    node_lake.put(_version("rSpring", "homepage", _type="page"))
    path.write_text(manifest_text(synthetic=4, revision=1))
    assert cli("ingest", path, "--warehouse", warehouse_path).exit_code == 0

    # a write to our own version in the push's transaction: ours, no trip
    node_lake.write_alongside(f"versions.rSpring.{UPDATED}", {"body": "touched"})
    ours = cli("publish", path, "--warehouse", warehouse_path, "--json")
    assert ours.exit_code == EXIT_OK, ours.output
    report = json.loads(ours.stdout)
    tx = report["transaction_ids"][0]
    assert node_lake.documents[f"versions.rSpring.{UPDATED}"]["_rev"] == tx
    assert report["receipt"]["touched_by_us"] == 0
    assert [r["version"] for r in report["releases"]] == [f"versions.rSpring.{UPDATED}"]

    # a write to another document's version: unrelated, carries our transaction id: trip
    path.write_text(manifest_text(synthetic=4, revision=2))
    assert cli("ingest", path, "--warehouse", warehouse_path).exit_code == 0
    node_lake.write_alongside("versions.rSpring.homepage", {"title": "touched"})
    tripped = cli("publish", path, "--warehouse", warehouse_path, "--json")
    assert tripped.exit_code == EXIT_GUARD, tripped.output
    receipt = json.loads(tripped.stdout)["receipt"]
    assert receipt["touched_ids"] == ["versions.rSpring.homepage"]
    assert receipt["unrelated_before"] == receipt["unrelated_after"] == 2


def test_prune_holds_an_orphan_a_release_brings_back_unless_prune_versions(
    tmp_path: Path, warehouse_path: Path, node_lake: NodeLake
) -> None:
    path = _published(tmp_path, warehouse_path)
    node_lake.put(SCHEDULED_DRAFT)
    version = f"versions.rSched01.{ORPHAN}"
    node_lake.put(_version("rSched01", ORPHAN, body="comes back at Christmas"))
    path.write_text(manifest_text(synthetic=4, drop=["comment/2a4bc"]))
    assert cli("ingest", path, "--warehouse", warehouse_path).exit_code == 0

    held = cli("publish", path, "--warehouse", warehouse_path, "--prune", "--json")
    assert held.exit_code == EXIT_OK, held.output
    report = json.loads(held.stdout)
    assert report["plan"]["orphan"] == 1 and report["plan"]["delete"] == 0
    assert [h["id"] for h in report["held"]] == [ORPHAN]
    assert "--prune-versions" in report["held"][0]["reason"]
    assert SCHEDULED_AT in report["held"][0]["reason"]
    assert ORPHAN in node_lake.documents and version in node_lake.documents

    text = cli("publish", path, "--warehouse", warehouse_path, "--prune", "--dry-run")
    assert (
        f"held {ORPHAN}: not deleted: {ORPHAN}: scheduled draft rSched01 will bring it back "
        f"at {SCHEDULED_AT} (scheduled)"
    ) in text.stdout

    usage = cli("publish", path, "--warehouse", warehouse_path, "--prune-versions")
    assert usage.exit_code == EXIT_USAGE and "--prune-versions goes with --prune" in usage.output

    pruned = cli(
        "publish", path, "--warehouse", warehouse_path, "--prune", "--prune-versions", "--json"
    )
    assert pruned.exit_code == EXIT_OK, pruned.output
    report = json.loads(pruned.stdout)
    assert report["plan"]["delete"] == 1 and report["held"] == []
    assert ORPHAN not in node_lake.documents and version not in node_lake.documents
    assert "_.releases.rSched01" in node_lake.documents  # the release itself is not ours
    assert report["receipt"]["unrelated_before"] == report["receipt"]["unrelated_after"] == 1


def test_drift_target_lists_release_versions_beside_drafts(
    tmp_path: Path, warehouse_path: Path, node_lake: NodeLake
) -> None:
    path = _published(tmp_path, warehouse_path)
    node_lake.put(ASAP_RELEASE)
    node_lake.put({"_id": f"drafts.{UPDATED}", "_type": "comment", "body": "draft"})
    node_lake.put(_version("rSpring", UPDATED, body="spring"))
    node_lake.put(_version("rSpring", "homepage", _type="page"))  # not ours

    as_json = cli("drift", path, "--warehouse", warehouse_path, "--target", "--json")
    assert as_json.exit_code == EXIT_OK, as_json.output
    drift = json.loads(as_json.stdout)["target_drift"]
    assert drift["drafts"] == [UPDATED]
    assert drift["versions"] == [f"versions.rSpring.{UPDATED}"]
    text = cli("drift", path, "--warehouse", warehouse_path, "--target")
    label = "release version (publishing its release replaces or unpublishes ours)"
    assert f"{label}: versions.rSpring.{UPDATED}" in text.stdout


@pytest.mark.parametrize("version", ["2024-12-01", "2021-03-25", "v2025-02-18", "1"])
def test_an_api_version_older_than_2025_02_19_is_refused_with_exit_2(
    tmp_path: Path,
    warehouse_path: Path,
    node_lake: NodeLake,
    monkeypatch: pytest.MonkeyPatch,
    version: str,
) -> None:
    path = _corpus(tmp_path, warehouse_path)
    monkeypatch.setenv("SANITY_API_VERSION", version)
    refused = cli("publish", path, "--warehouse", warehouse_path)
    assert refused.exit_code == EXIT_USAGE, refused.output
    assert "is older than 2025-02-19" in refused.stderr
    assert "versions.*" in refused.stderr
    drift = cli("drift", path, "--warehouse", warehouse_path, "--target")
    assert drift.exit_code == EXIT_USAGE, drift.output
    assert node_lake.requests == []


@pytest.mark.parametrize("version", ["2025-02-19", "2026-11-01", "X"])
def test_api_versions_from_2025_02_19_publish(
    tmp_path: Path,
    warehouse_path: Path,
    node_lake: NodeLake,
    monkeypatch: pytest.MonkeyPatch,
    version: str,
) -> None:
    path = _corpus(tmp_path, warehouse_path)
    monkeypatch.setenv("SANITY_API_VERSION", version)
    pushed = cli("publish", path, "--warehouse", warehouse_path)
    assert pushed.exit_code == EXIT_OK, pushed.output
    assert f"/v{version}/data/" in node_lake.requests[0]["path"]


def test_an_unrelated_document_edited_during_the_push_is_counted_and_named(
    tmp_path: Path, warehouse_path: Path, node_lake: NodeLake
) -> None:
    node_lake.put({"_id": "homepage", "_type": "page", "title": "Home"})
    node_lake.put({"_id": "about", "_type": "page", "title": "About"})
    path = _corpus(tmp_path, warehouse_path)
    # another writer edits an unrelated document while the push runs
    node_lake.before_mutation({"patch": {"id": "homepage", "set": {"title": "Home, edited"}}})
    pushed = cli("publish", path, "--warehouse", warehouse_path, "--json")
    assert pushed.exit_code == EXIT_OK, pushed.output  # information, not a trip
    report = json.loads(pushed.stdout)
    assert report["status"] == "ok"
    assert report["receipt"]["unrelated_before"] == report["receipt"]["unrelated_after"] == 2
    assert report["receipt"]["touched_by_us"] == 0
    assert report["receipt"]["edited_by_others"] == 1
    assert report["receipt"]["edited_by_others_ids"] == ["homepage"]

    path.write_text(manifest_text(synthetic=4, revision=1))
    assert cli("ingest", path, "--warehouse", warehouse_path).exit_code == 0
    node_lake.before_mutation({"patch": {"id": "about", "set": {"title": "About, edited"}}})
    text = cli("publish", path, "--warehouse", warehouse_path)
    assert text.exit_code == EXIT_OK, text.output
    assert (
        "receipt: unrelated documents before 2, after 2; touched by us 0; "
        "edited by others during the push 1"
    ) in text.stdout
    assert "edited by another writer during the push" in text.stdout and "about" in text.stdout
    ledger = json.loads(cli("pushes", "--warehouse", warehouse_path, "--json").stdout)
    assert any("about" in notice for notice in ledger[0]["notices"])

    quiet = cli("publish", path, "--warehouse", warehouse_path, "--json")
    assert json.loads(quiet.stdout)["receipt"]["edited_by_others"] == 0


def test_the_ndjson_target_names_a_release_version_in_its_file(
    tmp_path: Path, warehouse_path: Path
) -> None:
    path = _corpus(tmp_path, warehouse_path)
    out = tmp_path / "atlas.ndjson"
    lines = [SCHEDULED_DRAFT, _version("rSched01", "atlas.article.101", body="later")]
    out.write_text("".join(json.dumps(line) + "\n" for line in lines))
    pushed = cli("publish", path, "--warehouse", warehouse_path, "--target", f"ndjson:{out}")
    assert pushed.exit_code == EXIT_OK, pushed.output
    assert (
        "notice: atlas.article.101: scheduled draft rSched01 will put its own copy over this "
        f"push at {SCHEDULED_AT} (scheduled)"
    ) in pushed.stdout
    assert "receipt: unrelated documents before 1, after 1; touched by us 0" in pushed.stdout


def test_refresh_refuses_an_old_api_version_with_exit_2_before_ingesting(
    tmp_path: Path, warehouse_path: Path, node_lake: NodeLake, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "atlas.toml"
    path.write_text(manifest_text(synthetic=4))
    monkeypatch.setenv("SANITY_API_VERSION", "2024-12-01")
    refused = cli("refresh", path, "--warehouse", warehouse_path)
    assert refused.exit_code == EXIT_USAGE, refused.output
    assert "is older than 2025-02-19" in refused.stderr
    assert node_lake.requests == []
    assert "synthetic: new" not in refused.output  # refused before any entry was ingested


def test_refresh_prune_holds_a_released_orphan_and_prune_versions_deletes_it(
    tmp_path: Path, warehouse_path: Path, node_lake: NodeLake
) -> None:
    path = _published(tmp_path, warehouse_path)
    node_lake.put(ASAP_RELEASE)
    version = f"versions.rSpring.{ORPHAN}"
    node_lake.put(_version("rSpring", ORPHAN, body="spring"))
    path.write_text(manifest_text(synthetic=4, drop=["comment/2a4bc"]))

    held = cli("refresh", path, "--warehouse", warehouse_path, "--prune", "--json")
    assert held.exit_code == EXIT_OK, held.output
    report = json.loads(held.stdout)
    assert [h["id"] for h in report["push"]["held"]] == [ORPHAN]
    assert report["target_drift"]["versions"] == [version]
    assert ORPHAN in node_lake.documents

    pruned = cli(
        "refresh", path, "--warehouse", warehouse_path, "--prune", "--prune-versions", "--json"
    )
    assert pruned.exit_code == EXIT_OK, pruned.output
    assert ORPHAN not in node_lake.documents and version not in node_lake.documents
