"""Publishing to Sanity, against the Content Lake fake whose queries groq-js evaluates: the
plan, field ownership, conflicts, prune, namespace confinement, the unrelated-document guard,
failures and re-runs, retries, the ledger, and the token staying secret. One test (a process
killed while its transaction's answer is on the way) needs the Python fake, which raises in
the client."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from fakes.node_lake import NodeLake
from fakes.sanity import FakeContentLake
from pipelines import USER_AGENT
from pipelines.checks.target_drift import target_drift
from pipelines.cli.exits import EXIT_FAILURE, EXIT_GUARD, for_push
from pipelines.manifest import load_manifest as load
from pipelines.publish import curate as curate_module
from pipelines.publish.curate import curate_manifest
from pipelines.publish.push import push
from pipelines.publish.targets.sanity_http import SanityHttpTarget, SanitySettings
from sources.http import HttpFactory
from tests.conftest import cli
from tests.publish_corpus import ingest, manifest_text, publish, register
from warehouse import pushes as ledger
from warehouse.errors import MassPruneRefused, NamespaceViolation
from warehouse.store import Warehouse

UNRELATED = [
    {"_id": "homepage", "_type": "page", "title": "Home"},
    {"_id": "drafts.homepage", "_type": "page", "title": "Home (draft)"},
    {"_id": "atlasX.keep", "_type": "page"},
    {"_id": "versions.r1.other.doc", "_type": "page"},
]
OURS_ALREADY = [
    {"_id": "drafts.atlas.comment.2a4b9", "_type": "comment", "body": "draft"},
    {"_id": "versions.r1.atlas.article.101", "_type": "article", "title": "planned"},
]


@pytest.fixture(autouse=True)
def _fixture_source(monkeypatch: pytest.MonkeyPatch) -> None:
    register(monkeypatch)


@pytest.fixture
def lake(node_lake: NodeLake) -> NodeLake:
    for document in UNRELATED:
        node_lake.put(document)
    return node_lake


@pytest.fixture
def py_lake(
    node_lake_server: NodeLake, monkeypatch: pytest.MonkeyPatch
) -> Iterator[FakeContentLake]:
    """The Python fake (its queries groq-js evaluates too), for a fault played in the client."""
    fake = FakeContentLake(groq=node_lake_server)
    for name, value in fake.env().items():
        monkeypatch.setenv(name, value)
    for document in UNRELATED:
        fake.put(document)
    with fake.serve():
        yield fake


def quiet_http() -> HttpFactory:
    return HttpFactory(user_agent=USER_AGENT, sleep=lambda seconds: None)


def atlas(lake: NodeLake | FakeContentLake) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in lake.documents.items() if k.startswith("atlas.")}


# -- the plan and the second push ------------------------------------------------------------
def test_cli_first_push_creates_everything_and_a_second_sends_zero_mutations(
    tmp_path: Path, warehouse_path: Path, lake: NodeLake
) -> None:
    path = tmp_path / "atlas.toml"
    path.write_text(manifest_text(synthetic=20))
    assert cli("ingest", path, "--warehouse", warehouse_path).exit_code == 0

    first = cli("publish", path, "--warehouse", warehouse_path, "--json")
    assert first.exit_code == 0, first.output
    report = json.loads(first.stdout)
    assert report["status"] == "ok"
    assert report["target"] == "sanity:fakeproj/production"
    assert report["plan"] == {
        "documents": 24,
        "create": 24,
        "update": 0,
        "unchanged": 0,
        "orphan": 0,
        "delete": 0,
        "blocked": 0,
    }
    assert lake.mutations_sent() == 24
    assert report["receipt"] == {
        "unrelated_before": 4,
        "unrelated_after": 4,
        "touched_by_us": 0,
        "touched_ids": [],
        "edited_by_others": 0,
        "edited_by_others_ids": [],
        "written_by_others": [],
        "written_by_others_count": 0,
    }
    # Sanity's receipt: each of our documents was last written by one of our transactions
    assert {d["_rev"] for d in atlas(lake).values()} <= set(report["transaction_ids"])
    requests = len(lake.mutation_requests())

    second = cli("publish", path, "--warehouse", warehouse_path)
    assert second.exit_code == 0, second.output
    assert "24 documents: 0 create, 0 update, 24 unchanged, 0 orphan" in second.stdout
    assert "applied 0 mutation(s) in 0 transaction(s)" in second.stdout
    assert "receipt: unrelated documents before 4, after 4; touched by us 0" in second.stdout
    assert len(lake.mutation_requests()) == requests

    listed = cli("pushes", "--warehouse", warehouse_path, "--json")
    rows = json.loads(listed.stdout)
    assert [r["status"] for r in rows] == ["ok", "ok"]
    assert rows[1]["applied"] == 24 and rows[0]["applied"] == 0
    assert rows[1]["transaction_ids"] == report["transaction_ids"]
    assert [b["status"] for b in rows[1]["batches"]] == ["committed"] * len(rows[1]["batches"])
    assert (rows[0]["unrelated_before"], rows[0]["unrelated_after"], rows[0]["touched_by_us"]) == (
        4,
        4,
        0,
    )
    human = cli("pushes", "--warehouse", warehouse_path).stdout.splitlines()
    assert human[0].split()[-3:] == ["unrelated_before", "unrelated_after", "touched_by_us"]
    assert human[1].split()[-3:] == ["4", "4", "0"]


def test_an_upstream_change_updates_only_that_document(
    tmp_path: Path, wh: Warehouse, lake: NodeLake
) -> None:
    ingest(tmp_path, wh, manifest_text(synthetic=5))
    path = ingest(tmp_path, wh, manifest_text(synthetic=5))
    publish(path, wh)
    sent = lake.mutations_sent()
    ingest(tmp_path, wh, manifest_text(synthetic=5, revision=1))
    result = publish(path, wh)
    assert result.plan.update == ["atlas.comment.2a4b9"]
    assert lake.mutations_sent() - sent == 1
    comment = lake.documents["atlas.comment.2a4b9"]
    assert comment["body"] == "<p>Nice, edited 1</p>"
    assert comment["provenance"]["revision"] == 2
    assert comment["_rev"] == result.transaction_ids[0]


# -- field ownership -----------------------------------------------------------------------
def test_fields_added_in_the_studio_survive_updates_and_renames(
    tmp_path: Path, wh: Warehouse, lake: NodeLake
) -> None:
    path = ingest(tmp_path, wh, manifest_text())
    publish(path, wh)
    lake.edit("atlas.comment.2a4b9", studioNote="checked by Ana", featured=True)
    ingest(tmp_path, wh, manifest_text(revision=1))
    assert publish(path, wh).status == "ok"
    comment = lake.documents["atlas.comment.2a4b9"]
    assert comment["studioNote"] == "checked by Ana" and comment["featured"] is True
    assert comment["body"] == "<p>Nice, edited 1</p>"

    # the manifest now names the field as an existing Studio schema does: the old owned
    # field is unset, the new one set, the Studio's fields stay
    renamed = manifest_text(revision=1, publish='[publish.fields.comment]\nbody = "text"\n')
    path.write_text(renamed)
    result = publish(path, wh)
    assert result.plan.counts()["update"] == 2
    comment = lake.documents["atlas.comment.2a4b9"]
    assert "body" not in comment and comment["text"] == "<p>Nice, edited 1</p>"
    assert comment["studioNote"] == "checked by Ana"
    assert comment["provenance"]["ownedFields"] == ["article", "author", "text"]


def test_a_type_rename_targets_an_existing_schema_and_never_retypes_in_place(
    tmp_path: Path, wh: Warehouse, lake: NodeLake
) -> None:
    path = ingest(tmp_path, wh, manifest_text(publish='[publish.types]\nsafetyRecord = "tsb"\n'))
    publish(path, wh)
    assert lake.documents["atlas.record.24V064000"]["_type"] == "tsb"

    path.write_text(manifest_text(publish='[publish.types]\nsafetyRecord = "recall"\n'))
    result = publish(path, wh)
    assert result.status == "conflict" and for_push(result) == EXIT_FAILURE
    assert result.plan.blocked[0]["id"] == "atlas.record.24V064000"
    assert lake.documents["atlas.record.24V064000"]["_type"] == "tsb"


def test_a_concurrent_edit_of_an_owned_field_is_a_conflict_not_an_overwrite(
    tmp_path: Path, wh: Warehouse, lake: NodeLake
) -> None:
    path = ingest(tmp_path, wh, manifest_text())
    publish(path, wh)
    ingest(tmp_path, wh, manifest_text(revision=1, licence="CC0-1.0"))
    lake.before_mutation({"patch": {"id": "atlas.comment.2a4b9", "set": {"body": "<p>Studio</p>"}}})
    result = publish(path, wh)
    assert result.status == "conflict" and for_push(result) == EXIT_FAILURE
    assert result.conflicts == [
        {
            "id": "atlas.comment.2a4b9",
            "reason": "a field the pipeline owns was edited in the target since the plan; "
            "not overwritten",
        }
    ]
    assert lake.documents["atlas.comment.2a4b9"]["body"] == "<p>Studio</p>"
    # the other update of the refused transaction was re-read, found untouched, sent again
    assert lake.documents["atlas.record.24V064000"]["licence"] == "CC0-1.0"
    assert [b["status"] for b in result.batches] == ["conflict", "committed"]
    stored = ledger.pushes(wh)[0]
    assert stored["status"] == "conflict" and stored["conflicts"] == result.conflicts


def test_a_concurrent_edit_of_fields_the_pipeline_does_not_own_is_replanned_once(
    tmp_path: Path, wh: Warehouse, lake: NodeLake
) -> None:
    path = ingest(tmp_path, wh, manifest_text())
    publish(path, wh)
    ingest(tmp_path, wh, manifest_text(revision=1))
    lake.before_mutation({"patch": {"id": "atlas.comment.2a4b9", "set": {"studioNote": "hi"}}})
    result = publish(path, wh)
    assert result.status == "ok" and not result.conflicts
    comment = lake.documents["atlas.comment.2a4b9"]
    assert comment["studioNote"] == "hi" and comment["body"] == "<p>Nice, edited 1</p>"
    assert [b["status"] for b in result.batches] == ["conflict", "committed"]


def test_a_conflict_whose_re_read_fails_stops_the_push_and_keeps_the_record(
    tmp_path: Path, wh: Warehouse, lake: NodeLake
) -> None:
    path = ingest(tmp_path, wh, manifest_text())
    publish(path, wh)
    ingest(tmp_path, wh, manifest_text(revision=1))
    lake.before_mutation({"patch": {"id": "atlas.comment.2a4b9", "set": {"body": "<p>Studio</p>"}}})
    lake.fault("doc", status=400)
    result = publish(path, wh)
    assert result.status == "failed"
    assert "re-reading documents after a conflict failed: sanity: HTTP 400" in (
        result.message or ""
    )
    assert result.conflicts == [{"id": "atlas.comment.2a4b9", "reason": "could not be re-read"}]
    assert [b["status"] for b in ledger.batches(wh, result.push_id or 0)] == ["conflict"]
    assert lake.documents["atlas.comment.2a4b9"]["body"] == "<p>Studio</p>"


def test_an_open_draft_is_noticed(tmp_path: Path, wh: Warehouse, lake: NodeLake) -> None:
    for document in OURS_ALREADY:
        lake.put(document)
    path = ingest(tmp_path, wh, manifest_text())
    publish(path, wh)
    ingest(tmp_path, wh, manifest_text(revision=1))
    result = publish(path, wh)
    assert result.notices == [
        "atlas.comment.2a4b9: open draft — the next publish in the Studio will overwrite "
        "this update"
    ]
    assert lake.documents["drafts.atlas.comment.2a4b9"]["body"] == "draft"
    # our drafts and versions are not unrelated documents
    assert (result.unrelated_before, result.unrelated_after) == (4, 4)


# -- orphans and prune ---------------------------------------------------------------------
def test_orphans_are_reported_and_pruned_only_inside_the_namespace(
    tmp_path: Path, warehouse_path: Path, lake: NodeLake
) -> None:
    path = tmp_path / "atlas.toml"
    path.write_text(manifest_text(synthetic=4))
    cli("ingest", path, "--warehouse", warehouse_path)
    assert cli("publish", path, "--warehouse", warehouse_path).exit_code == 0
    path.write_text(manifest_text(synthetic=4, drop=["comment/2a4bc"]))
    cli("ingest", path, "--warehouse", warehouse_path)

    kept = cli("publish", path, "--warehouse", warehouse_path)
    assert kept.exit_code == 0
    assert "orphan (kept; --prune deletes them): atlas.comment.2a4bc" in kept.stdout
    assert "atlas.comment.2a4bc" in lake.documents

    before = {k: v for k, v in lake.documents.items() if not k.startswith("atlas.")}
    pruned = cli("publish", path, "--warehouse", warehouse_path, "--prune", "--json")
    assert pruned.exit_code == 0, pruned.output
    assert json.loads(pruned.stdout)["plan"]["delete"] == 1
    assert "atlas.comment.2a4bc" not in lake.documents
    assert {k: v for k, v in lake.documents.items() if not k.startswith("atlas.")} == before


def test_prune_refuses_to_delete_most_of_the_namespace(
    tmp_path: Path, wh: Warehouse, lake: NodeLake
) -> None:
    for n in range(10):
        lake.put({"_id": f"atlas.legacy.{n}", "_type": "page"})
    path = ingest(tmp_path, wh, manifest_text())
    with pytest.raises(MassPruneRefused, match="refusing to prune 10 of 10 documents"):
        publish(path, wh, prune=True)
    assert lake.mutation_requests() == []
    assert ledger.pushes(wh)[0]["status"] == "refused"
    result = publish(path, wh, prune=True, allow_mass_prune=True)
    assert result.status == "ok" and len(result.plan.orphan) == 10
    assert sorted(atlas(lake)) == sorted(result.plan.create)


# -- confinement and the guard -------------------------------------------------------------
def test_a_namespace_violation_aborts_before_any_request(
    tmp_path: Path, warehouse_path: Path, lake: NodeLake, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "atlas.toml"
    path.write_text(manifest_text())
    cli("ingest", path, "--warehouse", warehouse_path)
    real = curate_module.sanity_id

    def buggy(namespace: str, kind: str, key: str) -> str:
        return "homepage" if kind == "article" else real(namespace, kind, key)

    monkeypatch.setattr(curate_module, "sanity_id", buggy)
    requests_before = len(lake.requests)
    result = cli("publish", path, "--warehouse", warehouse_path)
    assert result.exit_code == EXIT_FAILURE
    assert "would write outside namespace 'atlas' (homepage); nothing was sent" in result.stderr
    assert len(lake.requests) == requests_before
    with Warehouse.open(str(warehouse_path), read_only=True) as wh:
        assert ledger.pushes(wh)[0]["status"] == "refused"


def test_push_refuses_documents_outside_the_namespace(lake: NodeLake) -> None:
    from tests.publish.test_publish_plan import doc

    target = SanityHttpTarget(SanitySettings.from_env() or pytest.fail(), quiet_http())
    with pytest.raises(NamespaceViolation):
        push([doc("ns.ok.1"), doc("nsEvil.x")], target, namespace="ns")
    assert lake.requests == []


def test_an_unrelated_document_deleted_mid_push_trips_the_guard(
    tmp_path: Path, warehouse_path: Path, lake: NodeLake
) -> None:
    path = tmp_path / "atlas.toml"
    path.write_text(manifest_text())
    cli("ingest", path, "--warehouse", warehouse_path)
    lake.before_mutation({"delete": {"id": "homepage"}})
    result = cli("publish", path, "--warehouse", warehouse_path)
    assert result.exit_code == EXIT_GUARD
    assert "GUARD TRIPPED: unrelated documents moved during the push: 4 before, 3 after (-1)" in (
        result.stderr
    )
    assert "receipt: unrelated documents before 4, after 3; touched by us 0" in result.stdout
    with Warehouse.open(str(warehouse_path), read_only=True) as wh:
        row = ledger.pushes(wh)[0]
    assert (row["status"], row["unrelated_before"], row["unrelated_after"]) == (
        "guard-tripped",
        4,
        3,
    )
    assert row["applied"] == 4  # what was pushed is recorded either way


def test_an_unrelated_document_carrying_our_transaction_id_trips_the_guard(
    tmp_path: Path, wh: Warehouse, lake: NodeLake
) -> None:
    path = ingest(tmp_path, wh, manifest_text())
    lake.write_alongside("homepage", {"title": "rewritten"})
    result = publish(path, wh)
    assert result.status == "guard-tripped" and for_push(result) == EXIT_GUARD
    assert (result.unrelated_before, result.unrelated_after, result.touched_by_us) == (4, 4, 1)
    assert result.touched_ids == ["homepage"]
    assert "1 unrelated document(s) carry one of this push's transaction ids: homepage" in (
        result.message or ""
    )


# -- failures, retries, re-runs ------------------------------------------------------------
SMALL_BATCHES = "[publish]\nbatch_bytes = 4000\nconcurrency = 1\n"


def test_a_batch_failing_mid_push_keeps_the_record_and_a_rerun_completes_it(
    tmp_path: Path, wh: Warehouse, lake: NodeLake
) -> None:
    path = ingest(tmp_path, wh, manifest_text(synthetic=30, publish=SMALL_BATCHES))
    # from the third transaction on, every mutate request is refused with a 500; the
    # documents show each did not commit, so they go out again, up to MAX_RESENDS times
    lake.fault("mutate", status=500, times=10**6, after=2)
    first = publish(path, wh, http=quiet_http())
    assert first.status == "failed" and for_push(first) == EXIT_FAILURE
    statuses = [b["status"] for b in first.batches]
    assert statuses[:2] == ["committed", "committed"] and statuses[-1] == "failed"
    assert set(statuses[2:-1]) == {"not-committed"}
    assert "HTTP 500" in (first.message or "") and "verified not committed" in (first.message or "")
    assert len(atlas(lake)) == first.applied > 0
    stored = ledger.batches(wh, first.push_id or 0)
    assert [b["status"] for b in stored] == statuses
    sent = lake.sent_transaction_ids()
    assert len(sent) == len(set(sent)) == len(statuses)
    lake.clear_faults()
    assert ledger.pushes(wh)[0]["applied"] == first.applied

    second = publish(path, wh, http=quiet_http())
    assert second.status == "ok"
    assert second.plan.counts()["create"] == 34 - first.applied
    assert second.plan.counts()["unchanged"] == first.applied
    assert len(atlas(lake)) == 34


def test_a_429_is_waited_out_then_read_back_and_what_did_not_commit_goes_anew(
    tmp_path: Path, wh: Warehouse, lake: NodeLake
) -> None:
    path = ingest(tmp_path, wh, manifest_text())
    lake.fault("mutate", status=429, times=2, retry_after=7)
    lake.fault("mutate", status=503, times=1)
    slept: list[float] = []
    result = publish(path, wh, http=HttpFactory(user_agent=USER_AGENT, sleep=slept.append))
    assert result.status == "ok" and len(atlas(lake)) == 4
    assert slept == [7.0, 7.0]
    # one request per transaction (one per reference level), plus the three refused ones
    assert len(lake.mutation_requests()) == len(result.transaction_ids) + 3 == 6
    # Sanity's own client never resends a mutation: after each 429, as after the 503, the
    # documents showed the transaction had not committed, and they went out in a new one
    sent = lake.sent_transaction_ids()
    assert len(set(sent)) == len(sent) == 6
    statuses = [b["status"] for b in ledger.batches(wh, result.push_id or 0)]
    assert statuses.count("not-committed") == 3


@pytest.mark.parametrize(("lost", "how"), [(None, "RemoteProtocolError"), (503, "HTTP 503")])
def test_a_transaction_that_committed_before_its_answer_was_lost_is_recorded_as_committed(
    tmp_path: Path, wh: Warehouse, lake: NodeLake, lost: int | None, how: str
) -> None:
    path = ingest(tmp_path, wh, manifest_text(synthetic=10, publish=SMALL_BATCHES))
    if lost is None:
        lake.fault("mutate", when="after", drop=True)
    else:
        lake.fault("mutate", when="after", status=lost)
    result = publish(path, wh, http=quiet_http())
    assert result.status == "ok", result.message
    sent = lake.sent_transaction_ids()
    # Sanity saw every transaction id once; nothing was sent twice
    assert len(sent) == len(set(sent)) == len(lake.transactions) - len(UNRELATED)
    assert result.transaction_ids == sent
    stored = ledger.batches(wh, result.push_id or 0)
    assert [b["status"] for b in stored] == ["committed"] * len(sent)
    assert how in (stored[0]["message"] or "") and "verified" in (stored[0]["message"] or "")
    assert len(atlas(lake)) == 14 == result.applied
    again = publish(path, wh, http=quiet_http())
    assert again.status == "ok" and again.applied == 0
    assert len(lake.mutation_requests()) == len(sent)


def test_a_transaction_that_provably_did_not_commit_is_resent_under_a_new_id(
    tmp_path: Path, wh: Warehouse, lake: NodeLake
) -> None:
    path = ingest(tmp_path, wh, manifest_text(synthetic=10, publish=SMALL_BATCHES))
    lake.fault("mutate", status=503, after=1)  # refused before anything was applied
    result = publish(path, wh, http=quiet_http())
    assert result.status == "ok", result.message
    sent = lake.sent_transaction_ids()
    assert len(sent) == len(set(sent)) == len(result.transaction_ids) + 1
    statuses = [b["status"] for b in ledger.batches(wh, result.push_id or 0)]
    assert statuses.count("not-committed") == 1 and statuses.count("committed") == len(sent) - 1
    assert len(atlas(lake)) == 14


def test_a_push_killed_after_its_transaction_committed_is_reconciled_by_the_next(
    tmp_path: Path, wh: Warehouse, py_lake: FakeContentLake
) -> None:
    lake = py_lake  # the client is killed: a fault only the Python fake can play
    path = ingest(tmp_path, wh, manifest_text(synthetic=10, publish=SMALL_BATCHES))
    # the second transaction commits, then the process dies before it hears so
    lake.kill_after_commit(after=1)
    with pytest.raises(KeyboardInterrupt):
        publish(path, wh, http=quiet_http())
    killed = ledger.pushes(wh)[0]
    assert killed["status"] == "interrupted"
    recorded = {b["transaction_id"] for b in ledger.batches(wh, killed["push_id"])}
    committed = [t["id"] for t in lake.transactions if t["id"].startswith("rcpt-")]
    assert len(committed) == 2 and committed[1] not in recorded
    unrecorded = sorted(i for i, d in atlas(lake).items() if d["_rev"] == committed[1])
    assert unrecorded

    drift = target_drift(wh, lake_target(), "atlas", "atlas", curate_manifest(load(path), wh))
    assert drift.written == [] and drift.unrecorded == unrecorded and not drift.found

    second = publish(path, wh, http=quiet_http())
    assert second.status == "ok" and second.reconciled == [committed[1]]
    assert any("reconciled 1 transaction(s)" in n for n in second.notices)
    rows = ledger.batches(wh, killed["push_id"])
    assert [(b["transaction_id"], b["status"]) for b in rows][-1] == (committed[1], "reconciled")
    assert committed[1] in ledger.our_transaction_ids(wh, lake_target().name, "atlas")
    after = target_drift(wh, lake_target(), "atlas", "atlas", curate_manifest(load(path), wh))
    assert after.written == [] and after.unrecorded == [] and not after.found
    # reconciled once: a third push finds nothing to reconcile
    assert publish(path, wh, http=quiet_http()).reconciled == []


def lake_target() -> SanityHttpTarget:
    settings = SanitySettings.from_env()
    assert settings is not None
    return SanityHttpTarget(settings, quiet_http())


def test_strong_references_are_created_after_their_targets(
    tmp_path: Path, wh: Warehouse, lake: NodeLake
) -> None:
    refused = httpx.post(
        f"{lake.url}/v2025-02-19/data/mutate/{lake.dataset}",
        json={
            "mutations": [
                {"createIfNotExists": {"_id": "x.a", "_type": "t", "r": {"_ref": "x.missing"}}}
            ]
        },
        headers={"Authorization": f"Bearer {lake.token}"},
    )
    assert refused.status_code == 409
    assert "references non-existent document" in refused.json()["error"]["description"]
    one_per_transaction = "[publish]\nbatch_mutations = 1\nconcurrency = 8\n"
    path = ingest(tmp_path, wh, manifest_text(publish=one_per_transaction))
    result = publish(path, wh)
    assert result.status == "ok" and len(result.transaction_ids) == 4
    reply = lake.documents["atlas.comment.2a4bc"]
    parent = lake.documents["atlas.comment.2a4b9"]
    assert reply["parent"]["_ref"] == parent["_id"]
    transactions = lake.transactions
    assert transactions.index(parent["_rev"]) < transactions.index(reply["_rev"])


def test_dry_run_sends_nothing_and_records_nothing(
    tmp_path: Path, warehouse_path: Path, lake: NodeLake
) -> None:
    path = tmp_path / "atlas.toml"
    path.write_text(manifest_text())
    cli("ingest", path, "--warehouse", warehouse_path)
    result = cli("publish", path, "--warehouse", warehouse_path, "--dry-run")
    assert result.exit_code == 0, result.output
    assert "dry run, nothing sent: sanity:fakeproj/production, namespace atlas" in result.stdout
    assert "create: atlas.article.101, atlas.comment.2a4b9" in result.stdout
    assert "receipt: unrelated documents 4 before" in result.stdout
    assert lake.mutation_requests() == []
    assert "no pushes yet" in cli("pushes", "--warehouse", warehouse_path).stdout


# -- the token -----------------------------------------------------------------------------
def test_the_token_never_appears_in_output_the_ledger_or_recorded_exchanges(
    tmp_path: Path, warehouse_path: Path, lake: NodeLake, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "atlas.toml"
    path.write_text(manifest_text())
    cli("ingest", path, "--warehouse", warehouse_path)
    record = tmp_path / "exchanges"
    monkeypatch.setenv("RECEIPTS_RECORD", str(record))
    ok = cli("publish", path, "--warehouse", warehouse_path, "--json")
    assert ok.exit_code == 0
    monkeypatch.setenv("SANITY_TOKEN", "sk-wrong-token-0123456789abcdefghij")
    denied = cli("publish", path, "--warehouse", warehouse_path)
    assert denied.exit_code == EXIT_FAILURE
    assert "HTTP 401" in denied.stderr and "Session not found" in denied.stderr
    texts = [ok.output, denied.output, warehouse_path.read_bytes().decode("latin-1")]
    texts += [p.read_text() for p in record.rglob("*.json")]
    assert len(texts) > 3
    for text in texts:
        assert lake.token not in text and "sk-wrong-token" not in text
    assert "sk-" not in repr(SanitySettings.from_env())
