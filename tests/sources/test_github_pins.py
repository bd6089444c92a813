"""``receipts pin``: resolve a ref through the commits API and rewrite only the commit."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from fakes.github import FakeGitHub, manifest_toml
from pipelines.manifest import load_manifest
from sources.github.pins import commit_sha_of
from tests.conftest import cli, write_manifest

REPO_NAME = "octo/hyphae"


def test_pin_writes_the_commit_and_keeps_everything_else(
    github: FakeGitHub, tmp_path: Path
) -> None:
    old = github.push(REPO_NAME, {"a.md": b"1"})
    new = github.push(REPO_NAME, {"a.md": b"2"})
    text = manifest_toml(REPO_NAME, old, {"a.md": "markdown"}) + "# trailing comment\n"
    manifest = write_manifest(tmp_path, text)

    result = cli("pin", manifest)

    assert result.exit_code == 0, result.output
    assert manifest.read_text() == text.replace(old, new)
    assert f"re-pinned 1 of 1 entries at main\n  {REPO_NAME}: {old} -> {new}" in result.stdout
    assert load_manifest(manifest).entries["github"][0].commit == new


def test_pin_turns_a_branch_name_into_its_commit(github: FakeGitHub, tmp_path: Path) -> None:
    sha = github.push(REPO_NAME, {"a.md": b"1"}, branch="develop")
    text = manifest_toml(REPO_NAME, "develop", {"a.md": "markdown"})
    manifest = write_manifest(tmp_path, text)
    assert cli("manifest", "check", manifest).exit_code == 2

    result = cli("pin", manifest, "--ref", "develop")

    assert result.exit_code == 0, result.output
    assert manifest.read_text() == text.replace('"develop"', f'"{sha}"')
    assert cli("manifest", "check", manifest).exit_code == 0


def test_pin_at_a_tag_keeps_crlf_line_endings(github: FakeGitHub, tmp_path: Path) -> None:
    tagged = github.push(REPO_NAME, {"a.md": b"1"})
    github.tag(REPO_NAME, "v3.0.0", tagged)
    head = github.push(REPO_NAME, {"a.md": b"2"})
    text = manifest_toml(REPO_NAME, head, {"a.md": "markdown"}).replace("\n", "\r\n")
    manifest = tmp_path / "m.toml"
    manifest.write_bytes(text.encode())

    assert cli("pin", manifest, "--ref", "v3.0.0").exit_code == 0
    assert manifest.read_bytes() == text.replace(head, tagged).encode()


def test_pin_already_at_the_ref_leaves_the_file_alone(github: FakeGitHub, tmp_path: Path) -> None:
    sha = github.push(REPO_NAME, {"a.md": b"1"})
    manifest = write_manifest(tmp_path, manifest_toml(REPO_NAME, sha, {"a.md": "markdown"}))
    before = manifest.stat().st_mtime_ns

    result = cli("pin", manifest, "--json")

    assert result.exit_code == 0
    payload = json.loads(result.stdout)
    assert payload["written"] is False
    assert payload["entries"] == [
        {"entry": 1, "repo": REPO_NAME, "ref": "main", "old": sha, "new": sha, "changed": False}
    ]
    assert manifest.stat().st_mtime_ns == before


def test_dry_run_prints_the_change_and_writes_nothing(github: FakeGitHub, tmp_path: Path) -> None:
    old = github.push(REPO_NAME, {"a.md": b"1"})
    new = github.push(REPO_NAME, {"a.md": b"2"})
    text = manifest_toml(REPO_NAME, old, {"a.md": "markdown"})
    manifest = write_manifest(tmp_path, text)

    result = cli("pin", manifest, "--dry-run")

    assert result.exit_code == 0
    assert f"would re-pin 1 of 1 entries at main\n  {REPO_NAME}: {old} -> {new}" in result.stdout
    assert manifest.read_text() == text


def test_pin_only_the_named_repository(github: FakeGitHub, tmp_path: Path) -> None:
    a_old = github.push("octo/a", {"x.md": b"1"})
    a_new = github.push("octo/a", {"x.md": b"2"})
    b_old = github.push("octo/b", {"x.md": b"1"}, branch="master")
    text = manifest_toml("octo/a", a_old, {"x.md": "markdown"}) + (
        f'\n[[github]]\nrepo = "octo/b"\ncommit = "{b_old}"\n'
        '[[github.files]]\npath = "x.md"\nkind = "k"\nformat = "markdown"\nlifecycle = "draft"\n'
    )
    manifest = write_manifest(tmp_path, text)

    everything = cli("pin", manifest)  # octo/b has no main branch
    assert everything.exit_code == 1
    assert "octo/b: no commit for ref 'main' (HTTP 422: No commit found for SHA: main)" in (
        everything.stderr
    )
    assert manifest.read_text() == text

    result = cli("pin", manifest, "--repo", "octo/a")
    assert result.exit_code == 0, result.output
    assert manifest.read_text() == text.replace(a_old, a_new)

    missing = cli("pin", manifest, "--repo", "octo/c")
    assert missing.exit_code == 2 and "no [[github]] entry for octo/c" in missing.stderr


def test_pin_reports_an_unknown_repository(github: FakeGitHub, tmp_path: Path) -> None:
    text = manifest_toml("octo/nowhere", "main", {"a.md": "markdown"})
    manifest = write_manifest(tmp_path, text)
    result = cli("pin", manifest)
    assert result.exit_code == 1
    assert "octo/nowhere: no commit for ref 'main' (HTTP 404: Not Found)" in result.stderr
    assert manifest.read_text() == text


def test_pin_refuses_to_write_an_entry_that_stays_invalid(
    github: FakeGitHub, tmp_path: Path
) -> None:
    github.push(REPO_NAME, {"a.md": b"1"})
    text = manifest_toml(REPO_NAME, "main", {"../a.md": "markdown"})
    manifest = write_manifest(tmp_path, text)
    result = cli("pin", manifest)
    assert result.exit_code == 2
    assert "would still be invalid after pinning, field 'files.0.path'" in result.stderr
    assert manifest.read_text() == text


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ('[corpus]\nname = "x"\nnamespace = "x"\n', "declares no [[github]] entries"),
        ("[corpus", "not valid TOML"),
    ],
)
def test_pin_refuses_a_manifest_without_entries(tmp_path: Path, body: str, problem: str) -> None:
    result = cli("pin", write_manifest(tmp_path, body))
    assert result.exit_code == 2 and problem in result.stderr
    assert cli("pin", tmp_path / "none.toml").exit_code == 2


def test_commit_sha_of_reads_both_answer_shapes() -> None:
    sha = "0123456789abcdef0123456789abcdef01234567"
    request = httpx.Request("GET", "https://api.github.com/repos/o/r/commits/main")
    assert commit_sha_of(httpx.Response(200, content=sha.encode() + b"\n", request=request)) == sha
    assert commit_sha_of(httpx.Response(200, json={"sha": sha.upper()}, request=request)) == sha
    assert commit_sha_of(httpx.Response(200, json={"sha": "main"}, request=request)) is None
    assert commit_sha_of(httpx.Response(200, content=b"<html>", request=request)) is None
