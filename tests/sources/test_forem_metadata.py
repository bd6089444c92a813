"""A Forem author editing their profile, or the API adding a field, is a metadata change:
kept as served, listed apart, not drift.

Evidence: Forem's v1 API renders the author's profile inside every article and comment
(forem/forem ``app/views/api/v1/shared/_user.json.jbuilder``: name, username,
twitter_username, github_username, user_id, website_url, profile_image, profile_image_90;
``comments/_comment.json.jbuilder`` renders it for every comment that is not deleted or
hidden), so one profile edit changes the record of every comment of that user. The API
added ``subforem_id`` and ``ai_disclosure_level``/``ai_disclosure_label`` to articles
(``articles/_article.json.jbuilder``) and the disclosure pair to comments (reference §3.4,
§6): their appearance is not an edit.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from fakes.forem import FakeForem, forem_entry
from tests.conftest import cli, write_manifest
from warehouse.changes import classify

CORPUS = '[corpus]\nname = "forem-meta"\nnamespace = "foremMeta"\n'
CLAIMS = '\n[claims]\nfile = "claims.ndjson"\n'


@pytest.fixture
def thread(fake_forem: FakeForem) -> dict[str, Any]:
    article = fake_forem.add_article("ana", "on-labels-2gc3", "On labels", "One label.")
    bo_first = fake_forem.add_comment(article, "I saw this too.", "bo")
    reply = fake_forem.add_comment(article, "Which version?", "ana", parent=bo_first)
    bo_second = fake_forem.add_comment(article, "It fails on empty input.", "bo")
    return {"article": article, "bo": [bo_first, bo_second], "ana": [reply]}


def _setup(tmp_path: Path, thread: dict[str, Any]) -> Path:
    """The thread's manifest, with a claim quoting bo's second comment at revision 1."""
    claim = {
        "claim_id": "bo-empty",
        "doc_id": f"forem/comment/{thread['bo'][1]}",
        "quote": "It fails on empty input.",
        "revision": 1,
    }
    (tmp_path / "claims.ndjson").write_text(json.dumps(claim) + "\n")
    entry = forem_entry(id=thread["article"], reads_per_second=1000)
    return write_manifest(tmp_path, CORPUS + entry + CLAIMS)


def refresh(manifest: Path, warehouse: Path, *args: str) -> tuple[int, dict[str, Any]]:
    out = manifest.parent / "out.ndjson"
    result = cli("refresh", manifest, "--warehouse", warehouse, "--out", out, "--json", *args)
    return result.exit_code, json.loads(result.stdout)


def test_a_renamed_user_is_a_metadata_change_not_drift(
    tmp_path: Path, warehouse_path: Path, fake_forem: FakeForem, thread: dict[str, Any]
) -> None:
    manifest = _setup(tmp_path, thread)
    code, day1 = refresh(manifest, warehouse_path)
    assert code == 0, day1
    assert day1["claims"]["counts"]["holds"] == 1

    fake_forem.edit_profile("bo", name="Bo Renamed", website_url="https://bo.example")
    code, day2 = refresh(manifest, warehouse_path, "--fail-on-drift")
    assert code == 0, day2
    drift = day2["drift"]
    assert drift["found"] is False
    assert drift["counts"]["forem"]["changed"] == 0
    assert drift["documents"] == []
    assert drift["metadata_counts"] == {"forem": 2}
    listed = {d["doc_id"]: d for d in drift["metadata_documents"]}
    assert sorted(listed) == sorted(f"forem/comment/{c}" for c in thread["bo"])
    for doc in listed.values():
        assert (doc["old_revision"], doc["new_revision"]) == (1, 2)  # the bytes are kept
        assert doc["change"] == {
            "kind": "metadata",
            "content_fields": [],
            "metadata_fields": ["user.name", "user.website_url"],
        }
    assert day2["claims"]["changed"] == []
    assert day2["claims"]["counts"]["holds"] == 1

    # the new revision holds the profile as served
    doc = f"forem/comment/{thread['bo'][0]}"
    shown = cli("show", doc, "--warehouse", warehouse_path, "--revision", "2")
    assert shown.exit_code == 0, shown.output
    assert '"name":"Bo Renamed"' in shown.output

    # a real edit is still drift, and the row says which content field changed
    fake_forem.edit_comment(thread["bo"][1], "It fails on empty input and on None.")
    code, day3 = refresh(manifest, warehouse_path, "--fail-on-drift")
    assert code == 3, day3
    drift = day3["drift"]
    assert drift["counts"]["forem"]["changed"] == 1
    assert drift["metadata_counts"] == {}
    [changed] = drift["documents"]
    assert changed["doc_id"] == f"forem/comment/{thread['bo'][1]}"
    assert changed["change"]["kind"] == "content"
    assert changed["change"]["content_fields"] == ["body_html"]
    assert [c["claim_id"] for c in day3["claims"]["changed"]] == ["bo-empty"]


def test_the_drift_report_lists_metadata_changes_apart(
    tmp_path: Path, warehouse_path: Path, fake_forem: FakeForem, thread: dict[str, Any]
) -> None:
    manifest = _setup(tmp_path, thread)
    assert refresh(manifest, warehouse_path)[0] == 0
    fake_forem.edit_profile("bo", name="Bo Renamed")
    assert refresh(manifest, warehouse_path)[0] == 0

    result = cli("drift", manifest, "--warehouse", warehouse_path, "--fail-on-drift")
    assert result.exit_code == 0, result.output
    text = result.output
    assert "No drift: all 2 documents unchanged. 2 documents changed in metadata only" in text
    assert "drifted documents" not in text
    section = text[text.index("metadata-only changes (2)") :]
    for code in thread["bo"]:
        assert f"METADATA  forem/comment/{code}" in section
    assert 'user.name changed: "Bo" → "Bo Renamed"' in section

    report = json.loads(cli("drift", manifest, "--warehouse", warehouse_path, "--json").output)
    assert report["drift_found"] is False
    assert report["documents"] == []
    assert report["metadata_changes"]["counts"] == {"forem": 2}
    docs = report["metadata_changes"]["documents"]
    assert [d["change"]["metadata_fields"] for d in docs] == [["user.name"], ["user.name"]]

    md = cli("drift", manifest, "--warehouse", warehouse_path, "--format", "md").output
    assert "## Metadata-only changes (2)" in md
    assert f"### metadata: `forem/comment/{thread['bo'][0]}`" in md
    html = cli("drift", manifest, "--warehouse", warehouse_path, "--format", "html").output
    assert '<section id="metadata"><h2>Metadata-only changes (2)</h2>' in html
    assert "Bo Renamed" in html

    limited = cli("drift", "--warehouse", warehouse_path, "--limit", "1").output
    assert f"METADATA  forem/comment/{thread['bo'][0]} (corpus forem-meta)" in limited
    assert "… and 1 more metadata-only changes (raise --limit)" in limited

    text = cli("refresh", manifest, "--warehouse", warehouse_path).output
    assert "drift since run 2: none" in text


def test_the_api_adding_a_field_to_every_comment_is_not_drift(
    tmp_path: Path, warehouse_path: Path, fake_forem: FakeForem, thread: dict[str, Any]
) -> None:
    manifest = _setup(tmp_path, thread)
    assert refresh(manifest, warehouse_path)[0] == 0
    fake_forem.comment_ai_disclosure = True
    code, result = refresh(manifest, warehouse_path, "--fail-on-drift")
    assert code == 0, result
    drift = result["drift"]
    assert drift["metadata_counts"] == {"forem": 3}
    fields = {tuple(d["change"]["metadata_fields"]) for d in drift["metadata_documents"]}
    assert fields == {("ai_disclosure_label", "ai_disclosure_level")}

    text = cli("refresh", manifest, "--warehouse", warehouse_path, "--out", tmp_path / "o.ndjson")
    assert text.exit_code == 0, text.output


def test_the_refresh_text_lists_metadata_changes_apart(
    tmp_path: Path, warehouse_path: Path, fake_forem: FakeForem, thread: dict[str, Any]
) -> None:
    manifest = _setup(tmp_path, thread)
    out = tmp_path / "o.ndjson"
    assert cli("refresh", manifest, "--warehouse", warehouse_path, "--out", out).exit_code == 0
    fake_forem.edit_profile("ana", twitter_username="ana_tw")
    result = cli(
        "refresh", manifest, "--warehouse", warehouse_path, "--out", out, "--fail-on-drift"
    )
    assert result.exit_code == 0, result.output
    assert "drift since run 1: none" in result.output
    assert "changed in metadata only (not drift): forem 2" in result.output
    article_doc = f"forem/article/{thread['article']}"
    assert f"metadata {article_doc}: revision 1 → revision 2" in result.output
    assert "user.twitter_username" in result.output


@pytest.mark.parametrize(
    ("old", "new", "kind", "content", "metadata"),
    [
        ({"user": {"name": "A"}}, {"user": {"name": "B"}}, "metadata", [], ["user.name"]),
        ({"user": {"name": "A"}}, {"user": {}}, "metadata", [], ["user.name"]),
        ({"a": 1}, {"a": 1, "subforem_id": 2}, "metadata", [], ["subforem_id"]),
        ({"a": 1}, {"a": 1, "new_field": 2}, "content", ["new_field"], []),
        (
            {"body_html": "<p>x</p>", "user": {"name": "A"}},
            {"body_html": "<p>y</p>", "user": {"name": "B"}},
            "content",
            ["body_html"],
            ["user.name"],
        ),
        ({"tags": ["a"]}, {"tags": ["a", "b"]}, "content", ["tags"], []),
        ({"users": 1}, {"users": 2}, "content", ["users"], []),
    ],
)
def test_classify(
    old: dict[str, Any], new: dict[str, Any], kind: str, content: list[str], metadata: list[str]
) -> None:
    patterns = ("user", "organization", "subforem_id", "ai_disclosure_*")
    change = classify(orjson.dumps(old), orjson.dumps(new), patterns)
    assert (change.kind, list(change.content_paths), list(change.metadata_paths)) == (
        kind,
        content,
        metadata,
    )
