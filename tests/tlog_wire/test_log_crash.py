"""A run killed with SIGKILL at any point leaves the log and the rows agreeing: `log verify`
passes after the kill, and again after the run is completed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, cli, write_manifest
from tests.warehouse.test_crash import wait_for_run

MANIFEST = """
[corpus]
name = "crash"
namespace = "crash"

[[synthetic]]
name = "slow"
count = 6000
size = 300
complete = true
pause_every = 400
pause_ms = 150  # 15 pauses: the run lasts over 2 s, past the latest kill
"""


def _ingest(manifest: Path, warehouse: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "bench.synthetic_source", "ingest", str(manifest),
         "--warehouse", str(warehouse), "--batch-size", "300"],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={k: v for k, v in os.environ.items() if not k.startswith("RECEIPTS_")},
    )  # fmt: skip


def _log_verify(warehouse: Path) -> dict[str, object]:
    result = cli("log", "verify", "--json", "--warehouse", warehouse)
    report = json.loads(result.stdout)
    assert result.exit_code == 0, report
    return report


@pytest.mark.parametrize("after", [0.0, 0.3, 1.5])
def test_a_kill_at_any_point_leaves_log_and_rows_agreeing(after: float, tmp_path: Path) -> None:
    manifest = write_manifest(tmp_path, MANIFEST)
    warehouse = tmp_path / "w.duckdb"
    proc = _ingest(manifest, warehouse)
    wait_for_run(warehouse, proc)  # the run has started: its batches are committing
    time.sleep(after)
    assert proc.poll() is None, "the run ended before it was killed"
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=60) == -signal.SIGKILL
    killed = _log_verify(warehouse)
    assert 0 <= int(killed["size"]) < 6000  # type: ignore[call-overload]
    done = _ingest(manifest, warehouse)
    assert done.wait(timeout=300) == 0
    report = _log_verify(warehouse)
    assert report["size"] == 6000
    cp = json.loads(cli("log", "checkpoint", "--json", "--warehouse", warehouse).stdout)
    assert cp["size"] == 6000
