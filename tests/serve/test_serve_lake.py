"""``receipts serve`` on a DuckLake warehouse: the pages read the lake while an ingest is
writing it (a DuckDB file would answer 503), and each request sees what was committed."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from pipelines.serve.app import create_app
from tests.conftest import REPO, cli, write_manifest
from tests.serve import served

pytest.importorskip("duckdb")

MORE = """
[corpus]
name = "more"
namespace = "more"

[[synthetic]]
name = "beta"
count = 4
pause_every = 2
hold_while = "{hold}"
"""


def test_a_lake_is_served_while_a_writer_writes(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    lake = f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}"
    copied = cli(
        "copy",
        "--to",
        lake,
        "--to-data-path",
        tmp_path / "data",
        "--warehouse",
        served.shared(tmp_path_factory),
    )
    assert copied.exit_code == 0, copied.output
    client = TestClient(create_app(lake))
    assert client.get("/index.json").json()["backend"] != "duckdb"
    edited = client.get("/documents/nhtsa/complaint/11561421.json").json()
    assert [r["revision"] for r in edited["revisions"]] == [1, 2]
    # an ingest, held half-way with its first batch committed, writes the lake meanwhile
    hold = tmp_path / "hold"
    hold.touch()
    manifest = write_manifest(tmp_path, MORE.format(hold=hold), "more.toml")
    command = [sys.executable, "-m", "bench.synthetic_source", "ingest", str(manifest)]
    with subprocess.Popen(
        [*command, "--warehouse", lake], cwd=REPO, stderr=subprocess.PIPE, text=True
    ) as writer:
        try:
            deadline = time.monotonic() + 120
            while not Path(f"{hold}.held").exists():
                assert writer.poll() is None, writer.stderr.read() if writer.stderr else ""
                assert time.monotonic() < deadline, "the ingest never got to its pause"
                time.sleep(0.1)
            assert client.get("/").status_code == 200
            diff = client.get("/documents/nhtsa/complaint/11561421/diff?from=1&to=2")
            assert diff.status_code == 200
            running = client.get("/index.json").json()["runs"][0]
            assert running["manifest"] == "more" and running["status"] == "running"
        finally:
            hold.unlink()
            assert writer.wait(timeout=120) == 0
    corpora = {c["corpus"]: c["members"] for c in client.get("/index.json").json()["corpora"]}
    assert corpora["more"] == 4  # each request reads the lake as it is now
