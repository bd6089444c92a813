"""The plan, pure: classification, field-owning mutations, levels, batches, re-planning after
a conflict, and namespace confinement."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakes.node_lake import NodeLake
from pipelines.manifest import Publish
from pipelines.publish.confinement import check_confinement, check_mutations, is_ours, mutation_ids
from pipelines.publish.curate import CuratedDocument, RevisionMeta, build_document
from pipelines.publish.plan import (
    ENVELOPE_BYTES,
    Action,
    TargetDocument,
    TargetState,
    batches,
    make_plan,
    mutation_size,
    replan,
)
from pipelines.publish.targets.base import target_document
from pipelines.publish.targets.sanity_http import OURS, ours_filter
from sources.base import Curated
from warehouse.errors import NamespaceViolation


def doc(doc_id: str, type_: str = "t", revision: int = 1, **fields: Any) -> CuratedDocument:
    meta = RevisionMeta(
        doc_id=f"src/{doc_id}",
        kind="k",
        revision=revision,
        content_hash="00" * 32,
        source_url=None,
        source_commit=None,
        valid_from=datetime(2026, 1, 1, tzinfo=UTC),
        valid_from_run=revision,
        first_seen_run=1,
    )
    return build_document("ns", doc_id, meta, Curated(type_, fields or {"a": 1}), Publish())


def in_target(document: CuratedDocument, rev: str = "r1", **overrides: Any) -> TargetDocument:
    body = {**document.document(), "_rev": rev, **overrides}
    return target_document(body, full=True)


def ref(target: str) -> dict[str, str]:
    return {"_type": "reference", "_ref": target}


# -- classification ----------------------------------------------------------------------------
def test_plan_classifies_create_update_unchanged_orphan_and_blocked() -> None:
    same, old, new = doc("ns.a.same"), doc("ns.a.changed"), doc("ns.a.new")
    changed = doc("ns.a.changed", revision=2, a=2)
    retyped = doc("ns.a.retyped", type_="u")
    state = TargetState(
        {
            "ns.a.same": in_target(same),
            "ns.a.changed": in_target(old, rev="r7"),
            "ns.a.gone": in_target(doc("ns.a.gone")),
            "ns.a.retyped": in_target(doc("ns.a.retyped")),
        }
    )
    plan = make_plan("ns", [changed, new, retyped, same], state)
    assert plan.counts() == {
        "documents": 4,
        "create": 1,
        "update": 1,
        "unchanged": 1,
        "orphan": 1,
        "delete": 0,
        "blocked": 1,
    }
    assert (plan.create, plan.update, plan.unchanged, plan.orphan) == (
        ["ns.a.new"],
        ["ns.a.changed"],
        ["ns.a.same"],
        ["ns.a.gone"],
    )
    assert "a patch cannot change a type" in plan.blocked[0]["reason"]
    kinds = {a.id: next(iter(a.mutation)) for a in plan.actions}
    assert kinds == {"ns.a.new": "createIfNotExists", "ns.a.changed": "patch"}


def test_an_update_sets_owned_fields_unsets_dropped_ones_and_checks_the_revision() -> None:
    before = doc("ns.a.1", a=1, b=2)
    after = doc("ns.a.1", revision=2, a=1, c=3)
    plan = make_plan("ns", [after], TargetState({"ns.a.1": in_target(before, rev="rev-9")}))
    (action,) = plan.actions
    patch = action.mutation["patch"]
    assert patch["id"] == "ns.a.1"
    assert patch["ifRevisionID"] == "rev-9"
    assert set(patch["set"]) == {"a", "c", "provenance"}
    assert patch["unset"] == ["b"]
    assert "_type" not in patch["set"] and "_id" not in patch["set"]


def test_a_create_never_replaces_and_prune_only_deletes_orphans() -> None:
    plan = make_plan(
        "ns", [doc("ns.a.1")], TargetState({"ns.a.2": in_target(doc("ns.a.2"))}), prune=True
    )
    mutations = [a.mutation for a in plan.actions]
    assert mutations[0] == {"createIfNotExists": doc("ns.a.1").document()}
    assert [a.size for a in plan.actions] == [mutation_size(m) for m in mutations]
    assert mutations[1] == {"delete": {"id": "ns.a.2"}}
    assert plan.counts()["delete"] == 1


def test_open_drafts_and_dangling_references_are_noticed() -> None:
    documents = [doc("ns.a.1", a=2), doc("ns.c.1", parent=ref("ns.a.404"))]
    state = TargetState({"ns.a.1": in_target(doc("ns.a.1"))}, drafts=frozenset({"ns.a.1"}))
    plan = make_plan("ns", documents, state)
    assert any(
        n.startswith("ns.a.1: open draft — the next publish in the Studio will overwrite")
        for n in plan.notices
    )
    assert any("ns.c.1 references ns.a.404, which is neither" in n for n in plan.notices)
    orphan = TargetState({"ns.a.9": in_target(doc("ns.a.9"))})
    pruned = make_plan("ns", [doc("ns.c.1", parent=ref("ns.a.9"))], orphan, prune=True)
    assert any("ns.c.1 references ns.a.9, an orphan this push deletes" in n for n in pruned.notices)


def test_documents_come_after_the_documents_they_reference() -> None:
    article = doc("ns.article.1")
    top = doc("ns.comment.b", article=ref("ns.article.1"))
    reply = doc("ns.comment.a", article=ref("ns.article.1"), parent=ref("ns.comment.b"))
    existing = doc("ns.comment.y")
    referrer = doc("ns.comment.z", parent=ref("ns.comment.y"))
    state = TargetState({"ns.comment.y": in_target(existing), "ns.old": in_target(doc("ns.old"))})
    plan = make_plan("ns", [article, reply, top, existing, referrer], state, prune=True)
    levels = {a.id: a.level for a in plan.actions}
    assert levels == {
        "ns.article.1": 0,
        "ns.comment.z": 0,  # references a document that already exists
        "ns.comment.b": 1,
        "ns.comment.a": 2,
        "ns.old": 3,  # deletes last
    }
    assert [a.id for a in plan.actions] == sorted(levels, key=lambda i: (levels[i], i))


# -- batches -------------------------------------------------------------------------------
def actions(sizes: list[int], level: int = 0) -> list[Action]:
    return [Action("create", f"ns.a.{i}", {}, size, level) for i, size in enumerate(sizes)]


def test_batches_are_as_few_as_the_size_limit_allows() -> None:
    packed = batches(actions([400] * 10), max_bytes=ENVELOPE_BYTES + 2_005)
    assert [len(b) for b in packed] == [5, 5]
    for group in packed:
        assert ENVELOPE_BYTES + sum(a.size + 1 for a in group) <= ENVELOPE_BYTES + 2_005


def test_batches_respect_mutation_counts_levels_and_send_oversized_actions_alone() -> None:
    assert [len(b) for b in batches(actions([10] * 7), 10_000, max_mutations=3)] == [3, 3, 1]
    mixed = actions([10, 10]) + actions([10], level=1)
    assert [[a.level for a in b] for b in batches(mixed, 10_000)] == [[0, 0], [1]]
    assert [len(b) for b in batches(actions([50, 5_000, 50]), 1_000)] == [1, 1, 1]


@given(st.lists(st.integers(1, 3_000), max_size=60), st.integers(3_000, 20_000))
def test_batching_keeps_order_and_fills_each_batch(sizes: list[int], limit: int) -> None:
    packed = batches(actions(sizes), limit)
    assert [a for group in packed for a in group] == actions(sizes)
    for first, second in itertools.pairwise(packed):
        used = ENVELOPE_BYTES + sum(a.size + 1 for a in first)
        assert used + second[0].size + 1 > limit  # the next action did not fit


# -- re-planning after a conflict ------------------------------------------------------------
def test_replan_resends_untouched_settles_done_and_reports_edits() -> None:
    wanted = {d.id: d for d in (doc(f"ns.a.{i}", revision=2, a=2) for i in range(6))}
    old = {i: doc(i) for i in wanted}
    plan = make_plan(
        "ns", list(wanted.values()), TargetState({i: in_target(old[i]) for i in wanted})
    )
    current = {
        "ns.a.0": in_target(old["ns.a.0"]),  # untouched: same rev
        "ns.a.1": in_target(wanted["ns.a.1"], rev="r2"),  # already what we want
        "ns.a.2": in_target(old["ns.a.2"], rev="r2", note="studio"),  # non-owned field added
        "ns.a.3": in_target(old["ns.a.3"], rev="r2", a=99),  # owned field edited
        # ns.a.4 deleted in the target
        "ns.a.5": in_target(old["ns.a.5"], rev="r2", note="x"),
    }
    replanned = {"ns.a.5"}
    outcome = replan(plan.actions, current, wanted, replanned)
    assert [a.id for a in outcome.resend] == ["ns.a.0", "ns.a.2"]
    assert outcome.resend[1].mutation["patch"]["ifRevisionID"] == "r2"
    assert outcome.settled == ["ns.a.1"]
    reasons = {c["id"]: c["reason"] for c in outcome.conflicts}
    assert reasons == {
        "ns.a.3": "a field the pipeline owns was edited in the target since the plan; "
        "not overwritten",
        "ns.a.4": "deleted in the target since the plan; not recreated",
        "ns.a.5": "changed again after it was re-planned; not retried",
    }
    assert "ns.a.2" in replanned


def test_replan_of_creates_and_deletes() -> None:
    new, taken = doc("ns.a.new"), doc("ns.a.taken")
    plan = make_plan(
        "ns", [new, taken], TargetState({"ns.a.old": in_target(doc("ns.a.old"))}), prune=True
    )
    current = {
        "ns.a.taken": target_document({"_id": "ns.a.taken", "_type": "t", "_rev": "x"}, full=True),
        "ns.a.old": in_target(doc("ns.a.old"), rev="r2"),
    }
    outcome = replan(plan.actions, current, {"ns.a.new": new, "ns.a.taken": taken}, set())
    assert [a.id for a in outcome.resend] == ["ns.a.new"]
    assert {c["id"]: c["reason"] for c in outcome.conflicts} == {
        "ns.a.taken": "created in the target since the plan; not overwritten",
        "ns.a.old": "edited in the target since the plan; not deleted",
    }


# -- confinement ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("mutation", "ids"),
    [
        ({"createIfNotExists": {"_id": "ns.a", "_type": "t"}}, ["ns.a"]),
        ({"patch": {"id": "ns.b", "set": {}}}, ["ns.b"]),
        ({"patch": {"id": ["ns.b", "ns.c"], "set": {}}}, ["ns.b", "ns.c"]),
        ({"delete": {"id": "ns.d"}}, ["ns.d"]),
    ],
)
def test_mutation_ids(mutation: dict[str, Any], ids: list[str]) -> None:
    assert mutation_ids(mutation) == ids


@pytest.mark.parametrize(
    ("mutation", "message"),
    [
        ({"delete": {"query": "*[_type == 'x']"}}, "by query cannot be confined"),
        ({"create": {"_type": "t"}}, "without an explicit _id"),
        ({"create": {"_id": "ns.", "_type": "t"}}, "outside namespace"),
        ({"patch": {"id": "drafts.ns.a"}}, "outside namespace"),
        ({"patch": {"id": "nsX.a"}}, "outside namespace"),
        ({"delete": {"id": "ns"}}, "outside namespace"),
        ({"transform": {"id": "ns.a"}}, "unknown mutation kind"),
        ({"delete": {"id": "ns.a"}, "patch": {"id": "ns.b"}}, "exactly one kind"),
    ],
)
def test_mutations_outside_the_namespace_are_refused(
    mutation: dict[str, Any], message: str
) -> None:
    with pytest.raises(NamespaceViolation, match=message):
        check_mutations("ns", [mutation])


def test_check_confinement_names_the_offenders() -> None:
    check_confinement("ns", ["ns.a", "ns.b.c"])
    with pytest.raises(NamespaceViolation) as caught:
        check_confinement("ns", ["ns.a", "other.b", "ns..c"])
    assert "2 mutation(s) would write outside namespace 'ns' (ns..c, other.b)" in str(caught.value)


OWNERSHIP = {
    "ns.a": True,
    "ns.a.b.c": True,
    "drafts.ns.a": True,
    "versions.r1.ns.a": True,
    "ns": False,
    "nsX.keep": False,
    "nsa": False,
    "drafts.nsX.a": False,
    "drafts.other": False,
    "versions.r1.nsX.a": False,
    "versions.ns.a": False,
    "other.ns.a": False,
    "_.releases.r1": False,
}


@pytest.mark.parametrize(("doc_id", "ours"), OWNERSHIP.items())
def test_the_groq_filter_and_the_python_predicate_agree_on_what_is_ours(
    doc_id: str, ours: bool, node_lake_server: NodeLake
) -> None:
    assert is_ours(doc_id, "ns") is ours
    unrelated = node_lake_server.evaluate(f"*[!{OURS}]._id", [{"_id": doc_id}], {"ns": "ns."})
    assert (unrelated == []) is ours


# With another corpus's namespace "ns.legacy" inside "ns" (from before namespaces were
# single segments): its documents, drafts and versions are not ours.
OWNERSHIP_BESIDE_LEGACY = {
    **OWNERSHIP,
    "ns.legacy.a": False,
    "drafts.ns.legacy.a": False,
    "versions.r1.ns.legacy.a": False,
    "ns.legacyX.a": True,
    "ns.legacy": True,
}


@pytest.mark.parametrize(("doc_id", "ours"), OWNERSHIP_BESIDE_LEGACY.items())
def test_the_groq_filter_and_the_python_predicate_agree_beside_a_foreign_namespace(
    doc_id: str, ours: bool, node_lake_server: NodeLake
) -> None:
    assert is_ours(doc_id, "ns", ["ns.legacy"]) is ours
    query, params = ours_filter(["ns.legacy"])
    unrelated = node_lake_server.evaluate(
        f"*[!{query}]._id", [{"_id": doc_id}], {"ns": "ns.", **params}
    )
    assert (unrelated == []) is ours
