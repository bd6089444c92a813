"""Each connection to a DuckDB file spills to a directory of its own: several readers may
hold one file at once (``serve`` beside an ``export``), and two DuckDB databases
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
from warehouse.lock import sidecar_path
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
        spill = Path(writer._scalar("SELECT current_setting('temp_directory')"))
        assert spill.parent == Path(f"{path}.tmp") and spill.name.startswith("receipts-write-")
    first = Warehouse.open(str(path), read_only=True)
    second = Warehouse.open(str(path), read_only=True)
    assert_each_spills_apart(first, second, temporary, "receipts-read-")
    assert list(temporary.iterdir()) == []


# A writer that prints where it spills, then holds the warehouse until its input ends.
_WRITER = """
import sys
from warehouse.store import Warehouse

with Warehouse.open(sys.argv[1]) as wh:
    print(wh._scalar("SELECT current_setting('temp_directory')"), flush=True)
    sys.stdin.read()
"""


def test_two_writers_of_files_at_one_path_spill_apart(tmp_path: Path) -> None:
    """A run still writing to a file deleted meanwhile (with its lock) and a run on a new
    file at the same path: each spills to a directory of its own under ``<file>.tmp``
    (sharing ``<file>.tmp`` itself, DuckDB crashed one of two such processes sorting beyond
    their memory limit), each removed when its writer closes, then ``<file>.tmp``."""
    path = tmp_path / "w.duckdb"
    first = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert first.stdin is not None and first.stdout is not None
    try:
        first_spill = Path(first.stdout.readline().strip())
        for gone in (path, sidecar_path(path), Path(f"{path}.wal")):
            gone.unlink(missing_ok=True)
        with Warehouse.open(str(path)) as second:
            second_spill = Path(second._scalar("SELECT current_setting('temp_directory')"))
            assert second_spill != first_spill
            for spill in (first_spill, second_spill):
                assert spill.parent == Path(f"{path}.tmp") and spill.is_dir()
                assert spill.name.startswith("receipts-write-")
        assert not second_spill.exists() and first_spill.is_dir()
    finally:
        first.stdin.close()
        first.stdout.close()
        assert first.wait(timeout=60) == 0
    assert not Path(f"{path}.tmp").exists()


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
