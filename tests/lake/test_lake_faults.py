"""Faults of a DuckLake warehouse name their cause: a PostgreSQL catalog database without a
lake, a damaged data file, the catalog going away.

Needs ``receipts[lake]`` (``make install``) and, for PostgreSQL, a server at
``$RECEIPTS_TEST_PG`` (default ``host=127.0.0.1 user=postgres``); skipped otherwise.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import TEST_PG
from tests.lake_support import REPO, clean_env, receipts_argv

pytest.importorskip("duckdb_extension_ducklake", reason="needs receipts[lake]: make install")


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
