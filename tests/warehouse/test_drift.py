"""Drift between points of the corpus: the comparison, choosing the points, and the corpus
as it stood at a run or a date."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.synthetic_source import is_changed
from tests import corpus_fixture as fixture
from tests.conftest import cli, write_manifest
from warehouse.asof import Point, as_of, parse_instant, resolve_point
from warehouse.drift import compare, default_points
from warehouse.errors import NotFound, PointError
from warehouse.store import Warehouse


@pytest.fixture
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Warehouse]:
    with Warehouse.open(fixture.shared(tmp_path_factory), read_only=True) as wh:
        yield wh


def outcomes(wh: Warehouse, since: Point, until: Point, corpus: str | None = None) -> dict:
    drift = compare(wh, since, until, corpus=corpus)
    return {row.doc_id: row.outcome for row in drift.rows}


# -- points --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-01", "2026-11-01T00:00:00Z"),
        ("2026-11-01T06:30:00Z", "2026-11-01T06:30:00Z"),
        ("2026-11-01T06:30", "2026-11-01T06:30:00Z"),
        ("2026-11-01T08:30:00+02:00", "2026-11-01T06:30:00Z"),
    ],
)
def test_dates_are_read_as_utc(text: str, expected: str) -> None:
    assert parse_instant(text) == fixture.at(expected)


@pytest.mark.parametrize("text", ["last tuesday", "2026-13-01", "run-3", "3.5", "", "\u0661\u0662"])
def test_a_point_that_is_neither_run_nor_date_is_refused(built: Warehouse, text: str) -> None:
    with pytest.raises(PointError, match="neither a run id"):
        resolve_point(built, text)


def test_an_unknown_run_is_refused_with_the_known_range(built: Warehouse) -> None:
    with pytest.raises(PointError, match=r"no run 9 .*runs are 1\.\.4"):
        resolve_point(built, "9")


def test_default_points_are_the_last_two_finished_runs_of_the_corpus(built: Warehouse) -> None:
    assert default_points(built, fixture.CORPUS) == (Point(run_id=2), Point(run_id=4))
    assert default_points(built) == (Point(run_id=3), Point(run_id=4))
    assert default_points(built, fixture.OTHER_CORPUS) == (Point.before_any_run(), Point(run_id=3))
    with pytest.raises(NotFound, match="no finished run of corpus 'nobody'"):
        default_points(built, "nobody")


def test_until_a_date_compares_with_the_run_before_it(built: Warehouse) -> None:
    until = Point(at=fixture.at("2026-11-02T23:00:00Z"))
    since, _ = default_points(built, fixture.CORPUS, until=until)
    assert since == Point(run_id=1)


# -- the comparison ------------------------------------------------------------------------
def test_drift_between_the_two_refreshes(built: Warehouse) -> None:
    drift = compare(built, Point(run_id=2), Point(run_id=4), corpus=fixture.CORPUS)
    assert drift.totals == {"new": 1, "changed": 2, "unchanged": 4, "gone": 2, "restored": 1}
    assert drift.found
    rows = {row.doc_id: row for row in drift.rows}
    changed = rows["nhtsa/complaint/11561421"]
    assert changed.old is not None and changed.baseline == changed.old
    assert (changed.old.revision, changed.new.revision) == (1, 2)
    assert changed.new.media_type == "application/json"
    restored = rows["nhtsa/complaint/11561422"]
    assert restored.old is not None and restored.old.tombstone
    assert restored.baseline is not None and restored.baseline.revision == 1
    gone = rows["forem/comment/2a4bc"]
    assert gone.new.tombstone and gone.new.tombstone_reason == "gone upstream"
    assert rows["nhtsa/complaint/11561423"].old is None
    left = rows["github/acme/handbook/docs/old-faq.md"]
    assert left.outcome == "gone" and left.left_corpus
    assert left.old == left.new and not left.new.tombstone


def test_a_tombstone_at_both_points_is_not_counted(built: Warehouse) -> None:
    # complaint 11561422 is gone at run 2 and still gone at run 3
    drift = compare(built, Point(run_id=2), Point(run_id=3), corpus=fixture.CORPUS)
    assert not drift.found
    assert drift.totals["unchanged"] == 8


def test_from_before_the_first_run_everything_is_new(built: Warehouse) -> None:
    drift = compare(built, Point.before_any_run(), Point(run_id=1), corpus=fixture.CORPUS)
    assert drift.totals == {"new": 9, "changed": 0, "unchanged": 0, "gone": 0, "restored": 0}


def test_since_a_date_is_the_corpus_as_it_stood_then(built: Warehouse) -> None:
    by_date = outcomes(built, Point(at=fixture.at("2026-11-01T12:00:00Z")), Point(run_id=4))
    by_run = outcomes(built, Point(run_id=1), Point(run_id=4))
    assert by_date == by_run
    # from run 1 the flapping complaint never left: it is unchanged, not restored
    assert "nhtsa/complaint/11561422" not in by_run
    # without a corpus, a document that only left the corpus is still in the warehouse
    assert "github/acme/handbook/docs/old-faq.md" not in by_run


def test_a_corpus_sees_only_its_members(built: Warehouse) -> None:
    everything = outcomes(built, Point(run_id=2), Point(run_id=3))
    assert everything == {"synthetic/record/other-1": "new"}
    assert outcomes(built, Point(run_id=2), Point(run_id=3), fixture.CORPUS) == {}


def test_points_in_the_wrong_order_are_refused(built: Warehouse) -> None:
    with pytest.raises(PointError, match="run 4 is after run 2"):
        compare(built, Point(run_id=4), Point(run_id=2))


# -- as of ---------------------------------------------------------------------------------
def test_as_of_a_run_and_a_date(built: Warehouse) -> None:
    at_run_2 = {r.doc_id: r.revision for r in as_of(built, Point(run_id=2))}
    assert "nhtsa/complaint/11561422" not in at_run_2  # tombstoned by run 2
    assert at_run_2["nhtsa/complaint/11561421"] == 1
    at_run_4 = {r.doc_id: r.revision for r in as_of(built, Point(run_id=4))}
    assert at_run_4["nhtsa/complaint/11561422"] == 3
    assert at_run_4["nhtsa/complaint/11561421"] == 2
    assert "forem/comment/2a4bc" not in at_run_4
    before_run_1 = as_of(built, Point(at=fixture.at("2026-11-01T05:59:59Z")))
    assert before_run_1 == []
    during_day_2 = as_of(built, Point(at=fixture.at("2026-11-02T07:00:00Z")), source="nhtsa")
    assert [r.doc_id for r in during_day_2] == [
        "nhtsa/complaint/11561420",
        "nhtsa/complaint/11561421",
    ]


# -- end to end: real ingest runs of a manifest, then drift -------------------------------
SYNTHETIC = """
[corpus]
name = "drifting"
namespace = "drifting"

[[synthetic]]
name = "d"
count = {count}
size = 128
seed = 5
changed_percent = {changed}
complete = true
"""


def test_drift_after_real_ingest_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    warehouse = str(tmp_path / "w.duckdb")
    manifest = tmp_path / "drifting.toml"
    steps = [
        (10, 0.0, "2026-11-01T06:00:00Z"),
        (9, 40.0, "2026-11-02T06:00:00Z"),
        (12, 40.0, "2026-11-03T06:00:00Z"),
    ]
    for count, changed, when in steps:
        write_manifest(tmp_path, SYNTHETIC.format(count=count, changed=changed), manifest.name)
        result = cli("ingest", manifest, "--warehouse", warehouse, env={"RECEIPTS_NOW": when})
        assert result.exit_code == 0, result.stderr
    edited = sum(is_changed(i, 5, 40.0) for i in range(9))
    assert 0 < edited < 9

    last = json.loads(cli("drift", manifest, "--warehouse", warehouse, "--json").stdout)
    assert last["totals"] == {"new": 2, "changed": 0, "unchanged": 9, "gone": 0, "restored": 1}

    middle = json.loads(
        cli("drift", manifest, "--warehouse", warehouse, "--until", "2", "--json").stdout
    )
    assert middle["totals"] == {
        "new": 0,
        "changed": edited,
        "unchanged": 9 - edited,
        "gone": 1,
        "restored": 0,
    }
    fields = {f["path"] for d in middle["documents"] if d["diff"] for f in d["diff"]["fields"]}
    assert fields == {"text", "variant"}

    by_date = json.loads(
        cli(
            "drift", manifest, "--warehouse", warehouse, "--since", "2026-11-01T12:00:00Z", "--json"
        ).stdout
    )
    restored_9 = "unchanged" if not is_changed(9, 5, 40.0) else "changed"
    outcomes_by_doc = {d["doc_id"]: d["outcome"] for d in by_date["documents"]}
    assert by_date["since"]["at"] == "2026-11-01T12:00:00Z"
    assert by_date["since"]["run"]["run_id"] == 1
    assert outcomes_by_doc.get("synthetic/record/d-9", "unchanged") == restored_9
    assert by_date["totals"]["new"] == 2


def test_drift_needs_a_finished_run(tmp_path: Path) -> None:
    warehouse = tmp_path / "w.duckdb"
    Warehouse.open(str(warehouse)).close()
    result = cli("drift", "--warehouse", warehouse)
    assert result.exit_code == 1
    assert "no finished run" in result.stderr


def test_drift_rejects_bad_points_as_usage_errors(tmp_path_factory: pytest.TempPathFactory) -> None:
    location = fixture.shared(tmp_path_factory)
    bad = cli("drift", "--warehouse", location, "--since", "last tuesday")
    assert bad.exit_code == 2 and "neither a run id" in bad.stderr
    unknown = cli("drift", "--warehouse", location, "--since", "12")
    assert unknown.exit_code == 2 and "no run 12" in unknown.stderr
    backwards = cli("drift", "--warehouse", location, "--since", "4", "--until", "2")
    assert backwards.exit_code == 2 and "run 4 is after run 2" in backwards.stderr


def test_drift_with_an_invalid_manifest_is_a_usage_error(tmp_path: Path) -> None:
    manifest = write_manifest(tmp_path, "[corpus]\nname = 'Bad Name'\nnamespace = 'x'\n")
    result = cli("drift", manifest, "--warehouse", tmp_path / "w.duckdb")
    assert result.exit_code == 2


def test_pins_mode_takes_none_of_the_warehouse_options(tmp_path: Path) -> None:
    manifest = write_manifest(tmp_path, fixture.MANIFEST)
    mixed = cli("drift", "--pins", manifest, "--since", "1", "--format", "md")
    assert mixed.exit_code == 2
    assert "--pins compares pinned files with GitHub; drop --since, --format" in mixed.stderr
    stray = cli("drift", manifest, "--ref", "main", "--warehouse", tmp_path / "w.duckdb")
    assert stray.exit_code == 2 and "--ref goes with --pins" in stray.stderr
