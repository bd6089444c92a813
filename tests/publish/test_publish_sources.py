"""The real sources through publishing: pinned GitHub files and a dev.to comment thread,
ingested from their fakes and pushed to the fake Content Lake, as a user runs it."""

from __future__ import annotations

import json
from pathlib import Path

from fakes.forem import FakeForem, forem_entry
from fakes.github import FakeGitHub, manifest_toml
from fakes.node_lake import NodeLake
from tests.conftest import cli, write_manifest

REPO_NAME = "octo/hyphae"
FILES = {"README.md": b"# Hyphae\n\nNotes.\n", "docs/claims.md": b"Every claim cites.\n"}


def test_github_files_and_a_forem_thread_are_published_with_references(
    tmp_path: Path,
    warehouse_path: Path,
    upstreams: tuple[FakeGitHub, FakeForem, NodeLake],
) -> None:
    github, forem, lake = upstreams
    sha = github.push(REPO_NAME, FILES)
    article = forem.add_article("ana", "on-labels-2gc3", "On labels", "One label, three failures.")
    first = forem.add_comment(article, "I saw this too.", "bo")
    reply = forem.add_comment(article, "Which version?", "ana", parent=first)
    text = manifest_toml(REPO_NAME, sha, {"README.md": "markdown", "docs/claims.md": "markdown"})
    text += forem_entry(id=article, reads_per_second=1000)
    manifest = write_manifest(tmp_path, text)
    assert cli("ingest", manifest, "--warehouse", warehouse_path).exit_code == 0

    result = cli("publish", manifest, "--warehouse", warehouse_path, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["plan"]["create"] == 5 and report["receipt"]["touched_by_us"] == 0
    documents = {k: v for k, v in lake.documents.items() if k.startswith("atlas.")}
    types = sorted(d["_type"] for d in documents.values())
    assert types == ["article", "comment", "comment", "sourceDocument", "sourceDocument"]
    readme = next(d for d in documents.values() if d.get("path") == "README.md")
    assert readme["commit"] == sha and readme["provenance"]["sourceCommit"] == sha
    assert readme["provenance"]["contentHash"] == readme["sha256"]
    comments = {d["idCode"]: d for d in documents.values() if d["_type"] == "comment"}
    assert (
        comments[reply]["parent"]["_ref"]
        == lake.documents[comments[reply]["parent"]["_ref"]]["_id"]
    )
    assert comments[first]["article"]["_ref"] in documents

    forem.edit_comment(reply, "Which version? (edited)")
    assert cli("ingest", manifest, "--warehouse", warehouse_path).exit_code == 0
    sent = lake.mutations_sent()
    again = json.loads(cli("publish", manifest, "--warehouse", warehouse_path, "--json").stdout)
    assert again["plan"]["update"] == 1 and again["plan"]["unchanged"] == 4
    assert lake.mutations_sent() - sent == 1
