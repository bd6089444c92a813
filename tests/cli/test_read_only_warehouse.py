"""A warehouse its reader cannot write to (a read-only folder and file, as on a read-only
mount) is readable by every reading command, which writes nothing beside it.

The commands run as another user (``nobody``) when the suite runs as root, since root
writes through any permission bits; otherwise the folder and file are made read-only.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO, write_manifest

MANIFEST = """
[corpus]
name = "ro"
namespace = "ro"

[[synthetic]]
name = "a"
count = 3
size = 100
"""
DOC = "synthetic/record/a-1"
NOBODY = 65534


def _receipts(*args: object, as_other_user: bool) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "bench.synthetic_source", *map(str, args)]
    if as_other_user:
        ids = [f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
        command = ["setpriv", *ids, *command]
    env = {k: v for k, v in os.environ.items() if not k.startswith("RECEIPTS_")}
    return subprocess.run(
        command, cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.fixture(scope="module")
def read_only() -> Iterator[tuple[Path, bool]]:
    """A warehouse with two runs in a folder the commands cannot write to."""
    as_root = os.geteuid() == 0
    if as_root and shutil.which("setpriv") is None:
        pytest.skip("running as root needs setpriv to read as another user")
    folder = Path(tempfile.mkdtemp(prefix="receipts-ro-"))
    try:
        warehouse = folder / "w.duckdb"
        manifest = write_manifest(folder, MANIFEST)
        for _ in range(2):
            done = _receipts("ingest", manifest, "--warehouse", warehouse, as_other_user=False)
            assert done.returncode == 0, done.stderr
        (folder / "w.duckdb.lock").unlink(missing_ok=True)
        warehouse.chmod(0o444)
        folder.chmod(0o555)
        yield warehouse, as_root
    finally:
        folder.chmod(0o755)
        shutil.rmtree(folder)


READING = [
    ["runs"],
    ["pushes"],
    ["ls"],
    ["search", "record"],
    ["schema"],
    ["history", DOC],
    ["show", DOC],
    ["as-of", "1"],
    ["drift"],
    ["verify"],
    ["verify-quote", DOC, "record 1"],
    ["migrate", "--check"],
]


@pytest.mark.parametrize("args", READING, ids=lambda a: " ".join(a))
def test_every_reading_command_reads_a_read_only_warehouse(
    read_only: tuple[Path, bool], args: list[str]
) -> None:
    warehouse, as_root = read_only
    before = sorted(p.name for p in warehouse.parent.iterdir())
    done = _receipts(*args, "--warehouse", warehouse, as_other_user=as_root)
    assert done.returncode == 0, (args, done.stderr)
    assert "internal error" not in done.stderr
    assert sorted(p.name for p in warehouse.parent.iterdir()) == before


def test_export_of_a_read_only_warehouse_writes_only_its_output(
    read_only: tuple[Path, bool],
) -> None:
    warehouse, as_root = read_only
    out = Path(tempfile.mkdtemp(prefix="receipts-ro-out-"))
    out.chmod(0o777)
    try:
        done = _receipts(
            "export", "--warehouse", warehouse, "--out", out / "x", as_other_user=as_root
        )
        assert done.returncode == 0, done.stderr
        assert (out / "x" / "revisions.parquet").exists()
    finally:
        shutil.rmtree(out)
