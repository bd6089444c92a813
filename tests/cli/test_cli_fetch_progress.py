"""Every command that fetches takes ``--record DIR`` and ``--replay DIR`` (``pin``,
``verify --upstream``, ``drift --pins``, ``drift --target``, ``publish``), and every long
step shows progress on stderr: plain lines when it is not a terminal, nothing with
``--json`` or ``-q``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fakes.github import FakeGitHub, manifest_toml
from fakes.node_lake import NodeLake
from pipelines.progress import LineDisplay, Steps
from tests.conftest import cli, write_manifest
from tests.publish_corpus import manifest_text, register

REPO_NAME = "octo/hyphae"
FORMATS = {"a.md": "markdown", "b.md": "markdown"}


@pytest.fixture
def pinned(github: FakeGitHub, tmp_path: Path, warehouse_path: Path) -> Path:
    """A manifest pinned at a commit, ingested; main has moved on since."""
    sha = github.push(REPO_NAME, {"a.md": b"a1", "b.md": b"b"})
    github.push(REPO_NAME, {"a.md": b"a2"})
    manifest = write_manifest(tmp_path, manifest_toml(REPO_NAME, sha, FORMATS))
    assert cli("ingest", manifest, "--warehouse", warehouse_path).exit_code == 0
    return manifest


def test_steps_say_how_each_step_ended(tmp_path: Path) -> None:
    stream = (tmp_path / "err").open("w")
    steps = Steps(LineDisplay(stream, interval=None), "verify: ")
    steps("snapshots hashed", 1000, 2500)
    steps("snapshots hashed", 2500, 2500)
    steps("revisions checked", 0, 40)
    steps("revisions checked", 40, 40)
    steps.close()
    stream.close()
    lines = (tmp_path / "err").read_text().splitlines()
    assert [line.rsplit(" in ", 1)[0] for line in lines] == [
        "verify: snapshots hashed: 2,500/2,500",
        "verify: revisions checked: 40/40",
    ]


@pytest.mark.parametrize(
    "command",
    [
        ["pin", "{manifest}", "--dry-run"],
        ["verify", "--upstream", "{manifest}"],
        ["drift", "--pins", "{manifest}"],
    ],
)
def test_github_commands_record_and_replay(
    github: FakeGitHub, pinned: Path, warehouse_path: Path, tmp_path: Path, command: list[str]
) -> None:
    args = [a.format(manifest=pinned) for a in command]
    if args[0] == "verify":
        args += ["--warehouse", str(warehouse_path)]
    session = tmp_path / "session"
    recorded = cli(*args, "--json", "--record", session)
    assert recorded.exit_code in (0, 1), recorded.output
    assert any(session.rglob("*")), "nothing recorded"
    before = len(github.requests)
    replayed = cli(*args, "--json", "--replay", session)
    assert len(github.requests) == before  # served from the session, not the network
    assert (replayed.exit_code, json.loads(replayed.stdout)) == (
        recorded.exit_code,
        json.loads(recorded.stdout),
    )


def test_an_unrecorded_request_fails_under_replay(pinned: Path, tmp_path: Path) -> None:
    result = cli("drift", "--pins", pinned, "--replay", tmp_path / "empty")
    assert result.exit_code == 1
    assert "recorded" in result.stderr


def test_record_and_replay_only_where_something_is_fetched(
    pinned: Path, warehouse_path: Path, tmp_path: Path
) -> None:
    plain = cli("verify", "--warehouse", warehouse_path, "--replay", tmp_path)
    assert plain.exit_code == 2 and "go with --upstream" in plain.stderr
    drift = cli("drift", "--warehouse", warehouse_path, "--record", tmp_path)
    assert drift.exit_code == 2 and "go with --pins or --target" in drift.stderr


def test_verify_shows_its_steps_unless_json_or_quiet(pinned: Path, warehouse_path: Path) -> None:
    result = cli("verify", "--warehouse", warehouse_path, "--upstream", pinned)
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert lines[0].startswith("verify: snapshots hashed: 2/2 in ")
    assert lines[1].startswith("verify: revisions checked: 2/2 in ")
    assert lines[2].startswith("verify: pinned files re-downloaded: 2/2 in ")
    assert "checked 2 snapshots" in result.stdout  # the result itself stays on stdout
    assert cli("verify", "--warehouse", warehouse_path, "--json").stderr == ""
    assert cli("-q", "verify", "--warehouse", warehouse_path).stderr == ""


def test_drift_pins_shows_its_progress(pinned: Path) -> None:
    result = cli("drift", "--pins", pinned)
    assert result.stderr.startswith("drift --pins: pinned files compared with main: 2/2 in ")
    assert cli("drift", "--pins", pinned, "--json").stderr == ""


# -- publish and drift --target against the Content Lake fake ------------------------------
@pytest.fixture
def atlas(
    tmp_path: Path, warehouse_path: Path, node_lake: NodeLake, monkeypatch: pytest.MonkeyPatch
) -> Path:
    register(monkeypatch)
    path = tmp_path / "atlas.toml"
    path.write_text(manifest_text(synthetic=20))
    assert cli("ingest", path, "--warehouse", warehouse_path).exit_code == 0
    return path


def test_publish_shows_mutations_and_transactions(
    atlas: Path, warehouse_path: Path, node_lake: NodeLake
) -> None:
    result = cli("publish", atlas, "--warehouse", warehouse_path)
    assert result.exit_code == 0, result.output
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("publish: ")]
    assert line.startswith("publish: mutations applied: 24/24 (")
    assert " transaction" in line and " committed) in " in line
    again = cli("publish", atlas, "--warehouse", warehouse_path, "--json")
    assert again.exit_code == 0 and again.stderr == ""


def test_refresh_shows_its_publish_progress(
    tmp_path: Path, warehouse_path: Path, node_lake: NodeLake, monkeypatch: pytest.MonkeyPatch
) -> None:
    register(monkeypatch)
    path = tmp_path / "atlas.toml"
    path.write_text(manifest_text(synthetic=20))
    result = cli("refresh", path, "--warehouse", warehouse_path)
    assert result.exit_code == 0, result.output
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("publish: ")]
    assert line.startswith("publish: mutations applied: 24/24 (")
    quiet = cli("-q", "refresh", path, "--warehouse", warehouse_path)
    assert quiet.exit_code == 0 and quiet.stderr == ""


def test_publish_and_target_drift_record_and_replay(
    atlas: Path, warehouse_path: Path, node_lake: NodeLake, tmp_path: Path
) -> None:
    assert cli("publish", atlas, "--warehouse", warehouse_path).exit_code == 0
    for args in (
        ["publish", atlas, "--dry-run"],
        ["drift", atlas, "--target"],
    ):
        session = tmp_path / f"session-{args[0]}"
        recorded = cli(*args, "--warehouse", warehouse_path, "--json", "--record", session)
        assert recorded.exit_code == 0, recorded.output
        before = len(node_lake.requests)
        replayed = cli(*args, "--warehouse", warehouse_path, "--json", "--replay", session)
        assert replayed.exit_code == 0, replayed.output
        assert len(node_lake.requests) == before
        first, second = json.loads(recorded.stdout), json.loads(replayed.stdout)
        if args[0] == "publish":
            assert first["plan"] == second["plan"] and first["plan"]["unchanged"] == 24
        else:
            assert first["target_drift"] == second["target_drift"]
