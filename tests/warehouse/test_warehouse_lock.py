"""Readers and writers of a DuckDB-file warehouse, as real processes: readers open, read and
close; a writer waits (bounded) for them instead of failing; a reader that finds a writer
says which run holds the file and for how long, waits, and reads once it is done."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, cli, write_manifest
from tests.lake_support import start
from warehouse.errors import UsageError, WarehouseBusy
from warehouse.lock import FileLock, lock_wait, read_holder

SLOW = """
[corpus]
name = "slow"
namespace = "slow"

[[synthetic]]
name = "slow"
count = {count}
size = 200
complete = true
pause_every = 200
pause_ms = {pause_ms}
"""


def env(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("RECEIPTS_")}
    base.update(extra)
    return base


def receipts(*args: object) -> list[str]:
    """The receipts command line (with ``[[synthetic]]`` registered), as a process."""
    return [sys.executable, "-m", "bench.synthetic_source", *map(str, args)]


def run(*args: object, wait: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        receipts(*args),
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env(RECEIPTS_LOCK_WAIT=str(wait)),
        timeout=120,
    )


def hold_reader(warehouse: Path) -> subprocess.Popen[str]:
    """A process that keeps the warehouse open for reading until :func:`release` (its
    standard input closes); returned once the warehouse is open."""
    code = (
        "import sys\n"
        "from warehouse.store import Warehouse\n"
        "with Warehouse.open(sys.argv[1], read_only=True):\n"
        "    print('open', flush=True)\n"
        "    sys.stdin.read()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(warehouse)],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env(),
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "open"
    return proc


def release(reader: subprocess.Popen[str]) -> None:
    """The reader closes the warehouse and exits."""
    if reader.stdin is not None and not reader.stdin.closed:
        reader.stdin.close()
    reader.wait(timeout=60)
    if reader.stdout is not None:
        reader.stdout.close()


def said_before_waiting(proc: subprocess.Popen[str]) -> str:
    """What ``proc`` printed on stderr up to its line saying that it waits (or to its end)."""
    assert proc.stderr is not None
    lines: list[str] = []
    for line in proc.stderr:
        lines.append(line)
        if "waiting up to" in line:
            break
    return "".join(lines)


@pytest.fixture
def filled(tmp_path: Path) -> tuple[Path, Path]:
    manifest = write_manifest(tmp_path, SLOW.format(count=50, pause_ms=0))
    warehouse = tmp_path / "w.duckdb"
    assert cli("ingest", manifest, "--warehouse", warehouse).exit_code == 0
    return manifest, warehouse


def test_lock_wait_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert lock_wait() == 30.0
    monkeypatch.setenv("RECEIPTS_LOCK_WAIT", "2.5")
    assert lock_wait() == 2.5
    for bad in ("soon", "-1", "nan", "inf"):
        monkeypatch.setenv("RECEIPTS_LOCK_WAIT", bad)
        with pytest.raises(UsageError, match=r"RECEIPTS_LOCK_WAIT=.* expected seconds, 0 or more"):
            lock_wait()


def test_readers_share_the_file_and_a_writer_leaves_the_sidecar_empty(
    filled: tuple[Path, Path],
) -> None:
    _, warehouse = filled
    assert read_holder(warehouse) == (None, None)
    first = FileLock(warehouse, shared=True, wait=0)
    second = FileLock(warehouse, shared=True, wait=0)
    first.acquire()
    second.acquire()  # readers do not exclude each other
    lines: list[str] = []
    writer = FileLock(warehouse, wait=0.3, notify=lines.append)
    with pytest.raises(WarehouseBusy, match="in use by readers") as caught:
        writer.acquire()
    assert caught.value.readers
    assert len(lines) == 1 and "waiting up to 0s (RECEIPTS_LOCK_WAIT)" in lines[0]
    first.release()
    second.release()
    writer.acquire()
    writer.describe(7)
    assert read_holder(warehouse) == (7, os.getpid())
    writer.release()
    assert read_holder(warehouse) == (None, None)


@pytest.mark.slow
def test_a_writer_waits_for_a_reader_then_runs(filled: tuple[Path, Path]) -> None:
    manifest, warehouse = filled
    reader = hold_reader(warehouse)
    writer: subprocess.Popen[str] | None = None
    try:
        writer = start("ingest", manifest, "--warehouse", warehouse, "--json", wait=60)
        said = said_before_waiting(writer)
        waiting = said.splitlines()[-1] if said else ""
        assert writer.poll() is None  # it waits rather than failing
        release(reader)
        out, rest = writer.communicate(timeout=120)
    finally:
        release(reader)
        if writer is not None and writer.poll() is None:
            writer.kill()
            writer.wait(timeout=30)
    assert writer.returncode == 0, said + rest
    assert json.loads(out)["status"] == "ok"
    assert "waiting up to" in waiting, said + rest
    assert "warehouse in use by readers" in waiting and "(RECEIPTS_LOCK_WAIT)" in waiting
    assert "waiting up to" not in rest  # it said so once


@pytest.mark.slow
def test_a_writer_gives_up_after_the_bounded_wait(filled: tuple[Path, Path]) -> None:
    manifest, warehouse = filled
    reader = hold_reader(warehouse)  # holds until released: only giving up ends the writer
    try:
        started = time.monotonic()
        busy = run("ingest", manifest, "--warehouse", warehouse, wait=1)
        took = time.monotonic() - started
        assert reader.poll() is None  # the reader still held the warehouse
    finally:
        release(reader)
    assert busy.returncode == 1
    assert "warehouse in use by readers" in busy.stderr
    assert "gave up after waiting 1s" in busy.stderr
    assert took < 12


@pytest.mark.slow
def test_readers_wait_for_the_writer_and_say_how_long_it_has_run(tmp_path: Path) -> None:
    # The writer stays paused after its first batch while the hold file exists: the readers
    # below find it busy however slow the machine, and the test lets it finish.
    hold = tmp_path / "hold"
    hold.touch()
    manifest = write_manifest(
        tmp_path, SLOW.format(count=1600, pause_ms=0) + f'hold_while = "{hold}"\n'
    )
    warehouse = tmp_path / "w.duckdb"
    writer = subprocess.Popen(
        receipts("ingest", manifest, "--warehouse", warehouse, "--batch-size", 200),
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env(),
    )
    patient: subprocess.Popen[str] | None = None
    try:
        deadline = time.monotonic() + 120
        while read_holder(warehouse)[0] is None:
            assert writer.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        run_id, pid = read_holder(warehouse)
        assert pid == writer.pid

        # No time to wait: one line naming the run, its age, and the lake that allows it.
        impatient = run("runs", "--warehouse", warehouse, wait=0)
        assert impatient.returncode == 1
        assert f"warehouse in use by run {run_id} (pid {writer.pid}, running for" in (
            impatient.stderr
        )
        assert "a DuckLake warehouse does (--warehouse ducklake:sqlite:" in impatient.stderr

        # Time to wait: it says what it waits for, then reads the finished run.
        patient = start("runs", "--warehouse", warehouse, "--json", wait=60)
        waiting = said_before_waiting(patient)  # printed before it waits
        hold.unlink()  # the writer goes on, finishes and releases the warehouse
        out, rest = patient.communicate(timeout=120)
        assert patient.returncode == 0, waiting + rest
        assert "waiting up to 1m00s (RECEIPTS_LOCK_WAIT)" in waiting
        assert f"in use by run {run_id}" in waiting
        assert [r["status"] for r in json.loads(out)] == ["ok"]
        # The writer released the warehouse; its process may still be exiting.
        writer.wait(timeout=30)
    finally:
        hold.unlink(missing_ok=True)
        for proc in (writer, patient):
            if proc is not None and proc.poll() is None:
                proc.kill()
            if proc is not None:
                proc.wait(timeout=30)
    assert writer.returncode == 0


@pytest.mark.slow
def test_concurrent_readers_all_read(filled: tuple[Path, Path]) -> None:
    _, warehouse = filled
    procs = [start("runs", "--warehouse", warehouse, "--json", wait=0) for _ in range(4)]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert len(json.loads(out)) == 1
