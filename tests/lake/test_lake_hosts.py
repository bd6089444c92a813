"""Several hosts on one lake: writer processes that present different host names (each in
a UTS namespace of its own, ``unshare --uts``, as two machines would) share one PostgreSQL
catalog and one ``s3://`` data path (moto's S3 server, tests/s3_server.py). Different
corpora refresh side by side while a third process reads, with exact counts; a writer
killed with SIGKILL mid-run is completed by a re-run on the other host; the catalog's
PostgreSQL going away mid-run (a cluster of this module's own, stopped and started again)
fails the run naming the catalog, and a re-run completes it exactly."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import pg_cluster
from tests.conftest import cli
from tests.lake.test_lake_backends import needs_lake
from tests.lake.test_lake_concurrency import corpus as synthetic_corpus
from tests.lake_support import REPO, clean_env, receipts_argv
from tests.pg_cluster import PgCluster
from tests.s3_server import BUCKET, S3Server

pytestmark = [
    pytest.mark.lake,
    pytest.mark.slow,
    needs_lake,
    pytest.mark.skipif(
        pg_cluster.available() is not None or shutil.which("unshare") is None,
        reason=f"{pg_cluster.available() or 'needs unshare'}",
    ),
]


@pytest.fixture(scope="module")
def cluster() -> Iterator[PgCluster]:
    made = PgCluster()
    yield made
    made.remove()


@pytest.fixture
def lake(cluster: PgCluster, s3_path: str) -> str:
    """A new lake: a database of its own in the cluster, its data path in the bucket."""
    return f"ducklake:postgres:{cluster.create_database(f'hosts_{uuid.uuid4().hex[:10]}')}"


def corpus(
    folder: Path, name: str, count: int, pause_ms: int = 0, hold: Path | None = None
) -> Path:
    """A synthetic corpus; documents of ``beta`` differ from those of the others, whose
    ``N``-th documents have the same bytes (so ``seed``'s one document is ``alpha-0``'s)."""
    seed = 1 if name == "beta" else 0
    return synthetic_corpus(folder, name, count, pause_ms=pause_ms, seed=seed, hold=hold)


def on_host(host: str, *args: object) -> subprocess.Popen[str]:
    """receipts as a process whose host name is ``host`` (its own UTS namespace)."""
    argv = ["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', host]
    return subprocess.Popen(
        [*argv, *receipts_argv(*args)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(RECEIPTS_LOCK_WAIT="0"),
    )


def run(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        receipts_argv(*args), cwd=REPO, capture_output=True, text=True, env=clean_env(), timeout=300
    )


def finish(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    return proc.returncode, out, err


def until_stored(
    lake: str, doc_id: str, writer: subprocess.Popen[str], hold: Path | None = None
) -> None:
    """Until ``doc_id`` shows; with ``hold``, first until the writer holds there (its first
    batch committed), so the ledger is asked once rather than every 0.3 s."""
    deadline = time.monotonic() + 120
    while hold is not None and not Path(f"{hold}.held").exists():
        assert writer.poll() is None, writer.communicate()[1]
        assert time.monotonic() < deadline, "the writer never held"
        time.sleep(0.05)
    while run("show", doc_id, "--warehouse", lake).returncode != 0:
        assert writer.poll() is None, writer.communicate()[1]
        assert time.monotonic() < deadline, "the writer's first batch never showed"
        time.sleep(0.3)


def seeded(lake: str, s3_path: str, tmp_path: Path) -> None:
    made = run("ingest", corpus(tmp_path, "seed", 1), "--warehouse", lake, "--data-path", s3_path)
    assert made.returncode == 0, made.stderr


def test_two_hosts_refresh_side_by_side_while_a_third_reads(
    lake: str, s3_path: str, tmp_path: Path
) -> None:
    seeded(lake, s3_path, tmp_path)
    sizes = {"alpha": 600, "beta": 400}
    writers = {
        host: on_host(
            host,
            "refresh",
            corpus(tmp_path, name, count, pause_ms=50),
            "--warehouse",
            lake,
            "--json",
            "--out",
            tmp_path / f"{name}.ndjson",
        )
        for host, (name, count) in zip(("host-a", "host-b"), sizes.items(), strict=True)
    }
    # ``verify`` runs once the writers are done: its transparency-log check reads the tree
    # and the entries in separate statements, and a commit between them reads as a mismatch.
    reads = 0
    try:
        while any(w.poll() is None for w in writers.values()):
            for args in (
                ("runs", "--json"),
                ("ls", "--json"),
                ("history", "synthetic/record/seed-0"),
            ):
                read = run(*args, "--warehouse", lake)
                assert read.returncode == 0, (args, read.stderr)
                reads += 1
    finally:
        results = {host: finish(w) for host, w in writers.items()}
    for code, _, err in results.values():
        assert code == 0, err
    assert reads >= 3
    for (name, count), (_, out, _) in zip(sizes.items(), results.values(), strict=True):
        assert json.loads(out)["run"]["counts"]["synthetic"]["new"] == count, name
    ledger = json.loads(run("runs", "--warehouse", lake, "--json").stdout)
    hosts = {row["manifest"]: row["host"] for row in ledger}
    assert (hosts["alpha"], hosts["beta"]) == ("host-a", "host-b")
    assert sorted(row["run_id"] for row in ledger) == [1, 2, 3]
    verified = json.loads(run("verify", "--warehouse", lake, "--json").stdout)
    assert verified["checked"] == sum(sizes.values())  # seed-0 has alpha-0's bytes


def test_a_writer_killed_on_one_host_is_completed_from_the_other(
    lake: str, s3_path: str, tmp_path: Path
) -> None:
    seeded(lake, s3_path, tmp_path)
    total = 1500
    slow = corpus(tmp_path, "alpha", total, pause_ms=30)
    other = on_host("host-b", "ingest", corpus(tmp_path, "beta", 400), "--warehouse", lake)
    writer = on_host("host-a", "ingest", slow, "--warehouse", lake, "--batch-size", 100)
    try:
        until_stored(lake, "synthetic/record/alpha-150", writer)  # batches committing
        writer.send_signal(signal.SIGKILL)
    finally:
        finish(writer)
        code, _, err = finish(other)
    assert writer.returncode == -signal.SIGKILL
    assert code == 0, err

    ledger = json.loads(run("runs", "--warehouse", lake, "--json").stdout)
    killed = next(row for row in ledger if row["manifest"] == "alpha")
    assert (killed["status"], killed["host"]) == ("interrupted", "host-a")
    rerun = on_host("host-b", "ingest", slow, "--warehouse", lake, "--json")
    code, out, err = finish(rerun)
    assert code == 0, err
    report = json.loads(out)
    assert report["resumes_run"] == killed["run_id"]
    counts = report["counts"]["synthetic"]
    assert counts["new"] + counts["unchanged"] == total and counts["unchanged"] >= 100
    verified = json.loads(run("verify", "--warehouse", lake, "--json").stdout)
    assert verified["checked"] == total + 400


def test_the_catalog_going_away_mid_run_is_named_and_a_rerun_completes(
    lake: str, s3_path: str, cluster: PgCluster, tmp_path: Path
) -> None:
    seeded(lake, s3_path, tmp_path)
    total = 1000
    hold = tmp_path / "hold"
    hold.touch()
    slow = corpus(tmp_path, "alpha", total, hold=hold)
    writer = on_host("host-a", "ingest", slow, "--warehouse", lake, "--batch-size", 100)
    try:
        until_stored(lake, "synthetic/record/alpha-50", writer, hold)
        cluster.stop("immediate")  # the catalog's server goes away
        hold.unlink()
        code, _, err = finish(writer)
    finally:
        if writer.poll() is None:
            writer.kill()
            finish(writer)
        cluster.start()
    rerun = on_host("host-b", "ingest", slow, "--warehouse", lake, "--json")
    again, out, rerun_err = finish(rerun)
    assert again == 0, rerun_err
    counts = json.loads(out)["counts"]["synthetic"]
    assert counts["new"] + counts["unchanged"] == total and counts["unchanged"] >= 100
    verified = json.loads(run("verify", "--warehouse", lake, "--json").stdout)
    assert verified["checked"] == total

    # The failed run's own line: exit 1 naming the catalog (never DuckDB's abort at a
    # rollback, SIGABRT "terminate called ... ROLLBACK", nor an internal error).
    assert code == 1, err
    said = [line for line in err.splitlines() if line.startswith("receipts:")][-1]
    assert "catalog" in said and "internal error" not in err, err


def several_hosts_section() -> tuple[dict[str, str], list[list[str]]]:
    """The "Several hosts" section of the backends page: the variables its first block
    exports, and the ``receipts`` commands of the others, as written."""
    readme = (REPO / "docs" / "backends.md").read_text("utf-8")
    section = readme.split("## Several hosts", 1)[1].split("\n## ", 1)[0]
    exported: dict[str, str] = {}
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", section, re.S):
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            if words[:1] == ["export"]:
                exported.update(word.split("=", 1) for word in words[1:])  # type: ignore[misc]
            elif words[:1] == ["receipts"]:
                commands.append(words[1:])
    return exported, commands


def test_the_several_hosts_section_runs_as_written(
    cluster: PgCluster,
    s3_server: S3Server,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each variable the section exports is given this test's value (the catalog database,
    the S3 server, its keys); each command runs as written, in the folder of a checkout (its
    manifests and recorded sessions), the section's bucket standing for the test's."""
    exported, commands = several_hosts_section()
    database = cluster.create_database(f"readme_{uuid.uuid4().hex[:10]}")
    ours = {"RECEIPTS_WAREHOUSE": f"ducklake:postgres:{database}", **s3_server.env()}
    assert set(exported) == set(ours)
    assert exported["RECEIPTS_WAREHOUSE"].startswith("ducklake:postgres:")
    for name, value in ours.items():
        monkeypatch.setenv(name, value)
    for folder in ("manifests", "demo"):
        (tmp_path / folder).symlink_to(REPO / folder)
    monkeypatch.chdir(tmp_path)
    prefix = uuid.uuid4().hex[:12]
    (data_path,) = {w for args in commands for w in args if w.startswith("s3://")}
    for args in commands:
        args = [w.replace(data_path, f"s3://{BUCKET}/{prefix}/") for w in args]
        done = cli(*args)
        assert done.exit_code == 0, (args, done.stderr[-2000:])

    runs = json.loads(cli("runs", "--json").stdout)
    assert sorted((r["manifest"], r["status"]) for r in runs) == [
        ("ask-the-record", "ok"),
        ("cr-v-aeb", "ok"),
    ]
    assert any(key.endswith(".parquet") for key in s3_server.keys(prefix))
    backup = tmp_path / "receipts-backup.duckdb"
    listed = cli("ls", "--warehouse", backup, "--json")
    assert listed.exit_code == 0 and listed.stdout == cli("ls", "--json").stdout
