"""The benchmark harness runs end to end on tiny inputs (no timing is asserted)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from bench import ingest, lake, refresh_requests
from bench.run import main as bench_main
from demo.run import CORPORA


def test_ingest_benchmark_measures_real_work() -> None:
    result = ingest.run(count=400, batch_size=100, repeats=1)
    counts = result["counts"]
    assert counts["first"]["new"] == 400
    assert counts["identical"]["unchanged"] == 400
    assert result["identical_rows_written"] == {
        "snapshots": 0,
        "revisions": 0,
        "documents": 0,
        "sightings": 0,
    }
    assert counts["changed"]["changed"] == result["expected_changed"] > 0
    assert set(result["seconds"]) == {"floor", "source", "first", "identical", "changed"}
    assert result["seconds"]["source"]["median"] > 0
    assert result["ratios"]["source_to_first"] < 1  # producing them is part of ingesting them
    assert set(result["targets"]) >= {"identical_reingest_writes_nothing"}
    # The same re-ingest, then in a warehouse of ten times as many documents.
    larger = result["larger_warehouse"]
    assert larger["documents"] == 4_000
    assert larger["seconds"]["alone"]["runs"] == larger["seconds"]["larger"]["runs"] == 1
    assert larger["ratio"] > 0
    for name in ("floor", "source", "first", "identical", "changed"):
        assert result["cpu_seconds"][name]["median"] > 0 and result["cores_busy"][name] > 0


def test_refresh_benchmark_counts_requests_of_an_unchanged_demo_refresh() -> None:
    result = refresh_requests.run()
    corpora = result["corpora"]
    assert set(corpora) == {c.name for c in CORPORA}
    for name, part in corpora.items():
        assert part["status"] == ["ok", "ok"], name
        assert part["first_refresh_requests"] > 0, name
        assert part["second_refresh_revisions"] == 0, name
    for corpus in CORPORA:
        second = corpora[corpus.name]["second_refresh_requests"]
        assert (second == 0) is corpus.pinned, corpus.name
    assert all(result["targets"].values()), result["targets"]


def test_bench_command_writes_json_and_a_table(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    result = CliRunner().invoke(
        bench_main, ["--only", "refresh_requests", "--quick", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    written = json.loads(out.read_text())
    assert written["command"] == "make bench (quick)"
    assert set(written["results"]) == {"refresh_requests"}
    assert written["machine"]["cpus"]
    for name in written["results"]["refresh_requests"]["corpora"]:
        assert f"unchanged {name}" in result.output


def test_the_readme_table_is_rendered_from_a_results_file(tmp_path: Path) -> None:
    from bench.run import markdown

    results = {"results": {"ingest": ingest.run(count=200, batch_size=50, repeats=1)}}
    table = markdown(results)
    assert table.startswith("| measure | value | ratio |\n|---|---|---|\n")
    assert "| ingest: first ingest, 200 records |" in table
    source = results["results"]["ingest"]["ratios"]["source_to_first"]
    (row,) = [r for r in table.splitlines() if r.startswith("| ingest: the source producing")]
    assert row.endswith(f"| {source}× the first ingest |")
    first_cpu = results["results"]["ingest"]["cpu_seconds"]["first"]["median"]
    assert f"CPU {first_cpu:.1f} s on" in table
    assert "target identical reingest writes nothing | met |" in table
    larger = results["results"]["ingest"]["larger_warehouse"]
    (row,) = [r for r in table.splitlines() if "in a warehouse of 2,000 documents" in r]
    assert f"| {larger['ratio']}× the same in a warehouse of its records alone" in row


def test_proofs_benchmark_writes_a_bundle_per_claim_and_verifies_the_big_one() -> None:
    from bench import proofs

    result = proofs.run(claims=40, big_bytes=20_000, repeats=1)
    assert result["holding"] == result["bundles_written"] == 40
    assert result["seconds"]["bundles"]["median"] > 0 and result["ratio"]["median"] > 0
    assert result["big_bundle_bytes"] > 20_000
    assert set(result["targets"]) == {
        "bundles_within_3x_of_the_check",
        "1mb_bundle_verifies_under_1s",
    }
    assert result["cpu_seconds"]["bundles"]["median"] > 0 and result["cpu_ratio"]["median"] > 0
    assert result["seconds"]["files_alone"]["median"] > 0
    assert len(proofs.rows(result)) == 7


@pytest.mark.skipif(
    importlib.util.find_spec("duckdb_extension_ducklake") is None,
    reason="needs receipts[lake]: make install",
)
def test_lake_backfill_benchmark_backfills_the_same_documents_on_each_backend(
    tmp_path: Path,
) -> None:
    """The lake benchmark's backfill: the same documents on a DuckDB file, on a lake with a
    PostgreSQL catalog and on one whose data is in S3 (moto's server on loopback), and an
    identical re-run that writes none on any."""
    try:
        result = lake.measure_backfill(600, tmp_path, repeats=1)
    except (OSError, subprocess.CalledProcessError) as exc:  # no PostgreSQL's client here
        if os.environ.get("CI"):
            raise
        pytest.skip(f"no PostgreSQL for the lake benchmark: {exc}")
    backends = result["backends"]
    assert set(backends) == {"duckdb", "ducklake:postgres", lake.S3_BACKEND}
    firsts = [timing["documents"]["first"] for timing in backends.values()]
    assert firsts[0] == firsts[1] == firsts[2] and firsts[0]["new"] > 0
    for timing in backends.values():
        for key in ("identical", "rescan"):
            again = timing["documents"][key]
            assert again["unchanged"] == firsts[0]["new"]
            assert again["new"] + again["changed"] + again["restored"] == 0
    assert backends["duckdb"]["first_ratio"] == 1.0
    assert backends["ducklake:postgres"]["identical_ratio"] > 0
    assert set(result["targets"]) == {
        f"{backend} {key} within 1.5x of the file"
        for backend in ("ducklake:postgres", lake.S3_BACKEND)
        for key in ("first", "identical", "rescan")
    }
    assert any(row[0].startswith("lake: first backfill") and lake.S3_BACKEND in row[0]
               for row in lake.rows({"count": 1, "backends": {}, "backfill": result}))  # fmt: skip


def test_serve_benchmark_times_pages_and_searches_of_a_backfilled_warehouse(
    tmp_path: Path,
) -> None:
    from bench import serve

    result = serve.run(3_000, tmp_path, samples=3, searches=1)
    requests = result["requests"]
    assert {name: part["requests"] for name, part in requests.items()} == {
        "show": 3,
        "page": 3,
        "page_json": 3,
        "search": 1,
    }
    assert all(part["median_ms"] > 0 for part in requests.values())
    assert set(result["targets"]) == {"document_page_under_200ms", "search_under_200ms"}
    # the search index is built (and timed) before the searches, which read through it
    assert result["index"]["documents"] > 0 and result["index"]["postings"] > 0
    assert result["index"]["seconds"] > 0 and result["index"]["added_bytes"] > 0
    assert [row[0].split(":")[0] for row in serve.rows(result)] == ["serve"] * 5
