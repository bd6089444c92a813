"""The search index, as a user takes it: ``receipts index`` builds it, ``receipts search`` and
the web view's search read through it and find what reading every document finds, a
document changed after the build included; without an index every document is read and the
search says so."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from pipelines.checks import text_search
from pipelines.serve.app import create_app
from tests import corpus_fixture as fixture
from tests.conftest import TEST_WAREHOUSE, cli, warehouse_location
from warehouse import search_index
from warehouse.explore import iter_current_bodies
from warehouse.store import Warehouse

PHRASES = [
    "stalled", "STALLED", "the", "dealer", "no defect found", "I'd never buy", "brake pedal",
    "rear hatch", "Policies of Acme", "p>", "Refunds are", "interstate at 65", "stall",
    "screen goes blank", "—", "65 mph", "honda", "CR-V", "Thanks!", "x",
]  # fmt: skip
# On a lake (the lake subset), every fourth: each phrase is two full reads of the corpus,
# about a second each there, and the lake's part (the index's tables) is the same for all.
CHECKED = PHRASES if TEST_WAREHOUSE == "duckdb" else PHRASES[::4]
EDITED = "nhtsa/complaint/11561421"


def _build(location: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fixture corpus, indexed after its first three runs; run 4 (an edit, a new
    complaint, a deletion, a restoration) comes after the build."""
    with Warehouse.open(location) as wh:
        for run in (1, 2):
            fixture.run_at(
                wh, monkeypatch, fixture.RUN_TIMES[run], fixture.CORPUS, fixture.UPSTREAM[run]
            )
        fixture.run_at(wh, monkeypatch, fixture.RUN_TIMES[3], fixture.OTHER_CORPUS, fixture.OTHER)
    result = cli("index", "--warehouse", location, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["documents"] > 0 and report["postings"] > 0
    with Warehouse.open(location) as wh:
        fixture.run_at(wh, monkeypatch, fixture.RUN_TIMES[4], fixture.CORPUS, fixture.UPSTREAM[4])


@pytest.fixture(scope="module")
def built_once(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> str:
    """One indexed warehouse for the module's tests that only read it (built once: on a
    lake each run of the corpus takes seconds)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        location = str(warehouse_location(tmp_path_factory.mktemp("indexed"), request, monkeypatch))
        _build(location, monkeypatch)
    return location


@pytest.fixture
def indexed(built_once: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The shared indexed warehouse, read at the report time (tests must not write it)."""
    monkeypatch.setenv("RECEIPTS_NOW", fixture.REPORT_TIME)
    return built_once


@pytest.fixture
def indexed_own(warehouse_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """An indexed warehouse of the test's own, for a test that writes it."""
    location = str(warehouse_path)
    _build(location, monkeypatch)
    monkeypatch.setenv("RECEIPTS_NOW", fixture.REPORT_TIME)
    return location


def _scan(wh: Warehouse, phrase: str) -> list[text_search.SearchHit]:
    """Every hit, reading every document (no index)."""
    return sorted(text_search._hits(phrase, iter_current_bodies(wh)), key=lambda hit: hit.doc_id)


def _cli_hits(location: str, phrase: str) -> tuple[list[dict[str, Any]], str]:
    result = cli("search", phrase, "--warehouse", location, "--json", "--limit", "100")
    assert result.exit_code == 0, result.output
    return list(json.loads(result.stdout)), result.stderr


def test_the_index_finds_what_reading_every_document_finds(indexed: str) -> None:
    with Warehouse.open(indexed, read_only=True) as wh:  # once: a lake takes seconds to open
        assert search_index.index_state(wh) is not None
        for phrase in CHECKED:
            every = _scan(wh, phrase)
            first, reading = text_search.first_hits(wh, phrase, 1000)
            assert first == every, phrase
            for wanted in (1, 2, 3):  # a page's worth: the first hits in doc_id order
                assert text_search.first_hits(wh, phrase, wanted)[0] == every[:wanted], phrase
            best, _ = text_search.best_hits(wh, phrase, 100)
            assert best == text_search.search(phrase, iter_current_bodies(wh), 100), phrase
            if phrase != "—":  # a phrase without a word to look up reads every document
                assert reading.indexed and reading.changed > 0, phrase


def test_a_document_changed_after_the_build_is_found_as_it_is_now(indexed: str) -> None:
    with Warehouse.open(indexed, read_only=True) as wh:
        state = search_index.index_state(wh)
        assert state is not None
        changed = search_index.changed_since_build(wh, state)
    assert EDITED in changed and "nhtsa/complaint/11561423" in changed
    # the new complaint (run 4, after the build) and the edited one, as run 4 left them
    assert [h["doc_id"] for h in _cli_hits(indexed, "brake pedal")[0]] == [
        "nhtsa/complaint/11561423"
    ]
    edited = next(h for h in _cli_hits(indexed, "stalled")[0] if h["doc_id"] == EDITED)
    assert edited["revision"] == 2
    # the comment deleted in run 4 is no hit any more, though the index holds its words
    assert [h["doc_id"] for h in _cli_hits(indexed, "Same here")[0]] == []


def test_the_command_and_the_web_view_read_through_the_index(indexed: str) -> None:
    hits, stderr = _cli_hits(indexed, "stalled")
    assert hits and "every document read" not in stderr
    with TestClient(create_app(indexed)) as client:
        data = client.get("/search.json", params={"q": "stalled"}).json()
        html = client.get("/search", params={"q": "stalled"}).text
    assert data["read"]["indexed"] is True
    assert [h["doc_id"] for h in data["hits"]] == sorted(h["doc_id"] for h in hits)
    assert "Read through the search index" in html


def test_without_an_index_every_document_is_read_and_the_search_says_so(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    location = fixture.shared(tmp_path_factory)
    hits, stderr = _cli_hits(location, "stalled")
    assert [h["doc_id"] for h in hits] == [EDITED]
    assert "no search index: every document read (receipts index)" in stderr
    with TestClient(create_app(location)) as client:
        data = client.get("/search.json", params={"q": "stalled"}).json()
    assert data["read"]["indexed"] is False and [h["doc_id"] for h in data["hits"]] == [EDITED]


def test_a_rebuild_replaces_the_index_and_catches_up(indexed_own: str) -> None:
    indexed = indexed_own
    result = cli("index", "--warehouse", indexed, "--json")
    assert result.exit_code == 0, result.output
    with Warehouse.open(indexed, read_only=True) as wh:
        state = search_index.index_state(wh)
        assert state is not None and search_index.changed_since_build(wh, state) == set()
        first, reading = text_search.first_hits(wh, "stalled", 10)
        assert first == _scan(wh, "stalled") and reading.changed == 0
    text = cli("index", "--warehouse", indexed)
    assert text.exit_code == 0 and "indexed" in text.stdout
