"""The backfill benchmark runs end to end on a small generated file."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from bench.nhtsa_backfill import MEMBER, generate, run
from sources.nhtsa.flatfile import LAYOUTS, FlatRow, parse_line


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
def test_run_measures_the_backfill_beside_the_baseline(tmp_path: Path) -> None:
    result = run(2_000, tmp_path)
    assert result["rows"] == 2_000
    for measured in (result["backfill"], result["baseline"]):
        assert measured["rows_per_s"] > 0 and measured["peak_rss_mb"] > 0
    generated = (tmp_path / "FLAT_CMPL-2000.zip").read_bytes()
    with zipfile.ZipFile(tmp_path / "FLAT_CMPL-2000.zip") as archive:
        odis = {line.split(b"\t")[1] for line in archive.read(MEMBER).splitlines()}
    assert result["backfill"]["documents"] == len(odis)
    assert result["file_bytes"] == len(generated)
