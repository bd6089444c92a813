"""A DuckLake warehouse with real processes, on a SQLite and on a PostgreSQL catalog: writers
of different corpora side by side with exact counts; a second writer of one corpus told who
holds it; readers during a write; a writer killed with SIGKILL, then re-run.

Needs ``receipts[lake]`` (``make install``) and, for PostgreSQL, a server at
``$RECEIPTS_TEST_PG`` (default ``host=127.0.0.1 user=postgres``); skipped otherwise.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import TEST_PG, write_manifest
from tests.lake_support import REPO, clean_env, receipts_argv, start

lake = pytest.importorskip("duckdb_extension_ducklake", reason="needs receipts[lake]: make install")

MANIFEST = """
[corpus]
name = "{name}"
namespace = "{name}"

[[synthetic]]
name = "{name}"
count = {count}
size = 200
seed = {seed}
complete = true
pause_every = {pause_every}
pause_ms = {pause_ms}
"""


@pytest.fixture(params=["sqlite", "postgres"])
def lake_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    if request.param == "sqlite":
        yield f"ducklake:sqlite:{tmp_path / 'cat.sqlite'}", tmp_path / "data"
        return
    create: Callable[[], str] = request.getfixturevalue("lake_postgres")
    dbname = create()  # skips where there is no PostgreSQL (CI has one: there it fails)
    yield f"ducklake:postgres:dbname={dbname} {TEST_PG}", tmp_path / "data"


def corpus(
    tmp_path: Path,
    name: str,
    count: int,
    pause_ms: int = 0,
    seed: int = 0,
    hold: Path | None = None,
) -> Path:
    """A synthetic corpus; with ``hold``, its run stays paused after its first batch of 100
    while that file exists."""
    body = MANIFEST.format(
        name=name,
        count=count,
        seed=seed,
        pause_every=100 if pause_ms or hold else 0,
        pause_ms=pause_ms,
    )
    if hold is not None:
        body += f'hold_while = "{hold}"\n'
    return write_manifest(tmp_path, body, f"{name}.toml")


def run(*args: object, wait: float = 0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        receipts_argv(*args),
        cwd=REPO,
        capture_output=True,
        text=True,
        env=clean_env(RECEIPTS_LOCK_WAIT=str(wait)),
        timeout=300,
    )


def finish(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=300)
    return proc.returncode, out, err


def wait_running(url: str, corpus_name: str, proc: subprocess.Popen[str], hold: Path) -> int:
    """The id of ``corpus_name``'s run once its writer holds at ``hold`` (its first batch
    committed) and the ledger shows it running. (Asked of the ledger only then: each
    ``receipts runs`` costs a process.)"""
    deadline = time.monotonic() + 60
    held = Path(f"{hold}.held")
    while not held.exists():
        assert proc.poll() is None, "the writer exited early"
        assert time.monotonic() < deadline, "the writer never held"
        time.sleep(0.05)
    while time.monotonic() < deadline:
        listed = run("runs", "--warehouse", url, "--json")
        if listed.returncode == 0:
            for row in json.loads(listed.stdout):
                if row["manifest"] == corpus_name and row["status"] == "running":
                    return int(row["run_id"])
        assert proc.poll() is None, "the writer exited early"
        time.sleep(0.2)
    raise AssertionError("the run never showed as running")


@pytest.mark.slow
def test_writers_of_different_corpora_run_side_by_side(
    lake_url: tuple[str, Path], tmp_path: Path
) -> None:
    url, data = lake_url
    alpha = corpus(tmp_path, "alpha", 1500, pause_ms=100)
    beta = corpus(tmp_path, "beta", 1200, pause_ms=100, seed=1)
    first = run("ingest", alpha, "--warehouse", url, "--data-path", data, "--json")
    assert first.returncode == 0, first.stderr  # creates the lake and its schema
    procs = [
        start("refresh", m, "--warehouse", url, "--json", "--out", tmp_path / f"{i}.ndjson")
        for i, m in enumerate((alpha, beta))
    ]
    results = [finish(p) for p in procs]
    for code, _, err in results:
        assert code == 0, err
    reports = [json.loads(out)["run"] for _, out, _ in results]
    assert reports[0]["counts"]["synthetic"]["unchanged"] == 1500
    assert reports[1]["counts"]["synthetic"]["new"] == 1200
    ids = [r["run_id"] for r in json.loads(run("runs", "--warehouse", url, "--json").stdout)]
    assert sorted(ids) == [1, 2, 3]  # no id given twice
    verified = run("verify", "--warehouse", url, "--json")
    assert verified.returncode == 0, verified.stderr
    assert json.loads(verified.stdout)["checked"] == 2700


@pytest.mark.slow
def test_second_writer_of_a_corpus_and_readers_during_a_write(
    lake_url: tuple[str, Path], tmp_path: Path
) -> None:
    url, data = lake_url
    for seed in (0, 1):  # two revisions of the first 100 documents
        first = corpus(tmp_path, "alpha", 100, seed=seed)
        made = run("ingest", first, "--warehouse", url, "--data-path", data)
        assert made.returncode == 0, made.stderr
    # The writer stays paused after its first batch until the readers are done, however
    # slow the machine.
    hold = tmp_path / "hold"
    hold.touch()
    slow = corpus(tmp_path, "alpha", 100 + 8000, seed=1, hold=hold)
    writer = start("ingest", slow, "--warehouse", url, "--batch-size", 100)
    try:
        run_id = wait_running(url, "alpha", writer, hold)

        # The second writer of the corpus fails at once, naming the holder.
        second = run("ingest", slow, "--warehouse", url)
        assert second.returncode == 1
        assert f"warehouse in use by run {run_id} of corpus alpha on" in second.stderr

        # Readers read the last committed snapshot while the writer runs.
        for args in (
            ("runs",),
            ("history", "synthetic/record/alpha-1"),
            ("show", "synthetic/record/alpha-1"),
            ("diff", "synthetic/record/alpha-1"),
            ("as-of", "1"),
            ("drift", "--since", "1"),
            ("drift",),
            ("verify",),
        ):
            done = run(*args, "--warehouse", url)
            assert done.returncode == 0, (args, done.stderr)
        quote = json.loads(run("show", "synthetic/record/alpha-1", "--warehouse", url).stdout)[
            "title"
        ]
        held = run("verify-quote", "synthetic/record/alpha-1", quote, "--warehouse", url)
        assert held.returncode == 0, held.stderr
        assert writer.poll() is None, "the writer finished before the readers were done"
    finally:
        if writer.poll() is None:
            writer.send_signal(signal.SIGTERM)
        finish(writer)


@pytest.mark.slow
def test_sigkill_mid_run_then_rerun_completes_without_duplicates(
    lake_url: tuple[str, Path], tmp_path: Path
) -> None:
    url, data = lake_url
    total = 3000
    # The writer stays paused after its first batch: it is killed once that batch is seen.
    hold = tmp_path / "hold"
    hold.touch()
    slow = corpus(tmp_path, "alpha", total, hold=hold)
    made = run("ingest", corpus(tmp_path, "seed", 1), "--warehouse", url, "--data-path", data)
    assert made.returncode == 0, made.stderr
    writer = start("ingest", slow, "--warehouse", url, "--batch-size", 100)
    try:
        run_id = wait_running(url, "alpha", writer, hold)
        shown = run("show", "synthetic/record/alpha-0", "--warehouse", url)
        assert shown.returncode == 0, shown.stderr  # the first batch is in
        writer.send_signal(signal.SIGKILL)
    finally:
        hold.unlink()  # a writer still running (a failed wait) finishes instead of hanging
        finish(writer)
    assert writer.returncode == -signal.SIGKILL

    listed = run("runs", "--warehouse", url, "--json")
    ledger = json.loads(listed.stdout)
    assert isinstance(ledger, list), (listed.returncode, ledger, listed.stderr)  # not an error
    assert {r["run_id"]: r["status"] for r in ledger}[run_id] == "interrupted"

    rerun = run("ingest", slow, "--warehouse", url, "--json", "--batch-size", 500)
    assert rerun.returncode == 0, rerun.stderr
    report = json.loads(rerun.stdout)
    assert report["resumes_run"] == run_id
    counts = report["counts"]["synthetic"]
    assert counts["new"] + counts["unchanged"] == total and counts["unchanged"] > 0
    verified = json.loads(run("verify", "--warehouse", url, "--json").stdout)
    # Every snapshot once (the seed corpus's one record has the bytes of alpha-0).
    assert verified["checked"] == total


def test_first_writers_at_once_create_the_lake_once(
    lake_url: tuple[str, Path], tmp_path: Path
) -> None:
    """Four writers of different corpora start together on a lake that does not exist yet:
    one creates it, the others wait for it, and every run commits (SQLite once answered
    "database is locked" to the others, PostgreSQL "duplicate key value")."""
    url, data = lake_url
    names = ("alpha", "beta", "gamma", "delta")
    manifests = [corpus(tmp_path, name, 40, seed=i) for i, name in enumerate(names)]
    procs = [
        start("ingest", m, "--warehouse", url, "--data-path", data, "--json") for m in manifests
    ]
    results = [finish(p) for p in procs]
    for code, _, err in results:
        assert code == 0, err
    ledger = json.loads(run("runs", "--warehouse", url, "--json").stdout)
    assert sorted(r["manifest"] for r in ledger) == sorted(names)
    assert sorted(r["run_id"] for r in ledger) == [1, 2, 3, 4]
    verified = run("verify", "--warehouse", url, "--json")
    assert verified.returncode == 0, verified.stderr
    assert json.loads(verified.stdout)["checked"] == 160
