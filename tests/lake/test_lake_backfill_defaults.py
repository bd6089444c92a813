"""A backfill into a lake that already holds a corpus, at the default settings, on each
catalog: it completes, and its identical re-run writes nothing.

The files have 40,000 rows (about 31,000 documents: a commit of 16,384, then the rest), not the
200,000 of the report that found the problem: on a lake each run takes several seconds per
commit on this machine's shared cores, and four runs on each catalog must stay within about
a minute. The size that ran out of memory was one commit's (its bodies, joined and ranked
together), which each of these files fills, so the smaller files show it as well."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bench.nhtsa_backfill import generate
from tests.conftest import TEST_PG, cli, write_manifest
from tests.lake.test_lake_backends import MANIFEST, needs_lake

pytestmark = [pytest.mark.lake, needs_lake]

ROWS = 40_000


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two files of the same complaints (the same ODI numbers), their text different."""
    directory = tmp_path_factory.mktemp("files")
    return (
        generate(directory / "FLAT_CMPL-a.zip", ROWS, seed=1),
        generate(directory / "FLAT_CMPL-b.zip", ROWS, seed=2),
    )


def _lake(catalog: str, tmp_path: Path, lake_postgres: Callable[[], str]) -> str:
    if catalog == "sqlite":
        return f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}"
    return f"ducklake:postgres:dbname={lake_postgres()} {TEST_PG}"


def _backfill(lake: str, path: Path) -> dict[str, Any]:
    """``receipts backfill nhtsa`` with no setting but the file and the warehouse."""
    done = cli(
        "backfill", "nhtsa", "--file", path, "--kind", "complaints", "--warehouse", lake, "--json"
    )
    assert done.exit_code == 0, done.stderr[-2000:]
    return dict(json.loads(done.stdout)["documents"])


@pytest.mark.parametrize("catalog", ["sqlite", "postgres"])
def test_a_backfill_into_a_lake_holding_a_corpus_completes_at_the_defaults(
    catalog: str,
    files: tuple[Path, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    lake_postgres: Callable[[], str],
) -> None:
    monkeypatch.setenv("RECEIPTS_DATA_PATH", str(tmp_path / "data"))
    lake = _lake(catalog, tmp_path, lake_postgres)
    manifest = write_manifest(tmp_path, MANIFEST.format(count=300, seed=1))
    assert cli("ingest", manifest, "--warehouse", lake).exit_code == 0
    first, second = files

    held = _backfill(lake, first)  # the lake now holds the corpus and these complaints
    assert held["new"] > 16_384 and held["records"] == held["new"]

    changed = _backfill(lake, second)  # the same ODI numbers, their text different
    assert changed["changed"] > 16_384
    assert changed["new"] + changed["changed"] == changed["records"]

    again = _backfill(lake, second)
    assert again["unchanged"] == again["records"] == changed["records"]
