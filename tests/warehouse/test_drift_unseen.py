"""A document missing from a listing that is not provably complete: not tombstoned, but
reported as *unseen since run N* by ``drift`` (every format) and by ``refresh``.

A Forem comment tree smaller than its article's ``comments_count`` is such a listing: the
comment someone quoted can vanish from it without a tombstone, and must not vanish without
a word."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fakes.forem import FakeForem, forem_entry
from tests.conftest import cli, write_manifest

CORPUS = '[corpus]\nname = "unseen"\nnamespace = "unseenTest"\n'
FAST = {"reads_per_second": 1000}


@pytest.fixture
def thread(fake_forem: FakeForem) -> dict[str, Any]:
    article = fake_forem.add_article(
        "ana", "on-labels-2gc3", "On labels", "One label, three failures."
    )
    first = fake_forem.add_comment(article, "I saw this too.", "bo")
    quoted = fake_forem.add_comment(article, "It fails on empty input.", "cy")
    third = fake_forem.add_comment(article, "Same here.", "dee")
    return {"article": article, "comments": [first, quoted, third]}


def manifest(tmp_path: Path, thread: dict[str, Any], *extra: str) -> Path:
    return write_manifest(
        tmp_path, CORPUS + forem_entry(id=thread["article"], **FAST) + "".join(extra)
    )


def ingest(path: Path, warehouse: Path, *args: str) -> None:
    result = cli("ingest", path, "--warehouse", warehouse, *args)
    assert result.exit_code in (0, 1), result.output


def drift_json(warehouse: Path, *args: Any) -> dict[str, Any]:
    result = cli("drift", *args, "--warehouse", warehouse, "--json")
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.output)
    return report


def vanish_behind_a_stale_count(fake_forem: FakeForem, thread: dict[str, Any]) -> str:
    """The quoted comment disappears; the article's counter still counts it, so the smaller
    tree is only a lower bound and retires nothing."""
    quoted: str = thread["comments"][1]
    fake_forem.destroy_comment(quoted)
    fake_forem.articles[thread["article"]].count_lag = 1
    return f"forem/comment/{quoted}"


def test_a_comment_missing_from_a_lower_bound_tree_is_reported_unseen(
    tmp_path: Path, warehouse_path: Path, fake_forem: FakeForem, thread: dict[str, Any]
) -> None:
    path = manifest(tmp_path, thread)
    ingest(path, warehouse_path)  # run 1: the whole tree
    doc = vanish_behind_a_stale_count(fake_forem, thread)
    ingest(path, warehouse_path)  # run 2: a lower bound without it

    report = drift_json(warehouse_path, path)
    assert report["totals"]["gone"] == 0  # not tombstoned, not confirmed gone
    assert report["drift_found"] is True
    [unseen] = report["unseen"]
    assert unseen["doc_id"] == doc
    assert (unseen["last_seen_run"], unseen["missed_run"], unseen["revision"]) == (1, 2, 1)
    assert unseen["scope"] == f"forem:article:{thread['article']}:comments"
    # without a MANIFEST too, each naming its corpus
    everything = drift_json(warehouse_path)["unseen"]
    assert everything == [{**u, "corpora": ["unseen"]} for u in report["unseen"]]

    text = cli("drift", path, "--warehouse", warehouse_path)
    assert text.exit_code == 0, text.output
    assert f"UNSEEN    {doc}" in text.output
    assert "unseen since run 1: revision 1" in text.output
    assert "1 unseen: not in the latest listing of their scope." in text.output
    for fmt in ("md", "html"):
        rendered = cli("drift", path, "--warehouse", warehouse_path, "--format", fmt).output
        assert doc in rendered and "unseen since run 1" in rendered, fmt
    failing = cli("drift", path, "--warehouse", warehouse_path, "--fail-on-drift")
    assert failing.exit_code == 3

    # Still missing a run later: unseen since the run that last saw it, not since run 2.
    ingest(path, warehouse_path)
    [again] = drift_json(warehouse_path, path)["unseen"]
    assert (again["last_seen_run"], again["missed_run"]) == (1, 3)

    # Back in the tree: seen again, nothing unseen, and the key is absent as before.
    fake_forem.articles[thread["article"]].count_lag = 0
    fake_forem.add_comment(thread["article"], "A new reply.", "eve")
    ingest(path, warehouse_path)
    assert "unseen" not in drift_json(warehouse_path, path)


def test_a_failed_entry_or_only_makes_nothing_unseen(
    tmp_path: Path, warehouse_path: Path, fake_forem: FakeForem, thread: dict[str, Any]
) -> None:
    other = fake_forem.add_article("bo", "second-1abc", "Second", "Another article.")
    fake_forem.add_comment(other, "First!", "cy")
    path = manifest(tmp_path, thread, forem_entry(id=other, **FAST))
    ingest(path, warehouse_path)
    # The first article's entry fails this run: its comments were not listed at all.
    fake_forem.articles.pop(thread["article"])
    ingest(path, warehouse_path)
    assert "unseen" not in drift_json(warehouse_path, path)
    # A run that leaves the source out lists nothing of it.
    ingest(path, warehouse_path, "--only", "nhtsa")
    assert "unseen" not in drift_json(warehouse_path, path)


def test_refresh_prints_unseen_documents(
    tmp_path: Path, warehouse_path: Path, fake_forem: FakeForem, thread: dict[str, Any]
) -> None:
    path = manifest(tmp_path, thread)
    out = tmp_path / "out.ndjson"
    first = cli("refresh", path, "--warehouse", warehouse_path, "--out", out)
    assert first.exit_code == 0, first.output
    doc = vanish_behind_a_stale_count(fake_forem, thread)
    second = cli("refresh", path, "--warehouse", warehouse_path, "--out", out)
    assert second.exit_code == 0, second.output
    assert f"  unseen   {doc}: unseen since run 1 (revision 1;" in second.output
    as_json = cli("refresh", path, "--warehouse", warehouse_path, "--out", out, "--json")
    summary = json.loads(as_json.output)["drift"]
    assert [(u["doc_id"], u["last_seen_run"]) for u in summary["unseen"]] == [(doc, 1)]
    assert summary["found"] is True


def test_a_claim_on_an_unseen_comment_is_unseen_not_holding(
    tmp_path: Path, warehouse_path: Path, fake_forem: FakeForem, thread: dict[str, Any]
) -> None:
    path = manifest(tmp_path, thread)
    ingest(path, warehouse_path)
    claims = tmp_path / "claims.ndjson"
    doc = f"forem/comment/{thread['comments'][1]}"
    claim = {"claim_id": "c1", "doc_id": doc, "quote": "It fails on empty input.", "revision": 1}
    claims.write_text(json.dumps(claim) + "\n")

    def status() -> str:
        result = cli("verify-claims", "--file", claims, "--warehouse", warehouse_path, "--json")
        return str(json.loads(result.stdout)["claims"][0]["status"])

    assert status() == "holds"
    vanish_behind_a_stale_count(fake_forem, thread)
    ingest(path, warehouse_path)
    assert status() == "unseen"  # the same definition as the drift report's
    fake_forem.articles[thread["article"]].count_lag = 0
    ingest(path, warehouse_path)  # now a complete tree without it: tombstoned
    assert status() == "gone"
