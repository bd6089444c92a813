"""The Forem source end to end through ``run_ingest`` (the library entry point the CLI calls),
against the stateful fake dev.to, with a virtual clock so pacing and Retry-After cost no time.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fakes.forem import NETWORK_JITTER, FakeForem, VirtualClock, forem_entry
from pipelines import USER_AGENT
from pipelines.ingest import RunResult, run_ingest
from pipelines.manifest import load_manifest
from sources.base import Curated, CurationInput, FetchContext, default_identity
from sources.forem.api import Fetched
from sources.forem.records import tree_is_complete, tree_nodes
from sources.http import HttpFactory
from sources.registry import SOURCES
from tests.conftest import write_manifest
from warehouse import history, integrity
from warehouse.digests import row_counts
from warehouse.errors import NotFound, SourceError
from warehouse.ids import sanity_id
from warehouse.records import Provenance
from warehouse.store import Warehouse

CORPUS = '[corpus]\nname = "forem-test"\nnamespace = "foremTest"\n'


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock()


@pytest.fixture
def fake(clock: VirtualClock) -> Iterator[FakeForem]:
    with FakeForem(clock=clock.now).serving() as served:
        yield served


def ingest(wh: Warehouse, tmp_path: Path, clock: VirtualClock, *entries: str) -> RunResult:
    path = write_manifest(tmp_path, CORPUS + "".join(entries))
    http = HttpFactory(user_agent=USER_AGENT, sleep=clock.sleep)
    try:
        return run_ingest(load_manifest(path), wh, http=http)
    finally:
        http.close()


def body(wh: Warehouse, doc_id: str, revision: int | None = None) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(history.snapshot(wh, doc_id, revision=revision).body)
    return value


def doc_ids(wh: Warehouse, kind: str) -> set[str]:
    """The forem documents of ``kind`` (a doc_id is ``forem/<kind>/...``)."""
    return {r.doc_id for r in history.revisions(wh) if r.doc_id.startswith(f"forem/{kind}/")}


def revision_count(wh: Warehouse) -> int:
    return row_counts(wh, ["revisions"])["revisions"]


@pytest.fixture
def thread(fake: FakeForem) -> dict[str, Any]:
    """An article with a small thread: two top-level comments, a reply, a reply to it."""
    article = fake.add_article("ana", "on-labels-2gc3", "On labels", "One label, three failures.")
    first = fake.add_comment(article, "I saw this too.", "bo")
    reply = fake.add_comment(article, "Which version?", "ana", parent=first)
    deeper = fake.add_comment(article, "3.1, on Linux.", "bo", parent=reply)
    second = fake.add_comment(article, "Same here.", "cy")
    return {"article": article, "comments": [first, reply, deeper, second]}


def test_article_by_url_with_its_comment_tree(
    wh: Warehouse, tmp_path: Path, clock: VirtualClock, fake: FakeForem, thread: dict[str, Any]
) -> None:
    result = ingest(wh, tmp_path, clock, forem_entry(url="https://dev.to/ana/on-labels-2gc3"))
    assert result.status == "ok", result.failures
    assert result.counts["forem"]["new"] == 5
    assert result.warnings == []
    article_id = thread["article"]
    article = body(wh, f"forem/article/{article_id}")
    assert (article["id"], article["title"]) == (article_id, "On labels")
    assert article["body_html"] == "<p>One label, three failures.</p>"
    for volatile in ("comments_count", "public_reactions_count", "reading_time_minutes"):
        assert volatile not in article
    assert "profile_image" not in article["user"]

    first, reply, deeper, second = thread["comments"]
    places = {
        code: (c["article_id"], c["parent_id_code"], c["depth"], c["user"].get("username"))
        for code in thread["comments"]
        for c in [body(wh, f"forem/comment/{code}")]
    }
    assert places == {
        first: (article_id, None, 0, "bo"),
        reply: (article_id, first, 1, "ana"),
        deeper: (article_id, reply, 2, "bo"),
        second: (article_id, None, 0, "cy"),
    }
    stored = body(wh, f"forem/comment/{deeper}")
    assert stored["body_html"] == "<p>3.1, on Linux.</p>"
    assert stored["created_at"] == "2026-05-02T10:00:00Z"
    assert "children" not in stored
    revs = history.history(wh, f"forem/comment/{deeper}")
    assert revs[0]["attributes"] == {"state": "present"}
    assert revs[0]["scope"] == f"forem:article:{article_id}:comments"
    assert revs[0]["provenance"]["url"] == f"https://dev.to/api/comments?a_id={article_id}"
    assert revs[0]["provenance"]["source_format"] == "forem-api-v1"
    assert fake.v0_requests == 0


def test_article_by_id_without_comments(
    wh: Warehouse, tmp_path: Path, clock: VirtualClock, fake: FakeForem, thread: dict[str, Any]
) -> None:
    result = ingest(wh, tmp_path, clock, forem_entry(id=thread["article"], comments=False))
    assert result.status == "ok"
    assert doc_ids(wh, "article") == {f"forem/article/{thread['article']}"}
    assert doc_ids(wh, "comment") == set()


def test_a_tree_many_levels_deep(
    wh: Warehouse, tmp_path: Path, clock: VirtualClock, fake: FakeForem
) -> None:
    article = fake.add_article("ana", "deep")
    parent = None
    chain = []
    for level in range(12):
        parent = fake.add_comment(article, f"level {level}", "bo", parent=parent)
        chain.append(parent)
    side = fake.add_comment(article, "a side reply", "cy", parent=chain[5])
    result = ingest(wh, tmp_path, clock, forem_entry(id=article))
    assert result.status == "ok"
    for level, code in enumerate(chain):
        stored = body(wh, f"forem/comment/{code}")
        assert stored["depth"] == level
        assert stored["parent_id_code"] == (chain[level - 1] if level else None)
    assert body(wh, f"forem/comment/{side}")["depth"] == 6


def test_the_whole_tree_comes_in_one_response_beyond_a_page(
    wh: Warehouse, tmp_path: Path, clock: VirtualClock, fake: FakeForem
) -> None:
    # The fake pages top-level comments by 50 when asked for a page, like Forem.
    article = fake.add_article("ana", "popular")
    codes = {fake.add_comment(article, f"comment {i}", "bo") for i in range(60)}
    result = ingest(wh, tmp_path, clock, forem_entry(id=article))
    assert result.status == "ok"
    assert doc_ids(wh, "comment") == {f"forem/comment/{c}" for c in codes}
    assert result.warnings == []


def test_user_listing_pages_through_every_published_article(
    wh: Warehouse, tmp_path: Path, clock: VirtualClock, fake: FakeForem
) -> None:
    fake.max_per_page = 2  # the instance caps pages below what receipts asks for
    mine = [
        fake.add_article("ana", f"post-{i}", published_at=f"2026-05-0{i + 1}T10:00:00Z")
        for i in range(5)
    ]
    fake.add_comment(mine[0], "first!", "bo")
    other = fake.add_article("bo", "not-ana")
    result = ingest(wh, tmp_path, clock, forem_entry(username="ana"))
    assert result.status == "ok", result.failures
    assert doc_ids(wh, "article") == {f"forem/article/{i}" for i in mine}
    assert f"forem/article/{other}" not in doc_ids(wh, "article")
    assert len(doc_ids(wh, "comment")) == 1


def test_user_listing_is_not_complete_an_unlisted_article_keeps_its_revision(
    wh: Warehouse, tmp_path: Path, clock: VirtualClock, fake: FakeForem
) -> None:
    kept = fake.add_article("ana", "kept")
    dropped = fake.add_article("ana", "dropped")
    ingest(wh, tmp_path, clock, forem_entry(username="ana"))
    fake.articles[dropped].published = False
    result = ingest(wh, tmp_path, clock, forem_entry(username="ana"))
    assert result.status == "ok"
    assert result.counts["forem"]["gone"] == 0
    assert [r["tombstone"] for r in history.history(wh, f"forem/article/{dropped}")] == [False]
    assert result.left_corpus == [f"forem/article/{dropped}"]  # no longer yielded
    assert body(wh, f"forem/article/{kept}")["id"] == kept


def test_a_listed_article_that_cannot_be_shown_is_skipped_with_a_warning(
    wh: Warehouse, tmp_path: Path, clock: VirtualClock, fake: FakeForem
) -> None:
    shown = fake.add_article("ana", "here")
    elsewhere = fake.add_article("ana", "other-subforem")
    fake.articles[elsewhere].subforem_id = 2
    result = ingest(wh, tmp_path, clock, forem_entry(username="ana"))
    assert result.status == "ok"
    assert doc_ids(wh, "article") == {f"forem/article/{shown}"}
    [warning] = result.warnings
    assert warning["entry"] == "forem user ana"
    assert f"listed article {elsewhere} skipped" in warning["warning"]
    assert "HTTP 404" in warning["warning"]


def test_a_list_that_does_not_page_fails_instead_of_looping(
    wh: Warehouse, tmp_path: Path, clock: VirtualClock, fake: FakeForem
) -> None:
    fake.max_per_page = 2
    fake.ignores_page = True
    for i in range(3):
        fake.add_article("ana", f"post-{i}")
    result = ingest(wh, tmp_path, clock, forem_entry(username="ana"))
    assert result.status == "failed"
    assert result.failures[0]["reason"] == (
        "forem: page 2 of ana's articles repeats earlier pages; "
        "the instance does not page this list"
    )
    assert doc_ids(wh, "article") == set()


def test_an_unknown_user_is_a_warning_not_an_empty_success(
    wh: Warehouse, tmp_path: Path, clock: VirtualClock, fake: FakeForem
) -> None:
    result = ingest(wh, tmp_path, clock, forem_entry(username="nobody"))
    assert result.status == "ok"
    assert [w["warning"] for w in result.warnings] == [
        "user nobody: no published articles listed (an unknown username also lists as empty)"
    ]


def test_deleted_and_hidden_comments_keep_their_earlier_wording(
    wh: Warehouse, tmp_path: Path, clock: VirtualClock, fake: FakeForem, thread: dict[str, Any]
) -> None:
    first, reply, _, second = thread["comments"]
    entry = forem_entry(id=thread["article"])
    ingest(wh, tmp_path, clock, entry)
    fake.delete_comment(first)  # it has replies: it keeps its place as [deleted]
    fake.hide_comment(second)
    result = ingest(wh, tmp_path, clock, entry)
    assert result.status == "ok"
    assert result.counts["forem"]["changed"] == 2
    assert result.counts["forem"]["gone"] == 0

    for code, text, state, placeholder in [
        (first, "I saw this too.", "deleted", "<p>[deleted]</p>"),
        (second, "Same here.", "hidden", "<p>[hidden by post author]</p>"),
    ]:
        revisions = history.history(wh, f"forem/comment/{code}")
        assert [r["attributes"] for r in revisions] == [{"state": "present"}, {"state": state}]
        original = body(wh, f"forem/comment/{code}", revision=1)
        assert original["body_html"] == f"<p>{text}</p>"
        assert original["user"]["username"] in ("bo", "cy")
        now = body(wh, f"forem/comment/{code}")
        assert (now["body_html"], now["user"]) == (placeholder, {})
        assert now["depth"] == 0
    # The reply under the deleted comment is untouched and still points at it.
    assert len(history.history(wh, f"forem/comment/{reply}")) == 1
    assert body(wh, f"forem/comment/{reply}")["parent_id_code"] == first


def test_a_vanished_comment_becomes_a_tombstone(
    wh: Warehouse, tmp_path: Path, clock: VirtualClock, fake: FakeForem, thread: dict[str, Any]
) -> None:
    _, _, deeper, _ = thread["comments"]
    entry = forem_entry(id=thread["article"])
    ingest(wh, tmp_path, clock, entry)
    fake.destroy_comment(deeper)
    result = ingest(wh, tmp_path, clock, entry)
    assert result.status == "ok"
    assert result.counts["forem"]["gone"] == 1
    assert result.left_corpus == [f"forem/comment/{deeper}"]
    revisions = history.history(wh, f"forem/comment/{deeper}")
    assert [(r["revision"], r["tombstone"]) for r in revisions] == [(1, False), (2, True)]
    assert body(wh, f"forem/comment/{deeper}", revision=1)["body_html"] == "<p>3.1, on Linux.</p>"
    again = ingest(wh, tmp_path, clock, entry)
    assert (again.counts["forem"]["gone"], again.counts["forem"]["changed"]) == (0, 0)


def test_volatile_churn_produces_no_revision_but_an_edit_does(
    wh: Warehouse, tmp_path: Path, clock: VirtualClock, fake: FakeForem, thread: dict[str, Any]
) -> None:
    entry = forem_entry(id=thread["article"])
    ingest(wh, tmp_path, clock, entry)
    before = revision_count(wh)
    snapshots = row_counts(wh, ["snapshots"])["snapshots"]
    fake.churn()
    result = ingest(wh, tmp_path, clock, entry)
    assert result.counts["forem"] == {
        "new": 0,
        "changed": 0,
        "unchanged": 5,
        "gone": 0,
        "restored": 0,
        "failed": 0,
    }
    assert revision_count(wh) == before
    assert row_counts(wh, ["snapshots"])["snapshots"] == snapshots

    fake.articles[thread["article"]].title = "On labels (updated)"
    fake.edit_comment(thread["comments"][3], "Same here, on 3.2 too.")
    edited = ingest(wh, tmp_path, clock, entry)
    assert edited.counts["forem"]["changed"] == 2
    assert body(wh, f"forem/article/{thread['article']}")["title"] == "On labels (updated)"


def test_a_tree_smaller_than_comments_count_is_a_lower_bound(
    wh: Warehouse, tmp_path: Path, clock: VirtualClock, fake: FakeForem, thread: dict[str, Any]
) -> None:
    _, _, deeper, _ = thread["comments"]
    entry = forem_entry(id=thread["article"])
    ingest(wh, tmp_path, clock, entry)
    fake.destroy_comment(deeper)
    fake.articles[thread["article"]].count_lag = 1  # the counter still says 4
    result = ingest(wh, tmp_path, clock, entry)
    assert result.status == "ok"
    assert result.counts["forem"]["gone"] == 0
    [warning] = result.warnings
    assert warning["source"] == "forem"
    assert warning["entry"] == f"forem article {thread['article']}"
    assert warning["warning"] == (
        f"article {thread['article']}: the comment tree holds 3 comments but the article "
        "reports comments_count 4; recorded as a lower bound, not as complete "
        "(no comment retired)"
    )
    assert [r["tombstone"] for r in history.history(wh, f"forem/comment/{deeper}")] == [False]
    assert result.left_corpus == []  # what a lower bound misses stays in the corpus
    ledger = history.runs(wh, limit=1)[0]
    assert ledger["warnings"] == result.warnings


def test_completeness_needs_a_comments_count_and_duplicates_count_once() -> None:
    ctx = FetchContext(http=HttpFactory(user_agent=USER_AGENT))
    tree = Fetched(
        url="https://dev.to/api/comments?a_id=1",
        value=[{"id_code": "a", "children": [{"id_code": "b"}]}, {"id_code": "a"}],
        provenance=Provenance(),
    )
    nodes = tree_nodes(tree, 1, ctx)
    assert [n.id_code for n in nodes] == ["a", "b"]
    assert ctx.warnings == ["article 1: comment a appears twice in the tree"]
    assert tree_is_complete({"id": 1, "comments_count": 2}, len(nodes), ctx)
    assert not tree_is_complete({"id": 1, "comments_count": 3}, len(nodes), ctx)
    for unknown in ({"id": 1}, {"id": 1, "comments_count": True}, {"id": 1, "comments_count": "2"}):
        ctx.warnings.clear()
        assert not tree_is_complete(unknown, len(nodes), ctx)
        assert ctx.warnings == [
            "article 1: no comments_count to check the tree against; its 2 comments are "
            "recorded as a lower bound, not as complete"
        ]


def test_429_is_retried_after_retry_after(
    wh: Warehouse, tmp_path: Path, clock: VirtualClock, fake: FakeForem, thread: dict[str, Any]
) -> None:
    fake.throttle(2, retry_after="7")
    result = ingest(wh, tmp_path, clock, forem_entry(id=thread["article"]))
    assert result.status == "ok", result.failures
    assert fake.throttled == 2
    assert clock.sleeps.count(7.0) == 2
    assert len(doc_ids(wh, "comment")) == 4


def test_a_429_that_persists_fails_the_entry_and_keeps_the_others(
    wh: Warehouse, tmp_path: Path, clock: VirtualClock, fake: FakeForem, thread: dict[str, Any]
) -> None:
    other = fake.add_article("bo", "other")
    fake.throttle(5, retry_after="1")  # the policy's default budget is 5 attempts
    result = ingest(wh, tmp_path, clock, forem_entry(id=thread["article"]), forem_entry(id=other))
    assert result.status == "failed"
    [failure] = result.failures
    assert failure["entry"] == f"forem article {thread['article']}"
    assert "HTTP 429" in failure["reason"] and "gave up after 5 attempts" in failure["reason"]
    assert doc_ids(wh, "article") == {f"forem/article/{other}"}


def test_reads_are_paced_under_the_published_limit(
    wh: Warehouse, tmp_path: Path, clock: VirtualClock, fake: FakeForem
) -> None:
    # Forem counts 3 reads per IP in fixed one-second windows; the fake answers 429 to a
    # fourth read sent within 1 s plus network jitter, as the real windows may see it. The
    # default pace stays below the limit, so it is never throttled.
    for i in range(4):
        article = fake.add_article("ana", f"post-{i}", published_at=f"2026-05-0{i + 1}T10:00:00Z")
        fake.add_comment(article, "hello", "bo")
    result = ingest(wh, tmp_path, clock, forem_entry(username="ana"))
    assert result.status == "ok"
    assert len(fake.requests) == 10  # 2 listing pages + 4 articles + 4 trees
    assert fake.throttled == 0


@pytest.mark.parametrize(("rate", "throttled"), [(10, True), (1, False)])
def test_the_pace_is_configurable_and_the_fake_notices_a_faster_one(
    wh: Warehouse,
    tmp_path: Path,
    clock: VirtualClock,
    fake: FakeForem,
    rate: float,
    throttled: bool,
) -> None:
    for i in range(4):
        fake.add_article("ana", f"post-{i}", published_at=f"2026-05-0{i + 1}T10:00:00Z")
    entry = forem_entry(username="ana", comments=False, reads_per_second=rate)
    result = ingest(wh, tmp_path, clock, entry)
    assert result.status == "ok"  # a faster pace recovers through Retry-After
    assert (fake.throttled > 0) is throttled
    if not throttled:
        # Requests arrive 1/rate apart on the clock the fake sees, give or take the time a
        # request spends between the client's pacing and the fake (how long the client
        # sleeps depends on how busy the machine is; the spacing must not).
        starts = fake.read_times
        assert len(starts) >= 4
        assert min(b - a for a, b in itertools.pairwise(starts)) >= 1 / rate - NETWORK_JITTER


def test_a_missing_article_fails_its_entry_only(
    wh: Warehouse, tmp_path: Path, clock: VirtualClock, fake: FakeForem, thread: dict[str, Any]
) -> None:
    result = ingest(
        wh,
        tmp_path,
        clock,
        forem_entry(url="https://dev.to/ana/no-such-post"),
        forem_entry(id=thread["article"]),
    )
    assert result.status == "failed"
    assert result.failures == [
        {
            "source": "forem",
            "entry": "forem article https://dev.to/ana/no-such-post",
            "reason": "forem: article /ana/no-such-post: not found "
            "(HTTP 404 for https://dev.to/api/articles/ana/no-such-post)",
        }
    ]
    assert result.counts["forem"]["failed"] == 1
    assert doc_ids(wh, "article") == {f"forem/article/{thread['article']}"}
    with pytest.raises(NotFound):
        history.history(wh, "forem/article/no-such-post")


def test_the_same_upstream_gives_the_same_bytes_in_another_warehouse(
    tmp_path: Path, clock: VirtualClock, fake: FakeForem, thread: dict[str, Any]
) -> None:
    hashes = []
    for name in ("one", "two"):
        directory = tmp_path / name
        directory.mkdir()
        with Warehouse.open(str(directory / "w.duckdb")) as wh:
            ingest(wh, directory, clock, forem_entry(id=thread["article"]))
            hashes.append([(r.doc_id, r.content_hash) for r in history.revisions(wh)])
        fake.churn()
    assert hashes[0] == hashes[1]
    assert len(hashes[0]) == 5


def test_the_api_key_goes_only_to_the_configured_instance(
    wh: Warehouse,
    tmp_path: Path,
    clock: VirtualClock,
    fake: FakeForem,
    thread: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret = "forem-test-key-0123456789"
    monkeypatch.setenv("FOREM_API_KEY", secret)
    other = fake.beside("https://community.example")
    theirs = other.add_article("zed", "elsewhere")
    result = ingest(
        wh,
        tmp_path,
        clock,
        forem_entry(id=thread["article"]),
        forem_entry(url="https://community.example/zed/elsewhere"),
    )
    assert result.status == "ok", result.failures
    assert set(fake.api_keys_seen) == {secret}
    assert set(other.api_keys_seen) == {None}
    assert f"forem/article/community.example/{theirs}" in doc_ids(wh, "article")
    for stored in integrity.iter_snapshots(wh):
        assert secret.encode() not in stored.body
    assert secret not in json.dumps(history.runs(wh))


def test_documents_of_another_instance_carry_its_host(
    wh: Warehouse, tmp_path: Path, clock: VirtualClock, fake: FakeForem, thread: dict[str, Any]
) -> None:
    other = fake.beside("https://community.example")
    theirs = other.add_article("zed", "elsewhere")  # the same numeric id as dev.to's article
    assert theirs == thread["article"]
    reply = other.add_comment(theirs, "hello from elsewhere", "zed")
    result = ingest(
        wh,
        tmp_path,
        clock,
        forem_entry(id=thread["article"]),
        forem_entry(id=theirs, base_url="https://community.example"),
    )
    assert result.status == "ok", result.failures
    assert doc_ids(wh, "article") == {
        f"forem/article/{theirs}",
        f"forem/article/community.example/{theirs}",
    }
    assert f"forem/comment/community.example/{reply}" in doc_ids(wh, "comment")
    revs = history.history(wh, f"forem/comment/community.example/{reply}")
    assert revs[0]["scope"] == f"forem:community.example:article:{theirs}:comments"
    assert body(wh, f"forem/article/community.example/{theirs}")["url"].startswith(
        "https://community.example/"
    )


def test_a_mirror_in_the_environment_keeps_the_doc_ids(
    wh: Warehouse,
    tmp_path: Path,
    clock: VirtualClock,
    fake: FakeForem,
    thread: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mirror = fake.beside("https://mirror.example")
    article = mirror.add_article("ana", "on-labels-2gc3")
    monkeypatch.setenv("RECEIPTS_FOREM_URL", "https://mirror.example")
    result = ingest(wh, tmp_path, clock, forem_entry(url="https://dev.to/ana/on-labels-2gc3"))
    assert result.status == "ok", result.failures
    assert doc_ids(wh, "article") == {f"forem/article/{article}"}
    assert fake.requests == []
    assert history.history(wh, f"forem/article/{article}")[0]["provenance"]["url"] == (
        "https://mirror.example/api/articles/ana/on-labels-2gc3"
    )


# -- curation ------------------------------------------------------------------------------
def curation_input(wh: Warehouse, doc: str) -> CurationInput:
    current = history.history(wh, doc)[-1]
    kind, _ = default_identity(doc)
    return CurationInput(
        doc_id=doc,
        kind=kind,
        revision=current["revision"],
        content_hash=current["content_hash"],
        media_type="application/json",
        body=history.snapshot(wh, doc).body,
        scope=current["scope"],
        provenance=current["provenance"],
        attributes=current["attributes"],
        sanity_id_of=lambda other: sanity_id("foremTest", *default_identity(other)),
    )


def curate(item: CurationInput) -> Curated:
    """Curate through the registry, as the publishing step does."""
    hook = SOURCES["forem"].curate
    assert hook is not None
    return hook(item, [])


def test_curated_article_and_comments_reference_their_article_and_parent(
    wh: Warehouse, tmp_path: Path, clock: VirtualClock, fake: FakeForem, thread: dict[str, Any]
) -> None:
    first, reply, _, _ = thread["comments"]
    article_id = thread["article"]
    ingest(wh, tmp_path, clock, forem_entry(id=article_id))
    fake.delete_comment(first)
    ingest(wh, tmp_path, clock, forem_entry(id=article_id))

    article = curate(curation_input(wh, f"forem/article/{article_id}"))
    assert article.type == "article"
    assert article.fields == {
        "articleId": article_id,
        "title": "On labels",
        "description": "One label, three failures.",
        "url": "https://dev.to/ana/on-labels-2gc3",
        "canonicalUrl": "https://dev.to/ana/on-labels-2gc3",
        "authorUsername": "ana",
        "publishedAt": "2026-05-01T10:00:00Z",
        "tags": ["testing"],
        "bodyHtml": "<p>One label, three failures.</p>",
        "bodyMarkdown": "One label, three failures.",
    }

    curated_reply = curate(curation_input(wh, f"forem/comment/{reply}"))
    assert curated_reply.type == "comment"
    assert curated_reply.fields == {
        "idCode": reply,
        "article": {
            "_type": "reference",
            "_ref": f"foremTest.article.{article_id}",
            "_weak": True,
        },
        "parent": {"_type": "reference", "_ref": f"foremTest.comment.{first}", "_weak": True},
        "depth": 1,
        "authorUsername": "ana",
        "createdAt": "2026-05-02T10:00:00Z",
        "bodyHtml": "<p>Which version?</p>",
        "state": "present",
    }

    deleted = curate(curation_input(wh, f"forem/comment/{first}"))
    assert deleted.fields["state"] == "deleted"
    assert "parent" not in deleted.fields and "authorUsername" not in deleted.fields
    assert deleted.fields["bodyHtml"] == "<p>[deleted]</p>"


def test_curated_references_stay_on_the_comments_instance(
    wh: Warehouse, tmp_path: Path, clock: VirtualClock, fake: FakeForem
) -> None:
    other = fake.beside("https://community.example")
    article = other.add_article("zed", "elsewhere")
    top = other.add_comment(article, "top", "zed")
    reply = other.add_comment(article, "reply", "ana", parent=top)
    ingest(wh, tmp_path, clock, forem_entry(url="https://community.example/zed/elsewhere"))
    doc = f"forem/comment/community.example/{reply}"
    fields = curate(curation_input(wh, doc)).fields
    assert fields["article"]["_ref"] == sanity_id(
        "foremTest", "article", f"community.example/{article}"
    )
    assert fields["parent"]["_ref"] == sanity_id("foremTest", "comment", f"community.example/{top}")


def test_curation_refuses_a_kind_it_does_not_know(wh: Warehouse) -> None:
    item = CurationInput(
        doc_id="forem/user/ana",
        kind="user",
        revision=1,
        content_hash="0" * 64,
        media_type="application/json",
        body=b"{}",
        scope="forem:user:ana",
        provenance={},
        attributes=None,
        sanity_id_of=lambda other: other,
    )
    with pytest.raises(SourceError, match="no curation for documents of kind 'user'"):
        curate(item)
