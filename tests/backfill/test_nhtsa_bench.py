"""The backfill benchmark runs end to end on a small generated file."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import pytest

from bench.floor import backfill_floor, floor_hashes
from bench.nhtsa_backfill import MEMBER, generate, run
from bench.run import markdown
from pipelines.backfill.request import BackfillRequest
from pipelines.backfill.run import run_backfill
from sources.nhtsa.flatfile.layouts import LAYOUTS
from tests.backfill.reference import FlatRow, parse_line
from tests.conftest import REPO
from warehouse import history
from warehouse.store import Warehouse


def test_the_generated_file_is_a_valid_deterministic_flat_cmpl(tmp_path: Path) -> None:
    first = generate(tmp_path / "a.zip", 500)
    second = generate(tmp_path / "b.zip", 500)
    with zipfile.ZipFile(first) as a, zipfile.ZipFile(second) as b:
        text = a.read(MEMBER)
        assert text == b.read(MEMBER)
    lines = text.decode("iso-8859-1").splitlines()
    assert len(lines) == 500
    rows = [parse_line(LAYOUTS["complaints"], n, t) for n, t in enumerate(lines, 1)]
    assert all(isinstance(r, FlatRow) for r in rows)
    keys = [r.key for r in rows if isinstance(r, FlatRow)]
    assert len(set(keys)) < len(keys)  # some complaints span several rows, as published
    widths = [len(r.values["CDESCR"]) for r in rows if isinstance(r, FlatRow)]
    assert min(widths) >= 200 and max(widths) <= 2000


@pytest.mark.slow
def test_run_measures_the_backfill_beside_its_floor(tmp_path: Path) -> None:
    result = run(2_000, tmp_path, repeats=1, with_dlt=False)
    assert result["rows"] == 2_000
    for name in ("floor", "backfill", "rerun", "rescan", "quarter"):
        assert result["seconds"][name]["runs"] == 1 and result["peak_rss_mb"][name] > 0
    generated = (tmp_path / "FLAT_CMPL-2000.zip").read_bytes()
    with zipfile.ZipFile(tmp_path / "FLAT_CMPL-2000.zip") as archive:
        odis = {line.split(b"\t")[1] for line in archive.read(MEMBER).splitlines()}
    assert result["documents"] == len(odis)
    assert result["rerun_documents"]["unchanged"] == len(odis)
    assert result["rescan_documents"]["unchanged"] == len(odis)
    assert result["targets"]["reruns_write_no_revision"]
    assert result["targets"]["rerun_recognizes_the_file"]
    assert result["file_bytes"] == len(generated)
    for name in ("floor", "backfill", "rerun", "rescan"):  # CPU time of each run's own process
        assert result["cpu_seconds"][name]["median"] > 0
        assert 0 < result["cores_busy"][name] <= (os.cpu_count() or 1) + 0.5
    assert result["ratios"]["backfill_cpu_to_floor_cpu"] > 0
    table = markdown({"results": {"backfill": result}})
    assert f"CPU {result['cpu_seconds']['backfill']['median']:.1f} s on" in table
    assert "CPU time" in table and "the floor's" in table and "--rescan" in table


def test_the_table_renders_results_measured_before_cpu_time_was(tmp_path: Path) -> None:
    """A results file written before CPU time was measured still renders, without it."""
    committed = json.loads((REPO / "bench" / "results.json").read_text())["results"]
    older = {
        k: v for k, v in committed["backfill"].items() if k not in ("cpu_seconds", "cores_busy")
    }
    older["ratios"] = {k: v for k, v in older["ratios"].items() if "cpu" not in k}
    table = markdown({"results": {"backfill": older}})
    assert "backfill: receipts backfill nhtsa" in table and "CPU" not in table


def test_the_floor_stores_the_bytes_the_backfill_stores(tmp_path: Path) -> None:
    """The floor does the same work: the same documents with the same content hashes."""
    path = generate(tmp_path / "FLAT_CMPL.zip", 600)
    backfill_floor(path, tmp_path / "floor.duckdb")
    floor = dict(floor_hashes(tmp_path / "floor.duckdb"))
    with Warehouse.open(str(tmp_path / "w.duckdb")) as wh:
        run_backfill(wh, BackfillRequest(path=path, kind="complaints"))
    with Warehouse.open(str(tmp_path / "w.duckdb"), read_only=True) as wh:
        stored = {r.doc_id: r.content_hash for r in history.revisions(wh)}
    assert floor == stored
