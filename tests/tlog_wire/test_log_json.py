"""Every writing command's ``--json`` carries the log's checkpoint (``log_checkpoint``), in
one shape: its size and origin, whether it is signed (and why not, when it is not), and
whether this run recorded it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fakes.nhtsa import cmpl_row, write_zip
from tests.conftest import cli, write_manifest
from tests.tlog_wire.test_log_commands import MANIFEST
from warehouse.store import Warehouse
from warehouse.tlog import store

_SHAPE = {"size", "origin", "signed", "key_name", "unsigned_because", "recorded"}


def _checkpoint(args: list[Any], env: dict[str, str]) -> dict[str, Any]:
    run = cli(*args, "--json", env=env)
    assert run.exit_code == 0, run.output
    summary = json.loads(run.stdout)
    checkpoint = summary["log_checkpoint"]
    assert set(checkpoint) == _SHAPE
    return checkpoint


def _log_size(warehouse_path: Path) -> int:
    with Warehouse.open(str(warehouse_path)) as wh:
        return store.size(wh._connection_for_tests())


@pytest.mark.parametrize("signed", [False, True], ids=["unsigned", "signed"])
def test_ingest_publish_refresh_and_backfill_say_the_checkpoint_they_leave(
    tmp_path: Path, warehouse_path: Path, signed: bool
) -> None:
    env = {"RECEIPTS_LOG_KEY": ""}
    if signed:
        key = tmp_path / "log.key"
        assert cli("log", "init", "--key", key, "--warehouse", warehouse_path).exit_code == 0
        env = {"RECEIPTS_LOG_KEY": str(key)}
    manifest = write_manifest(tmp_path, MANIFEST)
    out = tmp_path / "synth.ndjson"
    complaints = write_zip(
        tmp_path / "FLAT_CMPL.zip",
        "FLAT_CMPL.txt",
        [cmpl_row(11999001, 1), cmpl_row(11999002, 2), cmpl_row(11999003, 3)],
    )
    runs = [
        ("ingest", ["ingest", manifest, "--warehouse", warehouse_path]),
        ("publish", ["publish", manifest, "--warehouse", warehouse_path, "--out", out]),
        ("refresh", ["refresh", manifest, "--warehouse", warehouse_path, "--out", out]),
        ("ingest again", ["ingest", manifest, "--warehouse", warehouse_path]),
        ("backfill", ["backfill", "nhtsa", "--file", complaints, "--kind", "complaints",
                      "--warehouse", warehouse_path]),
    ]  # fmt: skip
    sizes = []
    for name, args in runs:
        checkpoint = _checkpoint(args, env)
        assert checkpoint["size"] == _log_size(warehouse_path), name
        assert checkpoint["origin"].startswith("receipts/"), name
        sizes.append(checkpoint["size"])
        assert checkpoint["signed"] is signed, name
        if signed:
            assert checkpoint["key_name"] and checkpoint["unsigned_because"] is None, name
        else:
            assert checkpoint["key_name"] is None, name
            assert checkpoint["unsigned_because"] == (
                "RECEIPTS_LOG_KEY is not set"
                if checkpoint["recorded"]
                else "recorded unsigned by an earlier run"
            ), name
        # An ingest that changed nothing appends nothing: it reports the latest checkpoint.
        assert checkpoint["recorded"] is (name != "ingest again"), name
    # 12 revisions; a push receipt; refresh's push receipt; nothing; 3 complaints.
    assert sizes == [12, 13, 14, 14, 17]


def test_a_refresh_reports_the_ingest_and_the_push_checkpoints(
    tmp_path: Path, warehouse_path: Path
) -> None:
    manifest = write_manifest(tmp_path, MANIFEST)
    run = cli("refresh", manifest, "--warehouse", warehouse_path, "--json",
              "--out", tmp_path / "synth.ndjson", env={"RECEIPTS_LOG_KEY": ""})  # fmt: skip
    assert run.exit_code == 0, run.output
    summary = json.loads(run.stdout)
    assert summary["run"]["log_checkpoint"]["size"] == 12
    assert summary["push"]["log_checkpoint"]["size"] == 13
    assert summary["log_checkpoint"] == summary["push"]["log_checkpoint"]
