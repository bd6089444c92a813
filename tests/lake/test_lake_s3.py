"""A DuckLake whose data path is object storage (``s3://BUCKET/PREFIX``), against moto's S3
server on 127.0.0.1 (tests/s3_server.py, with authentication on): every command works there,
``copy`` goes from a file to an S3 lake and back with equal digests, and each way S3 fails
(refused or missing credentials, a missing bucket, the endpoint going away mid-run) is one
line, after which a re-run completes exactly. Every request goes to the configured
endpoint."""

from __future__ import annotations

import importlib
import json
import re
import signal
import subprocess
import time
from pathlib import Path
from types import ModuleType

import pytest

from bench.nhtsa_backfill import generate
from tests.conftest import cli, write_manifest
from tests.lake.test_lake_backends import MANIFEST, needs_lake
from tests.lake_support import REPO, clean_env, receipts_argv
from tests.s3_server import BUCKET, Relay, S3Server
from warehouse.digests import table_digests
from warehouse.errors import WarehouseError
from warehouse.object_store import describe
from warehouse.store import Warehouse

pytestmark = [pytest.mark.lake, needs_lake]


def _prefix(s3_path: str) -> str:
    return s3_path.removeprefix(f"s3://{BUCKET}/")


def _ok(*args: object) -> str:
    done = cli(*args)
    assert done.exit_code == 0, (args, done.stderr[-2000:])
    return done.stdout


@pytest.mark.slow
def test_every_command_on_an_s3_data_path(
    s3_path: str, s3_server: S3Server, tmp_path: Path
) -> None:
    lake = f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}"
    manifest = tmp_path / "m.toml"
    for seed in (0, 1):  # two revisions of each document
        write_manifest(tmp_path, MANIFEST.format(count=40, seed=seed))
        _ok("ingest", manifest, "--warehouse", lake, "--data-path", s3_path)
    flat = generate(tmp_path / "FLAT_CMPL.zip", 2000, seed=1)
    backfill = ["backfill", "nhtsa", "--file", flat, "--kind", "complaints", "--warehouse", lake]
    first = json.loads(_ok(*backfill, "--json"))["documents"]
    assert first["new"] > 0
    again = json.loads(_ok(*backfill, "--json"))["documents"]
    assert again["new"] == 0 and again["unchanged"] == first["new"]

    # The data files are in the bucket, none on disk.
    keys = s3_server.keys(_prefix(s3_path))
    assert sum(key.endswith(".parquet") for key in keys) >= 5
    assert not list(tmp_path.rglob("*.parquet"))

    doc = "synthetic/record/a-1"
    history = json.loads(_ok("history", doc, "--warehouse", lake, "--json"))
    assert len(history["revisions"]) == 2
    for args in (
        ("runs",),
        ("ls",),
        ("show", doc),
        ("diff", doc),
        ("as-of", "1"),
        ("drift",),
        ("query", "SELECT count(*) FROM revisions"),
    ):
        _ok(*args, "--warehouse", lake)
    verified = json.loads(_ok("verify", "--warehouse", lake, "--json"))
    assert verified["checked"] == 80 + first["new"]

    out = tmp_path / "export"
    _ok("export", "--warehouse", lake, "--out", out)
    assert (out / "revisions.parquet").stat().st_size > 0

    report = json.loads(_ok("maintain", "--warehouse", lake, "--keep-days", 0, "--json"))
    assert report["snapshots_after"] < report["snapshots_before"]
    after = json.loads(_ok("history", doc, "--warehouse", lake, "--json"))
    assert after == history
    assert (
        json.loads(_ok("verify", "--warehouse", lake, "--json"))["checked"] == verified["checked"]
    )


@pytest.mark.slow
def test_copy_from_a_file_to_an_s3_lake_and_back_keeps_every_digest(
    s3_path: str, tmp_path: Path
) -> None:
    source = tmp_path / "w.duckdb"
    manifest = tmp_path / "m.toml"
    for seed in (0, 1):
        write_manifest(tmp_path, MANIFEST.format(count=40, seed=seed))
        _ok("ingest", manifest, "--warehouse", source)
    lake = f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}"
    there = _ok("copy", "--warehouse", source, "--to", lake, "--to-data-path", s3_path)
    assert "every table's digest matches" in there
    back = tmp_path / "back.duckdb"
    _ok("copy", "--warehouse", lake, "--to", back)
    with Warehouse.open(str(source), read_only=True) as a, Warehouse.open(str(back)) as b:
        assert table_digests(a) == table_digests(b)


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"AWS_SECRET_ACCESS_KEY": "not-the-secret"}, "refused the credentials"),
        ({"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""}, "set AWS_ACCESS_KEY_ID"),
        ({"bucket": "no-such-bucket"}, "does not exist"),
    ],
    ids=["wrong-credentials", "no-credentials", "missing-bucket"],
)
def test_an_s3_failure_at_the_start_is_one_line_and_writes_nothing(
    change: dict[str, str],
    says: str,
    s3_path: str,
    s3_server: S3Server,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lake = f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}"
    manifest = write_manifest(tmp_path, MANIFEST.format(count=40, seed=0))
    data_path = s3_path.replace(BUCKET, change.get("bucket", BUCKET))
    with monkeypatch.context() as bad:
        for name, value in change.items():
            if name.startswith("AWS_"):
                bad.setenv(name, value)
        failed = cli("ingest", manifest, "--warehouse", lake, "--data-path", data_path)
    assert failed.exit_code == 1
    (line,) = failed.stderr.strip().splitlines()
    assert says in line and s3_server.secret not in line
    assert s3_server.keys(_prefix(s3_path)) == []

    done = cli("ingest", manifest, "--warehouse", lake, "--data-path", s3_path, "--json")
    assert done.exit_code == 0, done.stderr
    assert json.loads(done.stdout)["counts"]["synthetic"]["new"] == 40


@pytest.mark.slow
def test_the_endpoint_going_away_mid_run_then_a_rerun_completes_exactly(
    s3_path: str, s3_server: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    relay = Relay(s3_server.port)
    monkeypatch.setenv("AWS_ENDPOINT_URL", relay.endpoint)
    lake = f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}"
    total = 3000
    seed = write_manifest(tmp_path, MANIFEST.format(count=1, seed=0), "seed.toml")
    _ok("ingest", seed, "--warehouse", lake, "--data-path", s3_path)
    hold = tmp_path / "hold"
    hold.touch()
    body = MANIFEST.format(count=total, seed=0).replace('name = "a"', 'name = "b"')
    body += f'pause_every = 100\nhold_while = "{hold}"\n'
    manifest = write_manifest(tmp_path, body.replace('"alpha"', '"beta"'), "beta.toml")
    writer = subprocess.Popen(
        receipts_argv("ingest", manifest, "--warehouse", lake, "--batch-size", 100),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(),
    )
    try:
        deadline = time.monotonic() + 120
        while cli("show", "synthetic/record/b-0", "--warehouse", lake).exit_code != 0:
            assert writer.poll() is None and time.monotonic() < deadline, writer.stderr
            time.sleep(0.2)
        relay.cut()  # the endpoint goes away with the writer's next batch to send
        hold.unlink()
        _, err = writer.communicate(timeout=240)
    finally:
        if writer.poll() is None:
            writer.send_signal(signal.SIGKILL)
            writer.communicate()
    assert writer.returncode == 1, err
    assert f"cannot reach the object storage at {relay.endpoint} " in err.strip().splitlines()[-1]
    assert "internal error" not in err

    relay.restore()
    rerun = cli("ingest", manifest, "--warehouse", lake, "--json")
    assert rerun.exit_code == 0, rerun.stderr
    counts = json.loads(rerun.stdout)["counts"]["synthetic"]
    assert counts["new"] + counts["unchanged"] == total and counts["unchanged"] >= 100
    verified = json.loads(_ok("verify", "--warehouse", lake, "--json"))
    assert verified["checked"] == total  # b-0 has the bytes of the seed's a-0
    relay.cut()


def test_every_request_goes_to_the_configured_endpoint(
    s3_path: str, s3_server: S3Server, tmp_path: Path
) -> None:
    """DuckDB's HTTP log of a write and a read: no URL but the endpoint's (never AWS)."""
    lake = f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}"
    manifest = write_manifest(tmp_path, MANIFEST.format(count=40, seed=0))
    _ok("ingest", manifest, "--warehouse", lake, "--data-path", s3_path)
    with Warehouse.open(lake, read_only=True) as wh:
        con = wh._connection_for_tests()
        con.execute("CALL enable_logging('HTTP')")
        assert len(con.execute("SELECT * FROM snapshots").fetchall()) == 40
        logged = con.execute("SELECT message FROM duckdb_logs WHERE type = 'HTTP'").fetchall()
    urls = [re.search(r"'url': '([^']+)'", message).group(1) for (message,) in logged]  # type: ignore[union-attr]
    assert urls, "no HTTP request was logged"
    for url in urls:
        assert url.startswith(f"{s3_server.endpoint}/{BUCKET}/"), url


def test_without_httpfs_the_line_names_httpfs(
    s3_path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import_module = importlib.import_module

    def without_httpfs(name: str, package: str | None = None) -> ModuleType:
        if name == "duckdb_extension_httpfs":
            raise ImportError(name)
        return import_module(name, package)

    monkeypatch.setattr(importlib, "import_module", without_httpfs)
    monkeypatch.setenv("HOME", str(tmp_path))  # nothing in DuckDB's own extension folder
    with pytest.raises(WarehouseError, match=r"s3:// data path needs DuckDB's httpfs extension"):
        Warehouse.open(f"ducklake:sqlite:{tmp_path / 'c.sqlite'}", data_path=s3_path)


def test_only_a_failed_http_request_is_taken_for_object_storage() -> None:
    """The catalog's own failures (its server gone) are not the object storage's."""
    catalog_gone = (
        "IO Error: Failed to query most recent snapshot for DuckLake: Unable to connect to "
        'Postgres at "dbname=r host=127.0.0.1": Connection refused'
    )
    assert describe(catalog_gone) is None
    cut = "IO Error: Could not connect to server error for HTTP GET to 'http://127.0.0.1:9/b/k'"
    assert (describe(cut) or "").startswith("cannot reach the object storage at AWS S3")
