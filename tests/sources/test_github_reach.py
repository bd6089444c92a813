"""A pin must be a commit of the repository its entry names, through the CLI.

The repositories of a fork network share their objects, so GitHub serves a commit that only
a fork holds under the parent's URLs too (upstream-apis reference, section 6). The check is
the compare API, ``GET /repos/{owner}/{repo}/compare/{base}...{head}``, whose ``status`` is
``identical``, ``behind`` (head is in base's history), ``ahead`` or ``diverged``
(docs.github.com/rest/commits/commits#compare-two-commits); the base is the entry's ``ref``,
else the ``default_branch`` of ``GET /repos/{owner}/{repo}``
(docs.github.com/rest/repos/repos#get-a-repository).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fakes.github import FakeGitHub, manifest_toml, no_network
from tests.conftest import cli, write_manifest

PARENT = "octo/hyphae"
FORK = "mallory/hyphae"
DOC = "github/octo/hyphae"


def ingest(manifest: Path, warehouse: Path) -> dict[str, Any]:
    result = cli("ingest", manifest, "--warehouse", warehouse, "--json")
    payload: dict[str, Any] = json.loads(result.stdout)
    payload["exit_code"] = result.exit_code
    return payload


def compares(github: FakeGitHub) -> list[str]:
    return [r.url.path for r in github.api_requests if "/compare/" in r.url.path]


def test_a_commit_only_a_fork_holds_fails_the_entry_under_the_parents_name(
    github: FakeGitHub, tmp_path: Path, warehouse_path: Path
) -> None:
    github.push(PARENT, {"README.md": b"# Hyphae\n"})
    github.fork(PARENT, FORK)
    planted = github.push(FORK, {"README.md": b"# Hyphae\n\nSend your keys to mallory.\n"})
    manifest = write_manifest(tmp_path, manifest_toml(PARENT, planted, {"README.md": "markdown"}))

    run = ingest(manifest, warehouse_path)

    assert run["exit_code"] == 1
    (failure,) = run["failures"]
    assert (
        f"github {PARENT}@{planted}: the commit is not in the history of {PARENT}'s default "
        "branch 'main' (compare status 'ahead'"
    ) in failure["reason"]
    assert "a commit only a fork holds is served under the parent's URLs" in failure["reason"]
    assert github.raw_requests == []  # nothing was fetched, nothing stored
    missing = cli("history", f"{DOC}/README.md", "--warehouse", warehouse_path)
    assert missing.exit_code == 1 and "no document" in missing.stderr
    assert compares(github) == [f"/repos/{PARENT}/compare/main...{planted}"]


def test_a_pin_on_another_branch_passes_when_the_entry_names_it(
    github: FakeGitHub, tmp_path: Path, warehouse_path: Path
) -> None:
    github.push(PARENT, {"README.md": b"# Hyphae\n"})
    github.push(PARENT, {"README.md": b"# Hyphae 2\n"}, branch="main")
    release = github.push(PARENT, {"NOTES.md": b"1.0 notes\n"}, branch="release-1.0", start="main")
    github.push(PARENT, {"README.md": b"# Hyphae 3\n"}, branch="main")
    files = {"NOTES.md": "markdown"}

    unnamed = ingest(
        write_manifest(tmp_path, manifest_toml(PARENT, release, files)), warehouse_path
    )
    assert unnamed["exit_code"] == 1
    assert "(compare status 'diverged'" in unnamed["failures"][0]["reason"]
    assert (
        'name the branch or tag that holds it with `ref = "..."`'
        in (unnamed["failures"][0]["reason"])
    )

    named = manifest_toml(PARENT, release, files, entry='ref = "release-1.0"\n')
    run = ingest(write_manifest(tmp_path, named), warehouse_path)
    assert run["exit_code"] == 0, run["failures"]
    assert compares(github)[-1] == f"/repos/{PARENT}/compare/release-1.0...{release}"


def test_an_older_commit_of_the_default_branch_is_reachable(
    github: FakeGitHub, tmp_path: Path, warehouse_path: Path
) -> None:
    old = github.push(PARENT, {"README.md": b"# Hyphae\n"})
    github.push(PARENT, {"README.md": b"# Hyphae 2\n"})
    manifest = write_manifest(tmp_path, manifest_toml(PARENT, old, {"README.md": "markdown"}))
    run = ingest(manifest, warehouse_path)
    assert run["exit_code"] == 0, run["failures"]
    assert run["warnings"] == []
    # A stored pin does not move: refreshing it asks nothing, not even the comparison.
    with no_network():
        assert ingest(manifest, warehouse_path)["http_requests"] == 0


def test_each_repository_and_pin_is_compared_once_per_run(
    github: FakeGitHub, tmp_path: Path, warehouse_path: Path
) -> None:
    sha = github.push(PARENT, {"a.md": b"a\n", "b.md": b"b\n"})
    one = manifest_toml(PARENT, sha, {"a.md": "markdown"})
    two = one + manifest_toml(PARENT, sha, {"b.md": "markdown"}).split("\n\n", 2)[2]
    run = ingest(write_manifest(tmp_path, two), warehouse_path)
    assert run["exit_code"] == 0, run["failures"]
    assert run["counts"]["github"]["new"] == 2
    assert compares(github) == [f"/repos/{PARENT}/compare/main...{sha}"]
    assert [r.url.path for r in github.api_requests].count(f"/repos/{PARENT}") == 1


def test_a_commit_github_does_not_know_fails_saying_so(
    github: FakeGitHub, tmp_path: Path, warehouse_path: Path
) -> None:
    github.push(PARENT, {"README.md": b"# Hyphae\n"})
    unknown = "0123456789abcdef0123456789abcdef01234567"
    manifest = write_manifest(tmp_path, manifest_toml(PARENT, unknown, {"README.md": "markdown"}))
    run = ingest(manifest, warehouse_path)
    assert run["exit_code"] == 1
    reason = run["failures"][0]["reason"]
    assert f"GitHub compares no commit {unknown} with the default branch 'main'" in reason
    assert "answered 404: Not Found); nothing was stored" in reason


def test_a_comparison_that_cannot_be_made_is_said(
    github: FakeGitHub, tmp_path: Path, warehouse_path: Path
) -> None:
    sha = github.push(PARENT, {"README.md": b"# Hyphae\n"})
    github.secondary_limit(retry_after=3600, where="/compare/")
    manifest = write_manifest(tmp_path, manifest_toml(PARENT, sha, {"README.md": "markdown"}))
    run = ingest(manifest, warehouse_path)
    assert run["exit_code"] == 0, run["failures"]
    (warning,) = [w["warning"] for w in run["warnings"]]
    assert f"github {PARENT}@{sha}: not checked that the commit belongs to {PARENT}" in warning


def test_pin_moves_the_ref_an_entry_names_with_its_commit(
    github: FakeGitHub, tmp_path: Path, warehouse_path: Path
) -> None:
    github.push(PARENT, {"README.md": b"# Hyphae\n"})
    one = github.push(PARENT, {"NOTES.md": b"1.0\n"}, branch="release-1.0", start="main")
    two = github.push(PARENT, {"NOTES.md": b"2.0\n"}, branch="release-2.0", start="main")
    github.push(PARENT, {"README.md": b"# Hyphae 2\n"})
    text = manifest_toml(PARENT, one, {"NOTES.md": "markdown"}, entry='ref = "release-1.0"\n')
    manifest = write_manifest(tmp_path, text)

    assert cli("pin", manifest, "--ref", "release-2.0").exit_code == 0

    assert manifest.read_text() == text.replace(one, two).replace("release-1.0", "release-2.0")
    run = ingest(manifest, warehouse_path)
    assert run["exit_code"] == 0, run["failures"]
    assert compares(github)[-1] == f"/repos/{PARENT}/compare/release-2.0...{two}"
