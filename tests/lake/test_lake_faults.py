"""Faults of a DuckLake warehouse name their cause: a PostgreSQL catalog database without a
lake, a damaged data file, the catalog going away.

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

import duckdb
import pytest

from bench.nhtsa_backfill import generate
from tests.conftest import TEST_PG, write_manifest
from tests.lake_support import REPO, PrivateCluster, clean_env, receipts_argv, start
from warehouse.backends import ROW_GROUP_SIZE
from warehouse.store import Warehouse

pytest.importorskip("duckdb_extension_ducklake", reason="needs receipts[lake]: make install")

VECTOR_SIZE = 2048  # DuckDB's STANDARD_VECTOR_SIZE: the most rows one chunk holds


def run(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        receipts_argv(*args),
        cwd=REPO,
        capture_output=True,
        text=True,
        env=clean_env(RECEIPTS_LOCK_WAIT="0"),
        timeout=300,
    )


def test_a_postgres_database_without_a_lake_is_no_warehouse(
    lake_postgres: Callable[[], str], tmp_path: Path
) -> None:
    """As a SQLite catalog that does not exist: "no warehouse at ...", not DuckDB's words;
    and the reader leaves the database as it was (a writer may still create the lake)."""
    url = f"ducklake:postgres:dbname={lake_postgres()} {TEST_PG}"
    for args in (("runs",), ("verify",), ("show", "synthetic/record/a-1")):
        done = run(*args, "--warehouse", url)
        assert done.returncode == 1, done.stderr
        assert done.stderr.startswith(f"receipts: no warehouse at {url}: run `receipts ingest"), (
            done.stderr
        )
    sqlite = run("runs", "--warehouse", f"ducklake:sqlite:{tmp_path / 'none.sqlite'}")
    assert sqlite.stderr.startswith("receipts: no warehouse at ducklake:sqlite:")


MANIFEST = """
[corpus]
name = "alpha"
namespace = "alpha"

[[synthetic]]
name = "alpha"
count = 600
size = 200
seed = 0
complete = true
pause_every = 100
hold_while = "{hold}"
"""


@pytest.fixture
def cluster() -> Iterator[PrivateCluster]:
    if not PrivateCluster.available():
        pytest.skip("needs root and PostgreSQL 15's initdb to start a cluster of its own")
    made = PrivateCluster()
    try:
        made.start()
        made.create_database("catalog")
        yield made
    finally:
        made.remove()


def _lost(url: str, proc: subprocess.Popen[str]) -> None:
    """The run failed with one line naming the catalog: no abort, no internal error."""
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, err  # an abort was -6 (SIGABRT) or 134
    assert f"receipts: lost the connection to the lake's catalog {url}: " in err, err
    assert "run the same command again" in err
    assert "terminate called" not in err and "internal error" not in err, err


def test_the_catalog_going_away_mid_ingest_then_a_rerun(
    cluster: PrivateCluster, tmp_path: Path
) -> None:
    url = f"ducklake:postgres:dbname=catalog {cluster.dsn}"
    hold = tmp_path / "hold"
    hold.touch()
    manifest = write_manifest(tmp_path, MANIFEST.format(hold=hold))
    args = ("ingest", manifest, "--warehouse", url, "--batch-size", 100)
    writer = start(*args, "--data-path", tmp_path / "data")
    deadline = time.monotonic() + 120
    while not Path(f"{hold}.held").exists():  # its first batch committed
        assert writer.poll() is None and time.monotonic() < deadline, writer.communicate()
        time.sleep(0.1)
    cluster.stop()
    hold.unlink()
    _lost(url, writer)

    cluster.start()
    again = run(*args, "--json")
    assert again.returncode == 0, again.stderr
    counts = json.loads(again.stdout)["counts"]["synthetic"]
    assert (counts["unchanged"], counts["new"]) == (100, 500)
    verified = run("verify", "--warehouse", url, "--json")
    assert verified.returncode == 0, verified.stderr
    assert json.loads(verified.stdout)["checked"] == 600


def test_the_catalog_going_away_mid_backfill_then_a_rerun(
    cluster: PrivateCluster, tmp_path: Path
) -> None:
    url = f"ducklake:postgres:dbname=catalog {cluster.dsn}"
    flat = generate(tmp_path / "FLAT_CMPL.zip", 60_000, seed=1)
    args = ("backfill", "nhtsa", "--file", flat, "--kind", "complaints", "--warehouse", url)
    writer = start(*args, "--data-path", tmp_path / "data")
    deadline = time.monotonic() + 120
    while True:  # stopped once the ledger shows the backfill running
        assert writer.poll() is None and time.monotonic() < deadline, writer.communicate()
        listed = run("runs", "--warehouse", url, "--json")
        if listed.returncode == 0 and any(
            r["status"] == "running" for r in json.loads(listed.stdout)
        ):
            break
        time.sleep(0.2)
    cluster.stop()
    _lost(url, writer)

    cluster.start()
    again = run(*args, "--json")
    assert again.returncode == 0, again.stderr
    documents = json.loads(again.stdout)["documents"]
    once = run("verify", "--warehouse", url, "--json")
    assert once.returncode == 0, once.stderr
    assert json.loads(once.stdout)["checked"] == documents["new"] + documents["unchanged"]


CORPUS = """
[corpus]
name = "{name}"
namespace = "{name}"

[[synthetic]]
name = "{name}"
count = 40
size = 200
seed = {seed}
complete = true
"""


@pytest.fixture
def two_runs(tmp_path: Path) -> tuple[str, Path]:
    """A SQLite-catalog lake written by two runs (two data files per table), and its data
    path's table folders."""
    url = f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}"
    for seed, name in enumerate(("alpha", "beta")):
        manifest = write_manifest(tmp_path, CORPUS.format(name=name, seed=seed), f"{name}.toml")
        made = run("ingest", manifest, "--warehouse", url, "--data-path", tmp_path / "data")
        assert made.returncode == 0, made.stderr
    return url, tmp_path / "data" / "main"


def _damaged(done: subprocess.CompletedProcess[str], table: str, path: Path) -> None:
    assert done.returncode == 1, done.stderr
    assert f"receipts: table {table}'s data file {path} is " in done.stderr, done.stderr
    assert "the lake's data path was damaged" in done.stderr
    assert "restore the file" in done.stderr and "internal error" not in done.stderr


def test_verify_reads_every_data_file_two_swapped_are_found(two_runs: tuple[str, Path]) -> None:
    url, tables = two_runs
    assert run("verify", "--warehouse", url).returncode == 0
    first, second = sorted((tables / "snapshots").glob("*.parquet"))
    held = first.read_bytes()
    first.write_bytes(second.read_bytes())
    second.write_bytes(held)
    # Every row still hashes to its address: only the catalog's record of each file tells.
    done = run("verify", "--warehouse", url, "--json")
    assert done.returncode == 1, done.stderr
    problems = json.loads(done.stdout)["problems"]
    assert {(p["table"], p["path"]) for p in problems} == {
        ("snapshots", str(first)),
        ("snapshots", str(second)),
    }
    assert all("where the catalog recorded" in p["message"] for p in problems)


def test_a_deleted_memberships_file_is_named_by_verify_and_every_reader(
    two_runs: tuple[str, Path],
) -> None:
    url, tables = two_runs
    gone = sorted((tables / "memberships").glob("*.parquet"))[0]
    gone.unlink()
    verified = run("verify", "--warehouse", url, "--json")
    assert verified.returncode == 1
    (problem,) = json.loads(verified.stdout)["problems"]
    assert (problem["table"], problem["path"]) == ("memberships", str(gone))
    assert "is missing: the lake's data path was damaged" in problem["message"]
    for args in (("ls", "--corpus", "alpha"), ("as-of", "1", "--corpus", "alpha"), ("drift",)):
        _damaged(run(*args, "--warehouse", url), "memberships", gone)


def test_a_truncated_or_altered_snapshots_file_is_named(two_runs: tuple[str, Path]) -> None:
    url, tables = two_runs
    damaged = sorted((tables / "snapshots").glob("*.parquet"))[0]
    whole = damaged.read_bytes()
    damaged.write_bytes(whole[: len(whole) // 2])
    _damaged(run("show", "synthetic/record/alpha-1", "--warehouse", url), "snapshots", damaged)
    verified = run("verify", "--warehouse", url)
    assert verified.returncode == 1 and str(damaged) in verified.stdout
    # The same length, its footer overwritten.
    damaged.write_bytes(whole[:-40] + b"\0" * 40)
    _damaged(run("show", "synthetic/record/alpha-1", "--warehouse", url), "snapshots", damaged)
    verified = run("verify", "--warehouse", url)
    assert verified.returncode == 1 and "cannot be read" in verified.stdout


@pytest.mark.parametrize("destination", ["lake", "file"])
def test_an_unfinished_copy_is_completed_by_running_it_again(
    tmp_path: Path, destination: str
) -> None:
    source = tmp_path / "source.duckdb"
    manifest = write_manifest(tmp_path, CORPUS.format(name="alpha", seed=0))
    assert run("ingest", manifest, "--warehouse", source).returncode == 0
    data = tmp_path / "copy-data"
    target = (
        f"ducklake:sqlite:{tmp_path / 'copy.sqlite'}"
        if destination == "lake"
        else str(tmp_path / "copy.duckdb")
    )
    # What a copy killed after making its schema left, when it made it in a transaction of
    # its own: every table, not one row, schema version 0.
    half = Warehouse.open(target, data_path=str(data), migrate=False)
    with half, half._transaction():
        half.create_schema()
    for args in (("runs",), ("migrate",), ("ingest", manifest)):
        done = run(*args, "--warehouse", target)
        assert done.returncode == 1, done.stderr
        assert "holds the empty tables of a `receipts copy` that did not finish" in done.stderr
        assert f"run the same `receipts copy --to {target}` again" in done.stderr

    again = run("copy", "--warehouse", source, "--to", target, "--to-data-path", data)
    assert again.returncode == 0, again.stderr
    assert run("migrate", "--check", "--warehouse", target).returncode == 0
    verified = run("verify", "--warehouse", target, "--json")
    assert json.loads(verified.stdout)["checked"] == 40
    refused = run("copy", "--warehouse", source, "--to", target)
    assert refused.returncode == 2 and "already has tables" in refused.stderr


@pytest.fixture(scope="module")
def backfilled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A DuckDB file holding a backfill of about 19,000 documents (more rows in each of its
    large tables than a row group of :data:`ROW_GROUP_SIZE`)."""
    folder = tmp_path_factory.mktemp("backfilled")
    flat = generate(folder / "FLAT_CMPL.zip", 25_000, seed=1)
    source = folder / "source.duckdb"
    made = run("backfill", "nhtsa", "--file", flat, "--kind", "complaints", "--warehouse", source)
    assert made.returncode == 0, made.stderr
    return source


def test_a_killed_copy_is_completed_by_running_it_again(backfilled: Path, tmp_path: Path) -> None:
    lake = f"ducklake:sqlite:{tmp_path / 'copy.sqlite'}"
    args = ("copy", "--warehouse", backfilled, "--to", lake)
    data = tmp_path / "copy-data"
    copying = start(*args, "--to-data-path", data)
    deadline = time.monotonic() + 120
    while not any(data.rglob("*.parquet")):  # killed once its transaction writes rows
        assert copying.poll() is None and time.monotonic() < deadline, copying.communicate()
        time.sleep(0.02)
    copying.send_signal(signal.SIGKILL)
    copying.communicate(timeout=300)
    assert copying.returncode == -signal.SIGKILL
    # Nothing committed but the lake's catalog itself: no table to mistake for a warehouse.
    assert "schema version 0" in run("runs", "--warehouse", lake).stderr
    again = run(*args, "--json")
    assert again.returncode == 0, again.stderr
    verified = run("verify", "--warehouse", lake, "--json")
    assert verified.returncode == 0, verified.stderr
    assert json.loads(verified.stdout)["checked"] == json.loads(again.stdout)["rows"]["snapshots"]


def test_copy_into_a_lake_writes_bounded_row_groups(backfilled: Path, tmp_path: Path) -> None:
    """DuckLake buffers a whole Parquet row group while writing it (122,880 rows by default):
    a copy of 100,000 documents into a new lake ran out of memory at the default limit on
    its snapshots, and so did ``maintain`` merging a backfill's 250 files. Both now have the
    lake write row groups of 16,384 rows; here a table larger than that is copied, and no
    row group of the lake's files is larger by more than one vector. (DuckDB's Parquet writer
    treats the size as a minimum: it closes a row group after the chunk that reaches it, and a
    chunk holds at most a vector of 2,048 rows, so a row group of 18,030 rows is allowed; one
    of 122,880 is not.) (At 100,000 documents: see docs/backends.md.)"""
    lake = f"ducklake:sqlite:{tmp_path / 'copy.sqlite'}"
    data = tmp_path / "copy-data"
    copied = run("copy", "--warehouse", backfilled, "--to", lake, "--to-data-path", data, "--json")
    assert copied.returncode == 0, copied.stderr
    assert json.loads(copied.stdout)["rows"]["snapshots"] > ROW_GROUP_SIZE
    files = [str(p) for p in data.rglob("*.parquet")]
    with duckdb.connect() as con:
        largest = con.execute(
            "SELECT max(row_group_num_rows) FROM parquet_metadata($files)", {"files": files}
        ).fetchone()
    assert largest is not None and ROW_GROUP_SIZE <= largest[0] < ROW_GROUP_SIZE + VECTOR_SIZE
    maintained = run("maintain", "--warehouse", lake)
    assert maintained.returncode == 0, maintained.stderr
