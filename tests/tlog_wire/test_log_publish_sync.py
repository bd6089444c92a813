"""`receipts log publish` puts every tile and entry bundle on disk, with the directories
that name them, before it writes the checkpoint: a crash never leaves a published checkpoint
pointing at tiles that are not there. The order is read from the calls the command makes to
``os.fsync`` and ``os.replace``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import cli, write_manifest
from tests.tlog_wire.test_log_commands import CHANGED, MANIFEST

Event = tuple[str, Path, Path | None]


@pytest.fixture
def events(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Event]]:
    """Each fsync (of the file or directory the descriptor names) and each rename."""
    seen: list[Event] = []
    fsync, replace = os.fsync, os.replace

    def recording_fsync(fd: int) -> None:
        seen.append(("fsync", Path(os.readlink(f"/proc/self/fd/{fd}")), None))
        fsync(fd)

    def recording_replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        replace(src, dst)
        seen.append(("replace", Path(src).resolve(), Path(dst).resolve()))

    monkeypatch.setattr(os, "fsync", recording_fsync)
    monkeypatch.setattr(os, "replace", recording_replace)
    yield seen


def _check_order(events: list[Event], out: Path) -> int:
    """Check one publish's events into ``out``; the number of tiles and bundles written."""
    out = out.resolve()
    mine = [e for e in events if e[1] == out or out in e[1].parents]
    renames = [(i, src, dst) for i, (kind, src, dst) in enumerate(mine) if kind == "replace"]
    synced = [(i, path) for i, (kind, path, _) in enumerate(mine) if kind == "fsync"]
    [(at, checkpoint_tmp, _)] = [r for r in renames if r[2] == out / "checkpoint"]
    assert renames[-1][0] == at  # the checkpoint is renamed last
    # Each file's bytes were synced before its rename.
    for i, src, _ in renames:
        assert any(j < i and path == src for j, path in synced), src
    # Every directory a tile or bundle was renamed into, and every directory above it,
    # was synced after that rename and before the checkpoint's.
    directories = {out}
    for _, _, dst in renames[:-1]:
        assert dst is not None
        directories.update(p for p in dst.parents if out in p.parents)
    for directory in directories:
        last = max(i for i, _, dst in renames[:-1] if dst is not None and directory in dst.parents)
        assert any(last < j < at and path == directory for j, path in synced), directory
    # And the checkpoint's own rename is synced in its directory.
    assert any(j > at and path == out for j, path in synced)
    assert checkpoint_tmp.name.startswith(".checkpoint.")
    return len(renames) - 1


def test_log_publish_syncs_tiles_and_directories_before_the_checkpoint(
    tmp_path: Path, warehouse_path: Path, events: list[Event]
) -> None:
    key = tmp_path / "log.key"
    assert cli("log", "init", "--key", key, "--warehouse", warehouse_path).exit_code == 0
    env = {"RECEIPTS_LOG_KEY": str(key)}
    out = tmp_path / "pub"
    for body in (MANIFEST, CHANGED):  # the second publish adds tiles to the first's
        manifest = write_manifest(tmp_path, body)
        assert cli("ingest", manifest, "--warehouse", warehouse_path, env=env).exit_code == 0
        events.clear()
        published = cli("log", "publish", "--out", out, "--warehouse", warehouse_path)
        assert published.exit_code == 0, published.output
        assert _check_order(events, out) >= 2  # a level-0 tile and its entry bundle, at least
