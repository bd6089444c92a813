"""An ingest run over several entries: one failing entry does not stop the others."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from sources import registry
from sources.base import FetchContext, Source, SourceError, StrictModel
from sources.synthetic import SOURCE as SYNTHETIC
from tests.conftest import cli, write_manifest
from warehouse.canonical import canonical_json
from warehouse.records import Listing, Record


class FlakyEntry(StrictModel):
    name: str
    fail_after: int = 0


def flaky_fetch(entry: FlakyEntry, ctx: FetchContext) -> Iterable[Listing]:
    def records() -> Iterator[Record]:
        for i in range(5):
            if entry.fail_after and i == entry.fail_after:
                raise SourceError(f"upstream for {entry.name} went away after {i} records")
            yield Record(f"flaky/item/{entry.name}-{i}", "item", canonical_json({"i": i}))

    ctx.warn(f"{entry.name}: a warning for the ledger")
    yield Listing(scope=f"flaky:{entry.name}", records=records(), complete=True)


FLAKY = Source(name="flaky", entry_model=FlakyEntry, label=lambda e: e.name, fetch=flaky_fetch)


@pytest.fixture
def with_flaky(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.SOURCES, "flaky", FLAKY)
    monkeypatch.setattr("pipelines.manifest.SOURCES", registry.SOURCES)
    monkeypatch.setattr("pipelines.ingest.SOURCES", registry.SOURCES)
    assert registry.SOURCES["synthetic"] is SYNTHETIC


MANIFEST = """
[corpus]
name = "mixed"
namespace = "mixed"

[[synthetic]]
name = "ok"
count = 3

[[flaky]]
name = "broken"
fail_after = 2

[[flaky]]
name = "fine"
"""


def test_a_failing_entry_does_not_stop_the_others(
    with_flaky: None, tmp_path: Path, warehouse_path: Path
) -> None:
    manifest = write_manifest(tmp_path, MANIFEST)
    result = cli("ingest", manifest, "--warehouse", warehouse_path, "--batch-size", "1", "--json")
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["status"] == "failed"
    assert report["failures"] == [
        {
            "source": "flaky",
            "entry": "broken",
            "reason": "upstream for broken went away after 2 records",
        }
    ]
    # What the broken entry committed before failing stays; the fine entry and the
    # synthetic source completed.
    assert report["counts"]["flaky"] == {
        "new": 7,
        "changed": 0,
        "unchanged": 0,
        "gone": 0,
        "restored": 0,
        "failed": 1,
    }
    assert report["counts"]["synthetic"]["new"] == 3
    assert {w["warning"] for w in report["warnings"]} == {
        "broken: a warning for the ledger",
        "fine: a warning for the ledger",
    }
    ledger = json.loads(cli("runs", "--warehouse", warehouse_path, "--json").stdout)
    assert ledger[0]["status"] == "failed"
    assert ledger[0]["failures"][0]["entry"] == "broken"

    # A failed (incomplete) listing never tombstones: re-running with the same failure
    # retires nothing.
    again = json.loads(cli("ingest", manifest, "--warehouse", warehouse_path, "--json").stdout)
    assert again["counts"]["flaky"]["gone"] == 0


def test_only_limits_the_sources(with_flaky: None, tmp_path: Path, warehouse_path: Path) -> None:
    manifest = write_manifest(tmp_path, MANIFEST)
    result = cli("ingest", manifest, "--warehouse", warehouse_path, "--only", "synthetic", "--json")
    assert result.exit_code == 0
    assert list(json.loads(result.stdout)["counts"]) == ["synthetic"]
