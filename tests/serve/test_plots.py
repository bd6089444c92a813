"""The plots' data (:mod:`warehouse.series`) on the fixture corpus, counted again from what
``receipts ls`` and ``receipts history`` say was ingested, on a DuckDB file and on a lake;
and the charts (:mod:`pipelines.serve.plots`): well-formed SVG, hostile labels shown as text,
an empty series as "no data"."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from collections import Counter
from datetime import date, timedelta
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from pipelines.serve.plots import PALETTE, STATUS_COLOURS, chart_svg, nice_step
from tests import corpus_fixture as fixture
from tests.conftest import cli
from warehouse import series
from warehouse.store import Warehouse

SVG = "{http://www.w3.org/2000/svg}"
HAS_LAKE = importlib.util.find_spec("duckdb_extension_ducklake") is not None


def _day(instant: str) -> date:
    return date.fromisoformat(instant[:10])


def _ingested(warehouse: str) -> dict[str, dict[str, Any]]:
    """Every document with its source and revisions, as the command line lists them."""
    listed = json.loads(cli("ls", "--warehouse", warehouse, "--json").stdout)
    out = {}
    for doc in listed:
        result = cli("history", doc["doc_id"], "--warehouse", warehouse, "--json")
        out[doc["doc_id"]] = {"source": doc["source"], **json.loads(result.stdout)}
    return out


def _expected_statuses(docs: dict[str, dict[str, Any]]) -> list[tuple[date, str, int]]:
    recorded = {_day(r["valid_from"]) for d in docs.values() for r in d["revisions"]}
    first, last = min(recorded), max(recorded)
    days = [first + timedelta(days=n) for n in range((last - first).days + 1)]
    rows = []
    for day in days:
        counts: Counter[str] = Counter()
        for doc in docs.values():
            before = [r for r in doc["revisions"] if _day(r["valid_from"]) <= day]
            if before:
                counts["tombstoned" if before[-1]["tombstone"] else "current"] += 1
        rows += [(day, status, counts[status]) for status in ("current", "tombstoned")]
    return rows


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A copy of the fixture corpus with two claim checks on two days (claims write)."""
    path = tmp_path_factory.mktemp("series") / "series.duckdb"
    shutil.copyfile(fixture.shared(tmp_path_factory), path)
    return str(path)


CLAIMS = [
    {"claim_id": "a", "doc_id": "nhtsa/complaint/11561420", "quote": "The infotainment screen"},
    {"claim_id": "b", "doc_id": "nhtsa/complaint/11561421", "quote": "on the highway at 65 mph"},
    {"claim_id": "c", "doc_id": "nhtsa/complaint/11561421", "quote": "the brakes failed"},
]


def _check_claims(
    warehouse: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, when: str, revision: int
) -> dict[str, int]:
    monkeypatch.setenv("RECEIPTS_NOW", when)
    path = tmp_path / "claims.ndjson"  # one claim set: the same file, rewritten
    path.write_text("".join(json.dumps(c | {"revision": revision}) + "\n" for c in CLAIMS))
    result = cli("verify-claims", "--file", path, "--warehouse", warehouse, "--json")
    counts: dict[str, int] = json.loads(result.stdout)["counts"]
    return {status: n for status, n in counts.items() if n}


def test_revisions_per_day_count_every_revision_ingested(warehouse: str) -> None:
    docs = _ingested(warehouse)
    expected = Counter(
        (_day(r["valid_from"]), doc["source"]) for doc in docs.values() for r in doc["revisions"]
    )
    with Warehouse.open(warehouse, read_only=True) as wh:
        rows = series.revisions_per_day(wh)
    assert rows == sorted((day, source, n) for (day, source), n in expected.items())
    assert len({day for day, _, _ in rows}) == 3  # the fixture's runs fall on three days


def test_documents_by_status_at_the_end_of_each_day(warehouse: str) -> None:
    docs = _ingested(warehouse)
    with Warehouse.open(warehouse, read_only=True) as wh:
        rows = series.documents_by_status(wh)
    assert rows == _expected_statuses(docs)
    last = {status: n for day, status, n in rows if day == rows[-1][0]}
    assert last["current"] + last["tombstoned"] == len(docs)
    assert last["tombstoned"] == sum(d["revisions"][-1]["tombstone"] for d in docs.values())


def test_claims_by_status_follow_the_latest_check_of_each_day(
    warehouse: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Warehouse.open(warehouse, read_only=True) as wh:
        assert series.claims_by_status(wh) == []
    first = _check_claims(warehouse, tmp_path, monkeypatch, "2026-11-04T08:00:00Z", 1)
    # a second check the same day: only the day's last status counts
    _check_claims(warehouse, tmp_path, monkeypatch, "2026-11-04T09:00:00Z", 1)
    second = _check_claims(warehouse, tmp_path, monkeypatch, "2026-11-06T08:00:00Z", 2)
    assert first != second  # citing revision 2 changes what holds
    with Warehouse.open(warehouse, read_only=True) as wh:
        rows = series.claims_by_status(wh)
    by_day: dict[date, dict[str, int]] = {}
    for day, status, n in rows:
        assert n >= 0
        if n:
            by_day.setdefault(day, {})[status] = n
    # every day from the first check to the last: on the 5th, nothing changed
    assert by_day == {date(2026, 11, 4): first, date(2026, 11, 5): first, date(2026, 11, 6): second}
    labels = {status for _, status, _ in rows}
    assert [(d, s) for d, s, _ in rows] == [(d, s) for d in sorted(by_day) for s in sorted(labels)]


@pytest.mark.skipif(not HAS_LAKE, reason="needs receipts[lake]: make install")
def test_a_lake_gives_the_same_series(warehouse: str, tmp_path: Path) -> None:
    lake = f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}"
    copied = cli("copy", "--warehouse", warehouse, "--to", lake, "--to-data-path", tmp_path / "d")
    assert copied.exit_code == 0, copied.output
    functions = (series.revisions_per_day, series.documents_by_status, series.claims_by_status)
    with Warehouse.open(warehouse, read_only=True) as wh:
        on_file = [f(wh) for f in functions]
    with Warehouse.open(lake, read_only=True) as wh:
        assert [f(wh) for f in functions] == on_file
    assert all(on_file[:2])


# -- the charts ----------------------------------------------------------------------------
ROWS = [
    (date(2026, 11, 1), "nhtsa", 3),
    (date(2026, 11, 1), "github", 2),
    (date(2026, 11, 2), "nhtsa", 1),
    (date(2026, 11, 4), "github", 7),
]


def _parse(svg: str) -> ElementTree.Element:
    root = ElementTree.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    return root


def test_a_line_chart_has_a_line_per_label_axes_and_a_legend() -> None:
    root = _parse(chart_svg("Revisions per day", ROWS))
    assert root.get("role") == "img" and root.get("aria-label") == "Revisions per day"
    title = root.find(f"{SVG}title")
    assert title is not None and title.text == "Revisions per day"
    desc = root.find(f"{SVG}desc")
    assert desc is not None and "2026-11-01 to 2026-11-04" in (desc.text or "")
    assert root.get("aria-labelledby") == f"{title.get('id')} {desc.get('id')}"
    groups = root.findall(f"{SVG}g[@class='series']")
    assert [g.get("data-label") for g in groups] == ["github", "nhtsa"]
    lines = [g.find(f"{SVG}polyline") for g in groups]
    assert all(line is not None and len(line.get("points", "").split()) == 4 for line in lines)
    # every day is a dot with its own tooltip; a day without a row counts zero
    tips = [c.findtext(f"{SVG}title") for c in groups[1].findall(f"{SVG}circle")]
    assert tips == [
        "nhtsa, 2026-11-01: 3",
        "nhtsa, 2026-11-02: 1",
        "nhtsa, 2026-11-03: 0",
        "nhtsa, 2026-11-04: 0",
    ]
    xs = [float(c.get("cx", "")) for c in groups[1].findall(f"{SVG}circle")]
    assert xs[1] - xs[0] == pytest.approx(xs[3] - xs[2])  # the day axis is to scale
    x_labels = [t.text for t in root.findall(f"{SVG}g[@class='x-axis']/{SVG}text")]
    assert x_labels[0] == "2026-11-01" and x_labels[-1] == "2026-11-04"
    y_labels = [int(t.text or "") for t in root.findall(f"{SVG}g[@class='y-axis']/{SVG}text")]
    assert y_labels[0] == 0 and y_labels[-1] >= 7
    legend = [t.text for t in root.findall(f"{SVG}g[@class='legend']/{SVG}text")]
    assert legend == ["github", "nhtsa"]
    assert [g.get("fill") for g in root.findall(f"{SVG}g[@class='y-axis']")] == ["currentColor"]
    swatches = [r.get("fill") for r in root.findall(f"{SVG}g[@class='legend']/{SVG}rect")]
    assert swatches == list(PALETTE[:2])


def test_stacked_areas_reach_the_daily_total() -> None:
    rows = [
        (date(2026, 11, 1), "current", 9),
        (date(2026, 11, 1), "tombstoned", 0),
        (date(2026, 11, 2), "current", 8),
        (date(2026, 11, 2), "tombstoned", 4),
    ]
    root = _parse(chart_svg("Documents by status", rows, stacked=True))
    polygons = root.findall(f"{SVG}g[@class='series']/{SVG}polygon")
    assert len(polygons) == 2
    y_labels = [int(t.text or "") for t in root.findall(f"{SVG}g[@class='y-axis']/{SVG}text")]
    assert y_labels[-1] >= 12  # the stack's highest day, not its largest label
    top = polygons[1].get("points", "").split()
    ys = [float(p.split(",")[1]) for p in top[:2]]
    grid = [float(g.get("y1", "")) for g in root.findall(f"{SVG}g[@class='y-axis']/{SVG}line")]
    zero, unit = grid[0], (grid[0] - grid[1]) / (y_labels[1] - y_labels[0])
    assert [round((zero - y) / unit) for y in ys] == [9, 12]


def test_statuses_keep_their_colours_across_charts() -> None:
    def fills(rows: list[tuple[date, str, int]]) -> dict[str, str]:
        root = _parse(chart_svg("Claims", rows, stacked=True))
        return {
            g.get("data-label", ""): g.find(f"{SVG}polygon").get("fill", "")  # type: ignore[union-attr]
            for g in root.findall(f"{SVG}g[@class='series']")
        }

    day = date(2026, 1, 1)
    both = fills([(day, "holds", 1), (day, "stale", 2)])
    alone = fills([(day, "holds", 3)])
    assert both["holds"] == alone["holds"] == STATUS_COLOURS["holds"] != both["stale"]


def test_one_day_still_draws_something_visible() -> None:
    root = _parse(chart_svg("One day", [(date(2026, 1, 1), "current", 3)], stacked=True))
    polygon = root.find(f"{SVG}g[@class='series']/{SVG}polygon")
    assert polygon is not None
    xs = {float(p.split(",")[0]) for p in polygon.get("points", "").split()}
    assert max(xs) - min(xs) > 10
    line = _parse(chart_svg("One day", [(date(2026, 1, 1), "nhtsa", 3)]))
    assert line.findall(f"{SVG}g[@class='series']/{SVG}circle")


HOSTILE = '<script>alert(1)</script>"&\u202egnp.exe\x1b[31m'


def test_hostile_labels_and_titles_are_text() -> None:
    svg = chart_svg(HOSTILE, [(date(2026, 1, 1), HOSTILE, 1)])
    root = _parse(svg)  # well-formed XML: nothing escaped the escaping
    assert "<script" not in svg and "\u202e" not in svg and "\x1b" not in svg
    assert not list(root.iter(f"{SVG}script"))
    assert root.get("aria-label") == '<script>alert(1)</script>"&\\u202egnp.exe\\x1b[31m'
    assert [g.get("data-label") for g in root.findall(f"{SVG}g[@class='series']")] == [
        root.get("aria-label")
    ]


def test_an_empty_series_is_a_small_no_data_chart() -> None:
    root = _parse(chart_svg("Claims by status", []))
    assert root.get("aria-label") == "Claims by status: no data"
    assert [t.text for t in root.iter(f"{SVG}text")] == ["Claims by status", "no data"]
    assert int(root.get("height", "0")) < 100


def test_days_far_apart_are_not_filled_in() -> None:
    rows = [(date(2000, 1, 1), "a", 1), (date(2026, 1, 1), "a", 2)]
    root = _parse(chart_svg("Sparse", rows))
    assert len(root.findall(f"{SVG}g[@class='series']/{SVG}circle")) == 2


def test_charts_of_one_page_do_not_share_ids() -> None:
    ids = [
        re.findall(r'id="([^"]+)"', chart_svg(title, ROWS))
        for title in ("Revisions per day", "Documents by status")
    ]
    assert ids[0] and not set(ids[0]) & set(ids[1])
    assert chart_svg("Revisions per day", ROWS) == chart_svg("Revisions per day", ROWS)


@pytest.mark.parametrize(
    ("top", "step"), [(1, 1), (5, 1), (7, 2), (12, 5), (40, 10), (99, 20), (1_500_000, 500_000)]
)
def test_steps_are_round(top: int, step: int) -> None:
    assert nice_step(top) == step
