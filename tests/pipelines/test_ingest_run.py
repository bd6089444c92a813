"""An ingest run over several entries: one failing entry does not stop the others."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from bench.synthetic_source import SOURCE as SYNTHETIC
from sources import registry
from sources.base import FetchContext, Source, StrictModel
from tests.conftest import cli, write_manifest
from warehouse.canonical import canonical_json
from warehouse.errors import SourceError
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
def with_flaky() -> Iterator[None]:
    """Registration alone makes ``[[flaky]]`` a valid table and an ingestible source."""
    registry.register(FLAKY)
    assert registry.SOURCES["synthetic"] is SYNTHETIC  # tests register it (conftest)
    yield
    registry.unregister(FLAKY.name)


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


def corpus(name: str, entries: dict[str, int]) -> str:
    text = f'[corpus]\nname = "{name}"\nnamespace = "{name}"\n'
    for entry, count in entries.items():
        text += f'[[synthetic]]\nname = "{entry}"\ncount = {count}\n'
    return text


def members(warehouse_path: Path, name: str) -> set[str]:
    from warehouse import corpus
    from warehouse.store import Warehouse

    with Warehouse.open(str(warehouse_path), read_only=True) as wh:
        return {m.doc_id for m in corpus.members(wh, name)}


def test_an_entry_removed_from_the_manifest_leaves_the_corpus_only(
    tmp_path: Path, warehouse_path: Path
) -> None:
    full = write_manifest(tmp_path, corpus("alpha", {"keep": 4, "drop": 2}), "alpha.toml")
    other = write_manifest(tmp_path, corpus("beta", {"drop": 2}), "beta.toml")
    assert cli("ingest", full, "--warehouse", warehouse_path).exit_code == 0
    assert cli("ingest", other, "--warehouse", warehouse_path).exit_code == 0
    assert len(members(warehouse_path, "alpha")) == 6

    smaller = write_manifest(tmp_path, corpus("alpha", {"keep": 4}), "alpha.toml")
    report = json.loads(cli("ingest", smaller, "--warehouse", warehouse_path, "--json").stdout)
    assert report["left_corpus"] == ["synthetic/record/drop-0", "synthetic/record/drop-1"]
    assert report["counts"]["corpus"] == {"left": 2}
    assert members(warehouse_path, "alpha") == {f"synthetic/record/keep-{i}" for i in range(4)}
    # The other corpus keeps the shared documents; no revision was tombstoned.
    assert members(warehouse_path, "beta") == {"synthetic/record/drop-0", "synthetic/record/drop-1"}
    revs = json.loads(
        cli("history", "synthetic/record/drop-0", "--warehouse", warehouse_path, "--json").stdout
    )
    assert [r["tombstone"] for r in revs["revisions"]] == [False]

    # Coming back re-joins.
    write_manifest(tmp_path, corpus("alpha", {"keep": 4, "drop": 2}), "alpha.toml")
    cli("ingest", full, "--warehouse", warehouse_path)
    assert len(members(warehouse_path, "alpha")) == 6


def test_emptying_most_of_a_corpus_needs_allow_mass_retire(
    tmp_path: Path, warehouse_path: Path
) -> None:
    path = write_manifest(tmp_path, corpus("gamma", {"a": 1, "b": 5}))
    cli("ingest", path, "--warehouse", warehouse_path)
    write_manifest(tmp_path, corpus("gamma", {"a": 1}))
    refused = cli("ingest", path, "--warehouse", warehouse_path, "--json")
    assert refused.exit_code == 1
    assert "refusing to retire 5 of 6 documents of corpus 'gamma'" in refused.stdout
    assert len(members(warehouse_path, "gamma")) == 6
    allowed = cli("ingest", path, "--warehouse", warehouse_path, "--allow-mass-retire")
    assert allowed.exit_code == 0
    assert members(warehouse_path, "gamma") == {"synthetic/record/a-0"}


def test_a_partial_run_retires_nothing(tmp_path: Path, warehouse_path: Path) -> None:
    path = write_manifest(tmp_path, corpus("delta", {"a": 2, "b": 2}))
    cli("ingest", path, "--warehouse", warehouse_path)
    write_manifest(tmp_path, corpus("delta", {"a": 2}))
    only = cli("ingest", path, "--warehouse", warehouse_path, "--only", "synthetic", "--json")
    assert json.loads(only.stdout)["left_corpus"] == []


def test_an_integer_over_64_bits_upstream_fails_the_entry_by_name(
    monkeypatch: pytest.MonkeyPatch, warehouse_path: Path
) -> None:
    """1180591620717411303424 in an NHTSA complaint is refused, not stored as 1.18e+21."""
    from fakes.nhtsa import AEB_COMPLAINT, FakeNhtsa
    from warehouse import integrity
    from warehouse.store import Warehouse

    with FakeNhtsa().serving(monkeypatch) as fake:
        for vehicle in fake.vehicles.values():
            for record in vehicle.complaints:
                if record["odiNumber"] == AEB_COMPLAINT:
                    record["numberOfInjuries"] = 1180591620717411303424
        manifest = write_manifest(
            warehouse_path.parent,
            '[corpus]\nname = "t"\nnamespace = "t"\n[[nhtsa]]\nmake = "HONDA"\n'
            'model = "CR-V"\nyears = [2017, 2022]\nkinds = ["complaints"]\n',
        )
        result = cli("ingest", manifest, "--warehouse", warehouse_path, "--json")
    assert result.exit_code == 1, result.output
    failures = json.loads(result.stdout)["failures"]
    assert len(failures) == 1
    reason = failures[0]["reason"]
    assert "the integer 1180591620717411303424 at results[" in reason
    assert "].numberOfInjuries does not fit in 64 bits" in reason
    with Warehouse.open(str(warehouse_path), read_only=True) as wh:
        for snapshot in integrity.iter_snapshots(wh):
            assert b"e+21" not in snapshot.body
