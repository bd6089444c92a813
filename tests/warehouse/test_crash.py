"""A run killed with SIGKILL leaves a consistent warehouse; re-running completes it.

These tests start real processes and kill them for real.
"""

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
from warehouse import history
from warehouse.digests import row_counts
from warehouse.lock import read_holder
from warehouse.runs import progress
from warehouse.store import Warehouse

COUNT = 12_000
BATCH = 500

MANIFEST = f"""
[corpus]
name = "crash"
namespace = "crash"

[[synthetic]]
name = "slow"
count = {COUNT}
size = 300
complete = true
pause_every = {3 * BATCH}
pause_ms = 0
"""


def start_ingest(manifest: Path, warehouse: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bench.synthetic_source",  # the receipts CLI, with [[synthetic]] registered
            "ingest",
            str(manifest),
            "--warehouse",
            str(warehouse),
            "--batch-size",
            str(BATCH),
        ],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={k: v for k, v in os.environ.items() if not k.startswith("RECEIPTS_")},
    )


def wait_for_run(warehouse: Path, proc: subprocess.Popen[bytes], timeout: float = 120) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run_id, pid = read_holder(warehouse)
        if run_id is not None and pid == proc.pid:
            return run_id
        assert proc.poll() is None, "the ingest process exited early"
        time.sleep(0.05)
    raise AssertionError("the run never started")


def wait_for_hold(hold: Path, proc: subprocess.Popen[bytes], timeout: float = 120) -> None:
    """Until the synthetic stream reaches its hold (and every batch before it committed)."""
    deadline = time.monotonic() + timeout
    while not hold.with_name(f"{hold.name}.held").exists():
        assert proc.poll() is None, "the ingest process exited early"
        assert time.monotonic() < deadline, "the run never reached its hold"
        time.sleep(0.05)


@pytest.mark.slow
def test_sigkill_mid_run_then_rerun_completes_without_duplicates(tmp_path: Path) -> None:
    # The run stays paused after its third batch while the hold file exists: the kill below
    # lands mid-run however slow the machine.
    hold = tmp_path / "hold"
    hold.touch()
    manifest = write_manifest(tmp_path, MANIFEST + f'hold_while = "{hold}"\n')
    warehouse = tmp_path / "w.duckdb"
    proc = start_ingest(manifest, warehouse)
    try:
        run_id = wait_for_run(warehouse, proc)
        wait_for_hold(hold, proc)

        # A second writer, and a reader, are told who holds the warehouse (and, with no
        # time to wait, fail at once).
        busy = cli("ingest", manifest, "--warehouse", warehouse, env={"RECEIPTS_LOCK_WAIT": "0"})
        assert busy.exit_code == 1
        assert f"warehouse in use by run {run_id} (pid {proc.pid}, running for" in busy.stderr
        reader = cli("runs", "--warehouse", warehouse, env={"RECEIPTS_LOCK_WAIT": "0"})
        assert reader.exit_code == 1
        assert f"warehouse in use by run {run_id}" in reader.stderr
        assert "ducklake:" in reader.stderr

        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
        hold.unlink()
    assert proc.returncode == -signal.SIGKILL

    with Warehouse.open(str(warehouse), read_only=True) as wh:
        committed = row_counts(wh, ["revisions"])["revisions"]
        batches = progress(wh)
        # Every committed batch has exactly its records: data and progress commit together.
        assert committed == sum(batch.new for batch in batches)
        assert committed == BATCH * len(batches)
        assert 0 < committed < COUNT, "kill landed outside the run"
        assert committed == 3 * BATCH  # the batches before the hold

    ledger = json.loads(cli("runs", "--warehouse", warehouse, "--json").stdout)
    assert [(r["run_id"], r["status"]) for r in ledger] == [(run_id, "interrupted")]

    rerun = cli("ingest", manifest, "--warehouse", warehouse, "--json")
    assert rerun.exit_code == 0, rerun.output
    report = json.loads(rerun.stdout)
    assert report["resumes_run"] == run_id
    assert report["counts"]["synthetic"]["new"] == COUNT - committed
    assert report["counts"]["synthetic"]["unchanged"] == committed

    with Warehouse.open(str(warehouse), read_only=True) as wh:
        counts = row_counts(wh, ("documents", "revisions", "snapshots"))
        assert counts == dict.fromkeys(counts, COUNT)
        assert len({r.doc_id for r in history.revisions(wh)}) == COUNT
    text = cli("runs", "--warehouse", warehouse).output
    assert "interrupted" in text and f"(completes run {run_id})" in text
