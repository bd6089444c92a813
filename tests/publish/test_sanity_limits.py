"""Publishing within the Content Lake's limits, as it behaves today (against the fake whose
queries groq-js evaluates, ``tests/node/lake.mjs``, which enforces them):

- a request body over 4,000,000 bytes is refused ("Request body exceeds limit of 4000000
  bytes", https://www.sanity.io/docs/content-lake/technical-limits), so a document that
  cannot fit is published without its text, and the receipt names it;
- an id over 128 characters is refused (sanity-io/client ``validateDocumentId``,
  sanity-io/client#149), so a curated ``_id`` leaves room for ``versions.<releaseId>.``
  (sanity-io/sanity#4515: ``drafts.`` on a 126-character id fails);
- a read-back URL over the backend's limit is answered 414 (the Studio chunks ids to ~11 kB,
  sanity-io/sanity commit d64aefd);
- a mutation is never resent blind, not even after a 429 (sanity-io/client
  src/http/request.ts never retries one), and a transaction id "must be unique in the
  dataset" (https://www.sanity.io/docs/http-mutations), also after a warehouse is restored.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from fakes.forem import FakeForem
from fakes.github import FakeGitHub, manifest_toml
from fakes.node_lake import NodeLake
from pipelines import USER_AGENT
from pipelines.publish.targets.sanity_http import SanityHttpTarget, SanitySettings
from pipelines.publish.targets.sanity_limits import MAX_URL_CHARS, id_chunks
from sources.http import HttpFactory
from tests.conftest import TEST_WAREHOUSE, cli, write_manifest
from tests.publish_corpus import manifest_text, register
from warehouse import pushes as ledger
from warehouse.ids import SANITY_ID_MAX
from warehouse.store import Warehouse

REPO = "octo/hyphae"
MIB = 1024 * 1024
Upstreams = tuple[FakeGitHub, FakeForem, NodeLake]


def ours(lake: NodeLake) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in lake.documents.items() if k.startswith("atlas.")}


def refused(lake: NodeLake, status: int) -> list[dict[str, Any]]:
    return [r for r in lake.requests if r.get("status") == status]


def remove_all(lake: NodeLake) -> None:
    """Delete our documents as an editor would: referencing documents before those they
    reference (Sanity refuses to delete a document still referenced)."""
    left = set(ours(lake))
    while left:
        for doc_id in sorted(left):
            try:
                lake.remove(doc_id)
            except httpx.HTTPStatusError:
                continue
            left.discard(doc_id)


def github_corpus(
    tmp_path: Path,
    warehouse_path: Path,
    github: FakeGitHub,
    files: dict[str, bytes],
    publish: str = "",
) -> Path:
    github.anonymous_limit = 100_000
    sha = github.push(REPO, files)
    text = manifest_toml(REPO, sha, dict.fromkeys(files, "text")) + publish
    manifest = write_manifest(tmp_path, text)
    ingested = cli("ingest", manifest, "--warehouse", warehouse_path)
    assert ingested.exit_code == 0, ingested.output
    return manifest


# -- 2: one large document must not stop every push --------------------------------------------
def test_a_20_mib_file_is_published_without_its_text_and_the_others_whole(
    tmp_path: Path, warehouse_path: Path, upstreams: Upstreams
) -> None:
    github, _, lake = upstreams
    big = b"0123456789abcdef" * (20 * MIB // 16)  # 20 MiB, GitHub's size cap for a file
    files = {"a-notes.txt": b"first\n", "big.txt": big, "z-notes.txt": b"last\n"}
    manifest = github_corpus(tmp_path, warehouse_path, github, files)

    result = cli("publish", manifest, "--warehouse", warehouse_path, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["status"] == "ok" and report["plan"]["create"] == 3
    assert refused(lake, 413) == []  # nothing was sent over the limit
    documents = {d["path"]: d for d in ours(lake).values()}
    assert documents["a-notes.txt"]["text"] == "first\n"
    assert documents["z-notes.txt"]["text"] == "last\n"
    large = documents["big.txt"]
    assert "text" not in large
    assert large["size"] == len(big) and large["url"].startswith("https://github.com/")
    assert large["sha256"] == large["provenance"]["contentHash"]
    assert large["textOmitted"]["fields"] == ["text"]
    assert large["textOmitted"]["bytes"] > 4_000_000 == large["textOmitted"]["limit"]
    # the receipt names it, in --json and in the ledger's notices
    [named] = report["oversize"]
    assert named["id"] == large["_id"] and named["action"] == "omit-text"
    assert any(large["_id"] in n and "without text" in n for n in report["notices"])
    pushed = json.loads(cli("pushes", "--warehouse", warehouse_path, "--json").stdout)
    assert any(large["_id"] in n for n in pushed[0]["notices"])
    # every request stayed within the limit, counted in the bytes sent
    assert all(len(json.dumps(r["body"]).encode()) < 4_000_000 for r in lake.mutation_requests())

    sent = lake.mutations_sent()
    again = cli("publish", manifest, "--warehouse", warehouse_path, "--json")
    assert again.exit_code == 0 and json.loads(again.stdout)["plan"]["unchanged"] == 3
    assert lake.mutations_sent() == sent


def test_skip_policy_leaves_a_large_document_out_and_never_prunes_its_copy(
    tmp_path: Path, warehouse_path: Path, upstreams: Upstreams
) -> None:
    github, _, lake = upstreams
    big = b"x" * (5 * 1_000_000)
    files = {"big.txt": b"small at first\n", "notes.txt": b"notes\n"}
    manifest = github_corpus(tmp_path, warehouse_path, github, files)
    assert cli("publish", manifest, "--warehouse", warehouse_path).exit_code == 0
    before = {d["path"]: d for d in ours(lake).values()}["big.txt"]

    sha = github.push(REPO, {"big.txt": big})
    text = manifest_toml(REPO, sha, {"big.txt": "text", "notes.txt": "text"})
    skip = '[publish]\noversize = "skip"\n\n[[github]]'
    write_manifest(tmp_path, text.replace("[[github]]", skip))
    assert cli("ingest", manifest, "--warehouse", warehouse_path).exit_code == 0
    result = cli("publish", manifest, "--warehouse", warehouse_path, "--prune", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert [o["action"] for o in report["oversize"]] == ["skip"]
    assert report["oversize"][0]["id"] == before["_id"] and report["orphan"] == []
    assert ours(lake)[before["_id"]]["text"] == "small at first\n"  # left as it was
    assert refused(lake, 413) == []


# -- 3: ids with room for their prefixes; read-back URLs within the limit ----------------------
def test_a_long_upstream_key_leaves_room_for_a_release_version(
    tmp_path: Path, warehouse_path: Path, upstreams: Upstreams
) -> None:
    github, _, lake = upstreams
    path = "docs/" + "/".join(["a-very-long-folder-name-for-the-record"] * 6) + "/file.md"
    manifest = github_corpus(tmp_path, warehouse_path, github, {path: b"# deep\n"})
    result = cli("publish", manifest, "--warehouse", warehouse_path)
    assert result.exit_code == 0, result.output
    [(doc_id, document)] = ours(lake).items()
    assert document["provenance"]["docId"] == f"github/{REPO}/{path}"  # the full key
    # an editor can draft it and a Studio release (id "r" + 8) can hold a version of it
    for prefix in ("drafts.", "versions.rAbCd1234."):
        assert len(prefix + doc_id) <= SANITY_ID_MAX
        lake.put({**document, "_id": prefix + doc_id})
    assert {"drafts." + doc_id, "versions.rAbCd1234." + doc_id} <= set(lake.documents)


def test_reading_back_many_long_ids_after_a_lost_answer_never_gets_a_414(
    tmp_path: Path, warehouse_path: Path, upstreams: Upstreams
) -> None:
    github, _, lake = upstreams
    folder = "/".join(["a-long-folder-name-that-makes-the-key-long"] * 3)
    files = {f"{folder}/note-{n:03}.md": f"note {n}\n".encode() for n in range(130)}
    one_batch = "\n[publish]\nbatch_bytes = 4000000\n"
    manifest = github_corpus(tmp_path, warehouse_path, github, files, one_batch)
    lake.fault("mutate", when="after", drop=True)  # the answer to the transaction is lost
    result = cli("publish", manifest, "--warehouse", warehouse_path, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["status"] == "ok" and len(ours(lake)) == 130
    [lost] = [b for b in report["batches"] if "verified committed" in (b["message"] or "")]
    assert lost["mutations"] == 130  # all read back by id
    assert refused(lake, 414) == []
    reads = [r for r in lake.requests if r["endpoint"] == "doc"]
    assert len(reads) >= 2  # the ids were split


def test_the_doc_endpoint_is_read_in_chunks_under_the_url_limit(node_lake: NodeLake) -> None:
    ids = [f"atlas.file.{n:03}-" + "x" * (SANITY_ID_MAX - 15) for n in range(250)]
    for doc_id in ids:
        assert len(doc_id) == SANITY_ID_MAX
        node_lake.put({"_id": doc_id, "_type": "page"})
    settings = SanitySettings.from_env()
    assert settings is not None
    target = SanityHttpTarget(settings, HttpFactory(user_agent=USER_AGENT))
    try:
        found = target.read_documents(ids)
    finally:
        target.close()
    assert sorted(found) == ids and refused(node_lake, 414) == []
    chunks = list(id_chunks(ids, "http://127.0.0.1:1/v2025-02-19/data/doc/production"))
    assert [i for c in chunks for i in c] == ids and all(len(c) <= 100 for c in chunks)
    assert max(len(",".join(c)) for c in chunks) < MAX_URL_CHARS


# -- 4: never resend a mutation blind ---------------------------------------------------------
def test_a_429_on_a_mutation_that_committed_is_not_resent(
    tmp_path: Path, warehouse_path: Path, node_lake: NodeLake, monkeypatch: pytest.MonkeyPatch
) -> None:
    register(monkeypatch)
    manifest = write_manifest(tmp_path, manifest_text())
    assert cli("ingest", manifest, "--warehouse", warehouse_path).exit_code == 0
    # the transaction commits, then the answer is a 429 (a proxy's, or a limit applied late)
    node_lake.fault("mutate", when="after", status=429, retry_after=0.01)
    result = cli("publish", manifest, "--warehouse", warehouse_path, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["status"] == "ok" and len(ours(node_lake)) == 4
    sent = node_lake.sent_transaction_ids()
    assert len(sent) == len(set(sent)) == len(report["transaction_ids"])
    first = report["batches"][0]
    assert first["status"] == "committed" and "HTTP 429" in first["message"]
    assert "verified committed" in first["message"]


# -- 8: a warehouse restored from a backup can publish ----------------------------------------
@pytest.mark.skipif(TEST_WAREHOUSE != "duckdb", reason="copies the warehouse file")
@pytest.mark.parametrize("same_instant", [False, True], ids=["clock-runs", "clock-frozen"])
def test_a_warehouse_restored_from_a_backup_publishes(
    tmp_path: Path,
    warehouse_path: Path,
    node_lake: NodeLake,
    monkeypatch: pytest.MonkeyPatch,
    same_instant: bool,
) -> None:
    register(monkeypatch)
    manifest = write_manifest(tmp_path, manifest_text())
    assert cli("ingest", manifest, "--warehouse", warehouse_path).exit_code == 0
    if same_instant:  # both pushes start at the same instant: their ids do collide
        monkeypatch.setenv("RECEIPTS_NOW", "2026-11-01T06:00:00Z")
    backup = tmp_path / "backup.duckdb"
    shutil.copyfile(warehouse_path, backup)
    first = cli("publish", manifest, "--warehouse", warehouse_path, "--json")
    assert first.exit_code == 0, first.output
    lost = json.loads(first.stdout)
    before = node_lake.sent_transaction_ids()
    # the warehouse is restored from the backup, which never saw that push; an editor has
    # since deleted what it published, so the next push sends the same mutations again
    shutil.copyfile(backup, warehouse_path)
    remove_all(node_lake)

    again = cli("publish", manifest, "--warehouse", warehouse_path, "--json")
    assert again.exit_code == 0, again.output
    report = json.loads(again.stdout)
    assert report["push_id"] == lost["push_id"] and report["status"] == "ok"
    assert len(ours(node_lake)) == 4
    sent = node_lake.sent_transaction_ids()[len(before) :]
    assert len(sent) == len(set(sent))
    with Warehouse.open(str(warehouse_path)) as wh:
        statuses = [b["status"] for b in ledger.batches(wh, report["push_id"])]
    assert set(report["transaction_ids"]).isdisjoint(before)
    if same_instant:  # one id collided; Sanity's refusal was read back: not committed, so
        # its documents went out anew, in a transaction of their own
        assert sent[0] == before[0] and set(sent[1:]).isdisjoint(before)
        assert statuses.count("not-committed") == 1
    else:  # the restored push's ids differ from the lost one's: Sanity never refused one
        assert "already" not in again.output
        assert set(sent).isdisjoint(before) and "not-committed" not in statuses


def test_reconciliation_reads_both_id_shapes_and_never_a_key_of_another_history(
    wh: Warehouse,
) -> None:
    target = "sanity:fakeproj/production"
    push_id = ledger.start_push(
        wh,
        target=target,
        namespace="atlas",
        manifest_name="atlas",
        run_id=None,
        plan_counts={},
        unrelated_before=0,
    )
    key = ledger.push_key(wh, push_id)
    assert key is not None and len(key) == 8
    older = f"rcpt-{push_id}-3-0123456789abcdef"  # from before pushes had keys
    current = f"rcpt-{push_id}-{key}-4-0123456789abcdef"
    # the same push number in a history this warehouse never saw (a restored backup)
    other = f"rcpt-{push_id}-{'0' * 8 if key != '0' * 8 else '1' * 8}-5-0123456789abcdef"
    found = ledger.unrecorded_transactions(wh, target, "atlas", [older, current, other, "tx-1"])
    assert found == {older, current}
    ledger.record_reconciled(wh, {older: 1, current: 2}, None)
    assert [b["batch_no"] for b in ledger.batches(wh, push_id)] == [3, 4]
    assert ledger.unrecorded_transactions(wh, target, "atlas", [older, current]) == set()


def test_a_document_that_fits_is_left_as_it_is_and_one_that_does_not_is_cut_the_same_way() -> None:
    from datetime import UTC, datetime

    from pipelines.manifest import Publish
    from pipelines.publish.curate import RevisionMeta, build_document, hash_of_target_document
    from pipelines.publish.oversize import MUTATION_ROOM, fit
    from sources.base import Curated

    meta = RevisionMeta(
        "fixture/file/1", "file", 1, "ab" * 32, "https://x.test/1", None,
        datetime(2026, 11, 1, tzinfo=UTC), 1, 1,
    )  # fmt: skip
    fields = {"title": "t", "text": "x" * 50_000, "notes": "y" * 20_000}
    document = build_document("atlas", "atlas.file.1", meta, Curated("file", fields), Publish())
    assert fit(document) == (document, None)
    limit = 40_000 + MUTATION_ROOM  # room for the notes, not for the text
    cut, oversize = fit(document, limit)
    assert oversize is not None and oversize.action == "omit-text"
    assert oversize.fields == ("text",) and oversize.bytes == len(document.body)
    body = cut.document()
    assert "text" not in body and body["notes"] == "y" * 20_000
    assert body["textOmitted"]["fields"] == ["text"] and body["provenance"]["sourceUrl"]
    assert len(cut.body) <= limit - MUTATION_ROOM and fit(document, limit)[0] == cut
    # the document carries a curatedHash of what it holds, so a re-read sees it unedited
    assert hash_of_target_document(body) == cut.curated_hash
    # with no room even without its fields, it is skipped
    assert fit(document, 300 + MUTATION_ROOM)[1] == replace(oversize, action="skip", fields=())


@pytest.mark.parametrize(
    ("description", "taken"),
    [
        ('The transaction ID "rcpt-1-1-ab" is already in use in this dataset', True),
        ("transaction rcpt-1-1-ab already exists", True),
        ('The mutation(s) failed: transaction ID "rcpt-1-1-ab" has already been used', True),
        ('Document by ID "atlas.transaction.1" already exists', False),
        ('Document "atlas.a" has unexpected revision ID ("x"), expected "y"', False),
    ],
)
def test_an_answer_that_the_transaction_id_is_taken_is_told_apart(
    description: str, taken: bool
) -> None:
    from pipelines.publish.targets.sanity_limits import transaction_id_taken

    body = {"error": {"type": "mutationError", "description": description, "items": []}}
    assert transaction_id_taken(httpx.Response(409, json=body)) is taken
