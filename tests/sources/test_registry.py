"""The source registry: what the wheel registers, what bench and tests add, and where each
source's endpoints are declared and documented."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from bench import synthetic_source
from pipelines.manifest import load_manifest
from sources import registry
from sources.forem import source as forem
from sources.github import source as github
from sources.nhtsa import source as nhtsa
from tests.conftest import REPO

SMOKE = REPO / "bench" / "synthetic-smoke.toml"


def test_the_wheel_registers_the_upstreams_and_no_scaffolding() -> None:
    """A production ``receipts manifest check`` refuses ``[[synthetic]]`` entries."""
    result = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "manifest", "check", str(SMOKE)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("RECEIPTS_")},
        check=False,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert "unknown table [synthetic]; valid tables: corpus, publish, github, forem, nhtsa" in (
        result.stderr
    )


def test_bench_and_tests_register_the_synthetic_source() -> None:
    assert registry.SOURCES["synthetic"] is synthetic_source.SOURCE  # tests/conftest.py
    assert load_manifest(SMOKE).sources() == ["synthetic"]


def test_registering_again_is_harmless_and_a_taken_name_is_refused() -> None:
    before = dict(registry.SOURCES)
    assert registry.register(nhtsa.SOURCE) is nhtsa.SOURCE
    assert dict(registry.SOURCES) == before
    with pytest.raises(ValueError, match="'nhtsa' is already registered"):
        registry.register(dataclasses.replace(forem.SOURCE, name="nhtsa"))
    assert dict(registry.SOURCES) == before


def test_each_upstream_declares_its_endpoints() -> None:
    assert [e.name for e in nhtsa.SOURCE.endpoints] == ["nhtsa", "nhtsa_static"]
    assert [e.name for e in github.SOURCE.endpoints] == ["github_raw", "github_api"]
    assert [e.name for e in forem.SOURCE.endpoints] == ["forem"]
    variables = [e.env_var for e in registry.endpoints()]
    assert len(variables) == len(set(variables)) == 5


def test_the_configuration_page_documents_every_endpoint() -> None:
    page = (REPO / "docs" / "configuration.md").read_text("utf-8")
    for endpoint in registry.endpoints():
        [row] = [line for line in page.splitlines() if line.startswith(f"| `{endpoint.env_var}` |")]
        assert f"(default {endpoint.default_url})" in row, endpoint


def test_the_synthetic_stream_stays_paused_while_its_hold_file_exists(tmp_path: Path) -> None:
    hold = tmp_path / "hold"
    hold.touch()
    entry = synthetic_source.SyntheticEntry(
        name="held", count=5, pause_every=2, hold_while=str(hold)
    )
    taken: list[str] = []

    def consume() -> None:
        for record in synthetic_source.records(entry):
            taken.append(record.doc_id)

    held = tmp_path / "hold.held"
    reader = threading.Thread(target=consume)
    reader.start()
    deadline = time.monotonic() + 60
    while not held.exists():  # touched by the stream as it enters the hold
        assert time.monotonic() < deadline, "the stream never reached its hold"
        time.sleep(0.01)
    time.sleep(0.3)  # it stays there (not a race: a stream that held goes nowhere)
    assert len(taken) == 2  # paused before record 2 while the file exists
    hold.unlink()
    reader.join(timeout=10)
    assert not reader.is_alive()
    assert taken == [f"synthetic/record/held-{i}" for i in range(5)]
