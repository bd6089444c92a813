"""Ctrl-C (SIGINT) and SIGTERM while a run writes: an interrupt, not a failure.

These tests start real ``receipts`` processes and signal them for real, once a run has
committed some batches: exit 130 or 143, one line saying what was committed, the run
recorded ``interrupted`` with those counts, and the next run resuming it, the two adding
up to what the warehouse holds.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from bench.nhtsa_backfill import generate
from pipelines.publish.targets.ndjson import NdjsonTarget
from tests.conftest import REPO, cli, write_manifest
from warehouse.digests import row_counts
from warehouse.interrupt import interruption
from warehouse.store import Warehouse

BATCH = 500
HELD_AFTER = 3 * BATCH  # the synthetic stream holds after this many records (3 batches)
COUNT = 4 * HELD_AFTER

MANIFEST = f"""
[corpus]
name = "interrupts"
namespace = "interrupts"

[[synthetic]]
name = "slow"
count = {COUNT}
size = 300
complete = true
pause_every = {HELD_AFTER}
pause_ms = 0
"""

EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143}


def environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("RECEIPTS_")}


def receipts(*args: Any, synthetic: bool = False) -> subprocess.Popen[str]:
    """A real ``receipts`` process (with ``[[synthetic]]`` entries registered if asked)."""
    module = "bench.synthetic_source" if synthetic else "pipelines.cli"
    return subprocess.Popen(
        [sys.executable, "-m", module, *map(str, args)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment(),
    )


def wait_for(path: Path, process: subprocess.Popen[str], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.05)


def signal_when_held(
    process: subprocess.Popen[str], held: Path, signum: signal.Signals = signal.SIGINT
) -> str:
    """Send ``signum`` once the run holds (``held`` exists); its stderr once it ended."""
    try:
        wait_for(held, process)
        process.send_signal(signum)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    return stderr


def ledger(warehouse: Path) -> list[dict[str, Any]]:
    result = cli("runs", "--warehouse", warehouse, "--json")
    assert result.exit_code == 0, result.output
    return list(json.loads(result.stdout))


def revisions_held(warehouse: Path) -> int:
    with Warehouse.open(str(warehouse), read_only=True) as wh:
        return row_counts(wh, ["revisions"])["revisions"]


@pytest.fixture
def held_ingest(tmp_path: Path) -> Iterator[tuple[Path, Path, Path]]:
    """A manifest whose run holds after three committed batches while ``hold`` exists; the
    warehouse; and the hold file (removed at the end, whatever happened)."""
    hold = tmp_path / "hold"
    hold.touch()
    manifest = write_manifest(tmp_path, MANIFEST + f'hold_while = "{hold}"\n')
    yield manifest, tmp_path / "w.duckdb", hold
    hold.unlink(missing_ok=True)


@pytest.mark.parametrize(
    ("command", "signum"),
    [("ingest", signal.SIGINT), ("ingest", signal.SIGTERM), ("refresh", signal.SIGINT)],
    ids=["ingest-SIGINT", "ingest-SIGTERM", "refresh-SIGINT"],
)
def test_a_signalled_run_exits_with_its_code_and_is_recorded_interrupted_then_resumed(
    held_ingest: tuple[Path, Path, Path], command: str, signum: signal.Signals
) -> None:
    manifest, warehouse, hold = held_ingest
    args = ["--out", warehouse.with_name("out.ndjson")] if command == "refresh" else []
    process = receipts(command, manifest, "--warehouse", warehouse, "--batch-size", BATCH,
                       *args, synthetic=True)  # fmt: skip
    stderr = signal_when_held(process, hold.with_name("hold.held"), signum)  # 3 batches in
    assert process.returncode == EXIT[signum], stderr
    assert "Aborted!" not in stderr and "failed" not in stderr
    assert stderr.splitlines()[-1] == (
        f"receipts: interrupted by {signum.name}: run 1 committed new {HELD_AFTER:,}; "
        "the next run resumes it"
    )

    (run,) = ledger(warehouse)
    assert run["status"] == "interrupted" and run["finished_at"] is not None
    assert run["counts"]["synthetic"]["new"] == HELD_AFTER == revisions_held(warehouse)
    text = cli("runs", "--warehouse", warehouse).stdout
    assert "interrupted" in text and f"{HELD_AFTER:,}" in text

    hold.unlink()
    resumed = cli(command, manifest, "--warehouse", warehouse, "--batch-size", BATCH, *args)
    assert resumed.exit_code == 0, resumed.output
    assert "completes interrupted run 1" in resumed.stdout
    runs = ledger(warehouse)
    assert [(r["run_id"], r["status"], r["resumes_run"]) for r in runs] == [
        (2, "ok", 1),
        (1, "interrupted", None),
    ]
    # The interrupted run and its resume add up to what the warehouse holds.
    new = [r["counts"]["synthetic"]["new"] for r in runs]
    assert sum(new) == COUNT == revisions_held(warehouse)


def test_a_killed_run_shows_its_counts_so_far(held_ingest: tuple[Path, Path, Path]) -> None:
    """A run that could record nothing (SIGKILL) still shows what its batches committed:
    the counts of an unfinished run are read from its committed progress."""
    manifest, warehouse, hold = held_ingest
    process = receipts("ingest", manifest, "--warehouse", warehouse, "--batch-size", BATCH,
                       synthetic=True)  # fmt: skip
    try:
        wait_for(hold.with_name("hold.held"), process)
        process.kill()
        process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    (run,) = ledger(warehouse)
    assert run["status"] == "interrupted"
    assert run["counts"] == {
        "synthetic": {"new": HELD_AFTER, "changed": 0, "unchanged": 0, "gone": 0, "restored": 0}
    }


def test_runs_shows_a_run_going_on_a_lake_with_its_counts_so_far(
    held_ingest: tuple[Path, Path, Path],
) -> None:
    """On a DuckLake warehouse readers read while a run writes: ``runs`` shows the run
    ``running`` with what its committed batches wrote so far."""
    pytest.importorskip("duckdb_extension_ducklake", reason="needs receipts[lake]: make install")
    manifest, warehouse, hold = held_ingest
    lake = f"ducklake:sqlite:{warehouse.with_name('catalog.sqlite')}"
    data = warehouse.with_name("data")
    process = receipts("ingest", manifest, "--warehouse", lake, "--data-path", data,
                       "--batch-size", BATCH, synthetic=True)  # fmt: skip
    try:
        wait_for(hold.with_name("hold.held"), process)
        going = cli("runs", "--warehouse", lake, "--data-path", data, "--json")
        assert going.exit_code == 0, going.output
        (run,) = json.loads(going.stdout)
        assert run["status"] == "running" and run["finished_at"] is None
        assert run["counts"]["synthetic"]["new"] == HELD_AFTER
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, stderr
    done = cli("runs", "--warehouse", lake, "--data-path", data, "--json")
    (run,) = json.loads(done.stdout)
    assert run["status"] == "interrupted"
    assert run["counts"]["synthetic"]["new"] == HELD_AFTER


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signalled_backfill_is_interrupted_and_its_resume_completes_it(
    tmp_path: Path, signum: signal.Signals
) -> None:
    path = generate(tmp_path / "FLAT_CMPL.zip", 6_000)
    args = ["backfill", "nhtsa", "--file", path, "--kind", "complaints", "--batch-size", 150]
    whole = cli(*args, "--warehouse", tmp_path / "whole.duckdb", "--json")
    assert whole.exit_code == 0, whole.output
    expected = json.loads(whole.stdout)["documents"]["new"]

    warehouse = tmp_path / "w.duckdb"
    process = receipts(*args, "--warehouse", warehouse, "--progress-interval", 0)
    assert process.stderr is not None
    committed = 0
    try:
        for line in process.stderr:
            committed += line.startswith("backfill nhtsa: committed")
            if committed == 2:
                process.send_signal(signum)
                break
        _, rest = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert committed == 2, "the backfill ended before it committed twice"
    assert process.returncode == EXIT[signum], rest
    last = rest.splitlines()[-1]
    assert last.startswith(f"receipts: interrupted by {signum.name}: run 1 committed new ")
    assert last.endswith("; the next run resumes it")

    (run,) = ledger(warehouse)
    assert run["status"] == "interrupted"
    held = revisions_held(warehouse)
    assert 0 < run["counts"]["nhtsa"]["new"] == held < expected
    assert last == f"receipts: interrupted by {signum.name}: run 1 committed new {held:,}; " + (
        "the next run resumes it"
    )

    resumed = cli(*args, "--warehouse", warehouse, "--json")
    assert resumed.exit_code == 0, resumed.output
    report = json.loads(resumed.stdout)
    assert report["resumes_run"] == 1 and report["resumed_after_line"]
    assert held + report["documents"]["new"] == expected == revisions_held(warehouse)
    assert cli(*args, "--warehouse", warehouse).stdout.count("completes interrupted") == 0


def test_duckdb_stopping_a_statement_for_a_signal_is_the_interrupt() -> None:
    """The error DuckDB raises when SIGINT arrives during a statement (on 1.5 a
    ``RuntimeError('Query interrupted')`` caused by the KeyboardInterrupt) and its
    ``InterruptException`` are recognised as the interrupt they are."""
    con = duckdb.connect()
    endless = "SELECT count(*) FROM range(1000000000000) t(i) WHERE i % 7 = 3"
    done = threading.Event()
    raised: list[int] = []

    def first_sigint_only(signum: int, frame: Any) -> None:
        # Python's own handler, but once: the signals sent until the test sees the
        # statement stop must not land in the test itself.
        if not raised:
            raised.append(signum)
            raise KeyboardInterrupt

    def until_done(act: Any) -> threading.Thread:
        def repeat() -> None:
            while not done.wait(0.1):
                act()

        thread = threading.Thread(target=repeat)
        thread.start()
        return thread

    previous = signal.signal(signal.SIGINT, first_sigint_only)
    try:
        sender = until_done(lambda: os.kill(os.getpid(), signal.SIGINT))
        # DuckDB 1.5: RuntimeError('Query interrupted'); other versions may raise their
        # InterruptException or let the KeyboardInterrupt through.
        with pytest.raises((RuntimeError, duckdb.Error, KeyboardInterrupt)) as stopped:
            con.execute(endless).fetchall()
    finally:
        done.set()
        sender.join()
        signal.signal(signal.SIGINT, previous)
    stop = interruption(stopped.value)
    assert stop is not None and stop.signal_name == "SIGINT", repr(stopped.value)

    done.clear()
    interrupter = until_done(con.interrupt)
    try:
        with pytest.raises(duckdb.InterruptException) as interrupted:
            con.execute(endless).fetchall()
    finally:
        done.set()
        interrupter.join()
    assert interruption(interrupted.value) is not None
    assert interruption(duckdb.IOException("disk full")) is None
    assert interruption(RuntimeError("Query failed")) is None


def test_the_exit_codes_of_an_interrupt_are_in_the_help_and_the_docs() -> None:
    text = cli("--help").stdout
    assert "130  interrupted by Ctrl-C (SIGINT)" in text and "143  terminated by SIGTERM" in text
    for page in ("README.md", "docs/operations.md"):
        table = (REPO / page).read_text()
        assert "| 130 | interrupted by Ctrl-C (SIGINT)" in table, page
        assert "| 143 | terminated by SIGTERM" in table, page


def test_an_interrupted_push_says_how_many_mutations_it_applied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real SIGINT (sent by the process to itself once the NDJSON target has committed two
    transactions) stops ``publish``: exit 130, one line with what the push applied, and the
    push ledger shows it interrupted; the next publish sends the rest."""
    manifest = write_manifest(tmp_path, MANIFEST.replace(f"pause_every = {HELD_AFTER}", ""))
    warehouse, out = tmp_path / "w.duckdb", tmp_path / "out.ndjson"
    assert cli("ingest", manifest, "--warehouse", warehouse).exit_code == 0
    committed = []
    commit = NdjsonTarget.commit

    def commit_then_signal(target: NdjsonTarget, transaction: Any) -> Any:
        done = commit(target, transaction)
        committed.append(transaction)
        if len(committed) == 2:
            os.kill(os.getpid(), signal.SIGINT)
        return done

    monkeypatch.setattr(NdjsonTarget, "commit", commit_then_signal)
    result = cli("publish", manifest, "--warehouse", warehouse, "--out", out)
    assert result.exit_code == 130, result.output
    line = result.stderr.splitlines()[-1]
    assert line.startswith("receipts: interrupted by SIGINT: push 1 applied ")
    assert line.endswith(
        f" of {COUNT:,} mutations (`receipts pushes` shows it); the next publish sends the rest"
    )
    [push] = json.loads(cli("pushes", "--warehouse", warehouse, "--json").stdout)
    assert push["status"] == "interrupted"

    monkeypatch.setattr(NdjsonTarget, "commit", commit)
    again = cli("publish", manifest, "--warehouse", warehouse, "--out", out, "--json")
    assert again.exit_code == 0, again.output
    assert len(out.read_text().splitlines()) == COUNT


def test_an_interrupted_run_is_notified_as_interrupted(
    held_ingest: tuple[Path, Path, Path],
) -> None:
    """The observers hear of an interrupt as what it is: the message says the run was
    interrupted, not that it failed (a real webhook on 127.0.0.1, Apprise's ``json://``)."""
    from tests.observe.receivers import receiver

    manifest, warehouse, _ = held_ingest
    with receiver() as hook:
        process = receipts("ingest", manifest, "--warehouse", warehouse, "--batch-size", BATCH,
                           "--notify", hook.url("json"), synthetic=True)  # fmt: skip
        stderr = signal_when_held(process, manifest.parent / "hold.held")
    assert process.returncode == 130, stderr
    [post] = hook.bodies
    assert post["title"] == "receipts ingest interrupts: the run was interrupted"
    assert post["message"].splitlines()[0].startswith("ingest interrupts: interrupted")
