"""``receipts verify --upstream [MANIFEST]``: re-download pinned files, compare digests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fakes.github import FakeGitHub, manifest_toml
from tests.conftest import cli, write_manifest
from warehouse.canonical import content_hash

REPO_NAME = "octo/hyphae"
FILES = {"a.md": b"a", "docs/b.json": b'{"b": 1}'}
FORMATS = {"a.md": "markdown", "docs/b.json": "json"}


@pytest.fixture
def ingested(github: FakeGitHub, tmp_path: Path, warehouse_path: Path) -> tuple[Path, str]:
    sha = github.push(REPO_NAME, FILES)
    manifest = write_manifest(tmp_path, manifest_toml(REPO_NAME, sha, FORMATS))
    assert cli("ingest", manifest, "--warehouse", warehouse_path).exit_code == 0
    return manifest, sha


def verify(warehouse: Path, *upstream: Path) -> tuple[int, dict[str, Any]]:
    result = cli("verify", "--warehouse", warehouse, "--json", "--upstream", *upstream)
    return result.exit_code, json.loads(result.stdout)


def test_verify_upstream_passes_when_every_pinned_file_matches(
    github: FakeGitHub, ingested: tuple[Path, str], warehouse_path: Path
) -> None:
    manifest, _ = ingested
    before = len(github.raw_requests)

    code, payload = verify(warehouse_path, manifest)

    assert code == 0, payload
    assert payload["upstream"] == {"checked": 2, "matched": 2, "failures": []}
    assert payload["mismatches"] == []
    assert len(github.raw_requests) == before + 2
    text = cli("verify", "--warehouse", warehouse_path, "--upstream", manifest).stdout
    assert "re-downloaded 2 pinned files: 2 match, 0 do not" in text


def test_verify_upstream_fails_with_a_table_when_bytes_differ(
    github: FakeGitHub, ingested: tuple[Path, str], warehouse_path: Path
) -> None:
    manifest, sha = ingested
    github.rewrite(REPO_NAME, sha, "a.md", b"a, quietly edited")

    result = cli("verify", "--warehouse", warehouse_path, "--upstream", manifest)

    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert "re-downloaded 2 pinned files: 1 match, 1 do not" in lines
    header = lines.index(next(line for line in lines if line.startswith("status")))
    assert lines[header].split() == ["status", "doc_id", "commit", "stored", "upstream", "detail"]
    assert lines[header + 1].split() == [
        "mismatch",
        f"github/{REPO_NAME}/a.md",
        sha[:12],
        content_hash(b"a")[:12],
        content_hash(b"a, quietly edited")[:12],
    ]


def test_verify_upstream_reports_files_missing_upstream_or_never_stored(
    github: FakeGitHub, ingested: tuple[Path, str], tmp_path: Path, warehouse_path: Path
) -> None:
    _, sha = ingested
    del github.repos[REPO_NAME].commits[sha].tree["a.md"]
    github.rewrite(REPO_NAME, sha, "c.md", b"c")
    wider = write_manifest(
        tmp_path, manifest_toml(REPO_NAME, sha, {**FORMATS, "c.md": "markdown"}), "wider.toml"
    )

    code, payload = verify(warehouse_path, wider)

    assert code == 1
    assert {(f["path"], f["status"]) for f in payload["upstream"]["failures"]} == {
        ("a.md", "missing upstream"),
        ("c.md", "not stored"),
    }


def test_verify_upstream_without_a_manifest_checks_every_stored_file_at_its_last_pin(
    github: FakeGitHub, ingested: tuple[Path, str], tmp_path: Path, warehouse_path: Path
) -> None:
    manifest, first = ingested
    second = github.push(REPO_NAME, {"unrelated.txt": b"x"})
    write_manifest(tmp_path, manifest_toml(REPO_NAME, second, FORMATS))
    assert cli("ingest", manifest, "--warehouse", warehouse_path).exit_code == 0
    github.rewrite(REPO_NAME, first, "a.md", b"only the old commit changed")
    before = len(github.raw_requests)

    code, payload = verify(warehouse_path)

    assert code == 0, payload
    assert payload["upstream"]["checked"] == 2
    assert sorted(r.url.path for r in github.raw_requests[before:]) == [
        f"/{REPO_NAME}/{second}/a.md",
        f"/{REPO_NAME}/{second}/docs/b.json",
    ]

    github.rewrite(REPO_NAME, second, "docs/b.json", b"{}")
    code, payload = verify(warehouse_path)
    assert code == 1
    [failure] = payload["upstream"]["failures"]
    assert (failure["doc_id"], failure["commit"]) == (f"github/{REPO_NAME}/docs/b.json", second)


def test_verify_without_upstream_makes_no_request(
    github: FakeGitHub, ingested: tuple[Path, str], warehouse_path: Path
) -> None:
    before = len(github.requests)
    result = cli("verify", "--warehouse", warehouse_path, "--json")
    assert result.exit_code == 0
    assert "upstream" not in json.loads(result.stdout)
    assert len(github.requests) == before
