"""The pure side of Content Release versions: when each release applies (``publishAt``
takes precedence over ``metadata.intendedPublishAt`` [SRC sanity-io/client src/types.ts
``ReleaseDocument``]), which releases are still pending, and what the plan does with an
orphan a release would bring back."""

from __future__ import annotations

from typing import Any

import pytest

from pipelines.publish.confinement import check_version_deletes
from pipelines.publish.plan import TargetDocument, TargetState, make_plan
from pipelines.publish.versions import (
    group_versions,
    overlay,
    release_from,
    split_version_id,
    version_from,
)
from tests.publish.test_publish_plan import doc
from warehouse.errors import NamespaceViolation

AT = "2026-12-24T09:00:00.000Z"


def _release(state: str = "active", **fields: Any) -> dict[str, Any]:
    metadata = {k: v for k, v in fields.items() if k != "publishAt"}
    body: dict[str, Any] = {"_id": "_.releases.rX", "_type": "system.release", "state": state}
    if "publishAt" in fields:
        body["publishAt"] = fields["publishAt"]
    return {**body, "metadata": metadata}


@pytest.mark.parametrize(
    ("body", "when", "text", "pending"),
    [
        (
            _release("scheduled", releaseType="scheduled", publishAt=AT),
            AT,
            f"at {AT} (scheduled)",
            True,
        ),
        (
            _release(releaseType="scheduled", intendedPublishAt=AT),
            AT,
            f"at {AT} (intended; not yet scheduled)",
            True,
        ),
        (
            _release(releaseType="asap"),
            None,
            "as soon as it is published (asap; no time set)",
            True,
        ),
        (
            _release(releaseType="undecided"),
            None,
            "when it is published (undecided; no time set)",
            True,
        ),
        (
            _release("archived", releaseType="asap"),
            None,
            "no more (the release is archived)",
            False,
        ),
        (
            _release("published", releaseType="asap"),
            None,
            "no more (the release is published)",
            False,
        ),
    ],
)
def test_when_a_release_puts_its_copy_over_a_document(
    body: dict[str, Any], when: str | None, text: str, pending: bool
) -> None:
    version = version_from({"_id": "versions.rX.ns.a", "_rev": "r1"})
    assert version is not None
    found = overlay(version, release_from(body))
    assert (found.when, found.when_text, found.pending) == (when, text, pending)
    assert found.kind == "release" and found.action == "replace"


def test_ids_and_unpublish_marks() -> None:
    assert split_version_id("versions.rX.ns.a.b") == ("rX", "ns.a.b")
    assert split_version_id("drafts.ns.a") is None
    assert split_version_id("versions.rX") is None
    marked = version_from({"_id": "versions.rX.ns.a", "_system": {"delete": True}})
    assert marked is not None and marked.unpublish
    assert release_from({"_id": "ns.a"}) is None


def test_an_orphan_a_release_brings_back_is_held_unless_prune_versions() -> None:
    kept = doc("ns.k")
    current = {
        "ns.k": TargetDocument("ns.k", "r1", "t", kept.curated_hash),
        "ns.gone": TargetDocument("ns.gone", "r1", "t", "x"),
        "ns.free": TargetDocument("ns.free", "r1", "t", "x"),
    }
    version = version_from({"_id": "versions.rX.ns.gone", "_rev": "rv"})
    assert version is not None
    state = TargetState(
        current,
        versions=group_versions([version]),
        releases={"rX": release_from(_release(releaseType="asap")) or pytest.fail()},
    )
    held = make_plan("ns", [kept], state, prune=True)
    assert [h["id"] for h in held.held] == ["ns.gone"]
    assert [a.id for a in held.actions] == ["ns.free"]
    assert held.counts()["delete"] == 1
    pruned = make_plan("ns", [kept], state, prune=True, prune_versions=True)
    assert pruned.held == []
    assert sorted(a.id for a in pruned.actions) == ["ns.free", "ns.gone", "versions.rX.ns.gone"]
    assert {a.planned_rev for a in pruned.actions if a.id.startswith("versions.")} == {"rv"}
    check_version_deletes("ns", [a.mutation for a in pruned.actions if a.id.startswith("v")])


@pytest.mark.parametrize(
    "mutation",
    [
        {"delete": {"id": "versions.rX.other.a"}},
        {"delete": {"id": "ns.a"}},
        {"createOrReplace": {"_id": "versions.rX.ns.a", "_type": "t"}},
        {"delete": {"id": "versions.rX.ns.inner.a"}},
    ],
)
def test_only_deletes_of_our_own_versions_pass(mutation: dict[str, Any]) -> None:
    with pytest.raises(NamespaceViolation):
        check_version_deletes("ns", [mutation], foreign=["ns.inner"])
