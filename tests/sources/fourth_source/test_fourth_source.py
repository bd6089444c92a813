"""A fourth upstream is one package plus one registration.

The ``notes`` source (:mod:`tests.sources.fourth_source.source`) is registered from this test and
run through the real ``receipts ingest`` command against a loopback fake that only its own
endpoint's environment variable leads to. No shared module (the HTTP policy, the registry,
manifest validation, the test fixtures) knows it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pipelines import USER_AGENT
from sources import registry
from sources.base import Source
from sources.http import Endpoint
from tests.conftest import cli, write_manifest
from tests.sources.fourth_source.source import ENDPOINT, SOURCE
from tests.sources.fourth_source.upstream import NotesUpstream

MANIFEST = """
[corpus]
name = "pinboard"
namespace = "pinboard"

[[notes]]
board = "kitchen"

[[notes]]
board = "garage"
"""


@pytest.fixture
def notes_registered() -> Iterator[Source[Any]]:
    registry.register(SOURCE)
    yield SOURCE
    registry.unregister(SOURCE.name)


@pytest.fixture
def upstream(stand_in: Callable[[Endpoint, str], str]) -> Iterator[NotesUpstream]:
    fake = NotesUpstream(
        boards={
            "kitchen": [{"id": 1, "text": "buy oats"}, {"id": 2, "text": "descale the kettle"}],
            "garage": [{"id": 7, "text": "winter tyres on"}],
        }
    )
    with fake.serving() as url:
        assert stand_in(ENDPOINT, url) == url
        yield fake


def counts(result_stdout: str) -> dict[str, int]:
    report = json.loads(result_stdout)
    assert report["status"] == "ok", report["failures"]
    notes: dict[str, int] = report["counts"]["notes"]
    return notes


def test_a_registered_fourth_source_ingests_through_the_cli(
    notes_registered: Source[Any],
    upstream: NotesUpstream,
    tmp_path: Path,
    warehouse_path: Path,
) -> None:
    manifest = write_manifest(tmp_path, MANIFEST)
    checked = cli("manifest", "check", manifest)
    assert checked.exit_code == 0, checked.output

    first = cli("ingest", manifest, "--warehouse", warehouse_path, "--json")
    assert first.exit_code == 0, first.output
    assert counts(first.stdout) == {
        "new": 3,
        "changed": 0,
        "unchanged": 0,
        "gone": 0,
        "restored": 0,
        "failed": 0,
    }
    # Every request went to the loopback fake, named by the caller's User-Agent.
    assert sorted(path for path, _ in upstream.requests) == [
        "/boards/garage/notes",
        "/boards/kitchen/notes",
    ]
    assert {headers["User-Agent"] for _, headers in upstream.requests} == {USER_AGENT}

    # Idempotent: an unchanged upstream adds no revision.
    again = cli("ingest", manifest, "--warehouse", warehouse_path, "--json")
    assert again.exit_code == 0, again.output
    assert counts(again.stdout) == {
        "new": 0,
        "changed": 0,
        "unchanged": 3,
        "gone": 0,
        "restored": 0,
        "failed": 0,
    }
    history = cli("history", "notes/note/kitchen/2", "--warehouse", warehouse_path, "--json")
    assert [r["revision"] for r in json.loads(history.stdout)["revisions"]] == [1]

    # The upstream moves: one note edited, one taken off its (complete) board.
    upstream.boards["kitchen"] = [{"id": 1, "text": "buy oats and honey"}]
    third = cli("ingest", manifest, "--warehouse", warehouse_path, "--json")
    assert third.exit_code == 0, third.output
    assert counts(third.stdout) == {
        "new": 0,
        "changed": 1,
        "unchanged": 1,
        "gone": 1,
        "restored": 0,
        "failed": 0,
    }
    assert len(upstream.requests) == 6


def test_unregistered_its_table_is_unknown(tmp_path: Path) -> None:
    assert "notes" not in registry.SOURCES
    result = cli("manifest", "check", write_manifest(tmp_path, MANIFEST))
    assert result.exit_code == 2
    assert "unknown table [notes]" in result.stderr


def test_its_endpoint_is_known_once_it_is_registered() -> None:
    # What clears or points every upstream (the demo, the test environment) finds it there.
    assert ENDPOINT not in registry.endpoints()
    registry.register(SOURCE)
    try:
        assert ENDPOINT in registry.endpoints()
    finally:
        registry.unregister(SOURCE.name)
