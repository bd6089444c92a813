"""The transparency log on a DuckLake, with real processes, on a SQLite and on a PostgreSQL
catalog: two writers of different corpora appending at once leave one log, numbered with no
gap and no repeat, that `receipts log verify` rebuilds from the rows, with each writer's
entries in it.

Needs ``receipts[lake]`` (``make install``) and, for PostgreSQL, a server at
``$RECEIPTS_TEST_PG`` (default ``host=127.0.0.1 user=postgres``); skipped otherwise.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.lake import test_lake_concurrency as concurrency
from tests.lake.test_lake_concurrency import corpus, finish, run
from tests.lake_support import start
from warehouse.store import Warehouse

pytest.importorskip("duckdb_extension_ducklake", reason="needs receipts[lake]: make install")

lake_url = concurrency.lake_url  # the fixture: a SQLite and a PostgreSQL catalog


def _query(url: str, sql: str) -> list[dict[str, Any]]:
    """Rows of ``sql``, read in this process (as a reader of the lake)."""
    with Warehouse.open(url, read_only=True) as wh:
        cursor = wh._connection_for_tests().execute(sql)
        columns = [d[0] for d in cursor.description or []]
        return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]


def _entries(url: str) -> int:
    return int(_query(url, "SELECT count(*) AS n FROM tlog_entries")[0]["n"])


@pytest.mark.slow
def test_two_writers_at_once_leave_one_log_with_no_gap_or_repeat(
    lake_url: tuple[str, Path], tmp_path: Path
) -> None:
    url, data = lake_url
    made = run("ingest", corpus(tmp_path, "seed", 10), "--warehouse", url, "--data-path", data)
    assert made.returncode == 0, made.stderr  # creates the lake and its log
    # Both writers stay paused after their first batch until each has committed it, then
    # go on together, a batch of 100 at a time: their appends interleave.
    holds = [tmp_path / "hold-alpha", tmp_path / "hold-beta"]
    for hold in holds:
        hold.touch()
    manifests = [
        corpus(tmp_path, "alpha", 700, pause_ms=20, hold=holds[0]),
        corpus(tmp_path, "beta", 500, pause_ms=20, seed=1, hold=holds[1]),
    ]
    writers = [start("ingest", m, "--warehouse", url, "--batch-size", 100, "--json")
               for m in manifests]  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not all(Path(f"{hold}.held").exists() for hold in holds):
            assert all(w.poll() is None for w in writers), "a writer exited early"
            assert time.monotonic() < deadline, "the writers' first batches never committed"
            time.sleep(0.05)
        assert _entries(url) == 10 + 2 * 100  # each writer's first batch, and no more
    finally:
        for hold in holds:  # a writer still held (a failed wait) finishes instead of hanging
            hold.unlink()
        results = [finish(writer) for writer in writers]
    for code, _, err in results:
        assert code == 0, err
    reports = [json.loads(out) for _, out, _ in results]
    total = 10 + 700 + 500

    # One log, numbered 0..total-1: no gap, no index given twice.
    indexes = [row["idx"] for row in _query(url, "SELECT idx FROM tlog_entries ORDER BY idx")]
    assert indexes == list(range(total))
    # Each writer's revisions are there, each once, and they interleaved.
    per_run = {
        row["run"]: row
        for row in _query(
            url,
            "SELECT r.valid_from_run AS run, count(*) AS n, count(DISTINCT e.idx) AS distinct_n, "
            "min(e.idx) AS lo, max(e.idx) AS hi FROM tlog_entries e "
            "JOIN revisions r USING (doc_id, revision) GROUP BY ALL",
        )
    }
    alpha, beta = (per_run[report["run_id"]] for report in reports)
    assert (alpha["n"], alpha["distinct_n"]) == (700, 700)
    assert (beta["n"], beta["distinct_n"]) == (500, 500)
    assert alpha["lo"] < beta["hi"] and beta["lo"] < alpha["hi"]
    # The last checkpoint covers the whole log, and the log rebuilds from the rows.
    assert max(report["log_checkpoint"]["size"] for report in reports) == total
    verified = run("log", "verify", "--warehouse", url, "--json")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert run("verify", "--warehouse", url).returncode == 0


def test_a_check_reads_one_snapshot_while_another_writer_commits(
    lake_url: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer that commits while `log verify` reads does not make the log look damaged,
    nor fails: on a PostgreSQL catalog the check reads one snapshot while the writer commits
    between two of its reads; on a SQLite catalog the writer waits for the check."""
    from warehouse.tlog import check

    url, data = lake_url
    made = run("ingest", corpus(tmp_path, "seed", 30), "--warehouse", url, "--data-path", data)
    assert made.returncode == 0, made.stderr
    seeded = _entries(url)
    reads = check._sequence_problems
    writer: list[Any] = []

    def commit_between_reads(con: Any) -> list[dict[str, Any]]:
        writer.append(start("ingest", corpus(tmp_path, "late", 40, seed=2), "--warehouse", url))
        deadline = time.monotonic() + (120 if url.startswith("ducklake:postgres") else 5)
        while writer[0].poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        return reads(con)

    monkeypatch.setattr(check, "_sequence_problems", commit_between_reads)
    with Warehouse.open(url, read_only=True) as wh:
        report = check.check_log(wh)
    code, _, err = finish(writer[0])
    assert code == 0, err
    assert report.problems == [] and report.size == seeded
    assert _entries(url) == seeded + 40
