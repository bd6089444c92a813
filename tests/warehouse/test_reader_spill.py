"""Each read-only connection to a DuckDB file spills to a directory of its own: several
readers may hold one file at once (``serve`` beside an ``export``), and two DuckDB databases
spilling into one directory read each other's blocks, DuckDB naming its spill files the same
in each (two readers sorting more than their memory limit in ``<file>.tmp`` at once both
failed: "Could not read enough bytes from file .../duckdb_temp_storage_DEFAULT-0.tmp")."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb
import pytest

from tests.conftest import REPO
from tests.spill_checks import assert_each_spills_apart
from warehouse.store import Warehouse

# A reader that sorts the table ``spilled`` (too big for its memory limit) in an order of
# its own, and prints a digest of the rows in that order.
_READER = """
import hashlib, sys
from warehouse.store import Warehouse

with Warehouse.open(sys.argv[1], read_only=True) as wh:
    rows = wh._connection_for_tests().execute(
        "SELECT s FROM spilled ORDER BY md5(s || $salt)", {"salt": sys.argv[2]}
    ).fetchall()
print(hashlib.sha256("".join(s for (s,) in rows).encode()).hexdigest())
"""


def test_each_reader_of_a_file_spills_to_a_directory_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    path = tmp_path / "w.duckdb"
    with Warehouse.open(str(path)) as writer:
        assert writer._scalar("SELECT current_setting('temp_directory')") == f"{path}.tmp"
    first = Warehouse.open(str(path), read_only=True)
    second = Warehouse.open(str(path), read_only=True)
    assert_each_spills_apart(first, second, temporary, "receipts-read-")
    assert list(temporary.iterdir()) == []


def test_two_readers_spilling_at_once_read_every_row(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    Warehouse.open(str(path)).close()
    con = duckdb.connect(str(path))
    con.execute(
        "CREATE TABLE spilled AS SELECT md5(i::VARCHAR) || md5((i * 7)::VARCHAR) "
        "|| repeat('x', 40) AS s FROM range(1000000) r(i)"
    )
    expected = {}
    for salt in ("a", "b"):
        rows = con.execute("SELECT s FROM spilled ORDER BY md5(s || $salt)", {"salt": salt})
        text = "".join(s for (s,) in rows.fetchall())
        expected[salt] = hashlib.sha256(text.encode()).hexdigest()
    con.close()
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "RECEIPTS_DUCKDB_MEMORY_LIMIT": "64MB",
        "RECEIPTS_DUCKDB_THREADS": "1",
    }
    readers = {
        salt: subprocess.Popen(
            [sys.executable, "-c", _READER, str(path), salt],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=tmp_path,
        )
        for salt in ("a", "b")
    }
    for salt, reader in readers.items():
        out, err = reader.communicate(timeout=300)
        assert reader.returncode == 0, err[-2000:]
        assert out.strip() == expected[salt]
    assert not Path(f"{path}.tmp").exists()
