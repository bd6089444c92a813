"""``receipts drift --pins``: which pinned files changed, stayed, or vanished at the ref."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fakes.github import FakeGitHub, manifest_toml
from pipelines import USER_AGENT
from pipelines.checks.pin_drift import (
    CHANGED,
    DELETED,
    MISSING_AT_PIN,
    UNCHANGED,
    drift_status,
    pin_drift,
)
from pipelines.manifest import load_manifest
from sources.http import HttpFactory
from tests.conftest import cli, write_manifest
from warehouse.canonical import content_hash

REPO_NAME = "octo/hyphae"
FORMATS = {"a.md": "markdown", "b.md": "markdown", "c.md": "markdown"}


@pytest.fixture
def moved(github: FakeGitHub, tmp_path: Path) -> tuple[Path, str, str]:
    """A manifest pinned at a commit; main has since changed a.md and deleted c.md."""
    pinned = github.push(REPO_NAME, {"a.md": b"a1", "b.md": b"b", "c.md": b"c"})
    head = github.push(REPO_NAME, {"a.md": b"a2", "c.md": None})
    manifest = write_manifest(tmp_path, manifest_toml(REPO_NAME, pinned, FORMATS))
    return manifest, pinned, head


def test_drift_reports_each_pinned_file_with_the_newer_commit(
    moved: tuple[Path, str, str],
) -> None:
    manifest, pinned, head = moved

    result = cli("drift", "--pins", manifest, "--json")

    assert result.exit_code == 0, result.output
    files = json.loads(result.stdout)["files"]
    assert [(f["path"], f["status"]) for f in files] == [
        ("a.md", CHANGED),
        ("b.md", UNCHANGED),
        ("c.md", DELETED),
    ]
    assert {(f["pinned_commit"], f["ref"], f["ref_commit"]) for f in files} == {
        (pinned, "main", head)
    }
    assert files[0]["pinned_sha256"] == content_hash(b"a1")
    assert files[0]["ref_sha256"] == content_hash(b"a2")
    assert files[2]["ref_sha256"] is None


def test_drift_text_lists_the_stale_pins_and_how_to_move_them(
    moved: tuple[Path, str, str],
) -> None:
    manifest, pinned, head = moved
    result = cli("drift", "--pins", manifest)
    lines = result.stdout.splitlines()
    assert lines[0] == "3 pinned files compared with main: 1 changed, 1 deleted, 1 unchanged"
    assert lines[1].split() == ["status", "repo", "path", "pinned", "at", "ref"]
    assert lines[2].split() == [CHANGED, REPO_NAME, "a.md", pinned[:12], head[:12]]
    assert lines[4].split() == [DELETED, REPO_NAME, "c.md", pinned[:12], head[:12]]
    assert lines[-1] == "2 pins are stale: `receipts pin MANIFEST --ref main` moves them"


def test_fail_on_drift_exits_3_only_when_a_pin_is_stale(
    github: FakeGitHub, moved: tuple[Path, str, str], tmp_path: Path
) -> None:
    manifest, _, head = moved
    assert cli("drift", "--pins", manifest, "--fail-on-drift").exit_code == 3
    assert cli("pin", manifest).exit_code == 0
    fresh = write_manifest(tmp_path, manifest_toml(REPO_NAME, head, {"a.md": "markdown"}), "f.toml")
    assert cli("drift", "--pins", fresh, "--fail-on-drift").exit_code == 0


def test_a_pin_at_the_ref_needs_no_download(github: FakeGitHub, tmp_path: Path) -> None:
    head = github.push(REPO_NAME, {"a.md": b"a", "b.md": b"b", "c.md": b"c"})
    manifest = load_manifest(write_manifest(tmp_path, manifest_toml(REPO_NAME, head, FORMATS)))

    report = pin_drift(manifest, HttpFactory(user_agent=USER_AGENT), "main")

    assert [d.status for d in report] == [UNCHANGED] * 3
    assert github.raw_requests == []
    assert len(github.api_requests) == 1


def test_drift_tracks_the_given_ref(github: FakeGitHub, tmp_path: Path) -> None:
    pinned = github.push(REPO_NAME, {"a.md": b"a"})
    github.push(REPO_NAME, {"a.md": b"a-next"}, branch="next")
    manifest = write_manifest(tmp_path, manifest_toml(REPO_NAME, pinned, {"a.md": "markdown"}))
    on_main = json.loads(cli("drift", "--pins", manifest, "--json").stdout)["files"]
    on_next = json.loads(cli("drift", "--pins", manifest, "--ref", "next", "--json").stdout)
    assert on_main[0]["status"] == UNCHANGED
    assert on_next["files"][0]["status"] == CHANGED


def test_drift_of_an_unknown_ref_fails_with_the_reason(
    moved: tuple[Path, str, str],
) -> None:
    manifest, _, _ = moved
    result = cli("drift", "--pins", manifest, "--ref", "nope")
    assert result.exit_code == 1
    assert "no commit for ref 'nope' (HTTP 422" in result.stderr


@pytest.mark.parametrize(
    ("pinned", "current", "status"),
    [
        (b"x", b"x", UNCHANGED),
        (b"x", b"y", CHANGED),
        (b"x", None, DELETED),
        (None, b"y", MISSING_AT_PIN),
        (b"", b"", UNCHANGED),
    ],
)
def test_drift_status(pinned: bytes | None, current: bytes | None, status: str) -> None:
    assert drift_status(pinned, current) == status
