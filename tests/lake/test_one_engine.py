"""One DuckDB engine for every warehouse: the base install pins it, the lake extra only adds
the extension wheels built for that same version, and the venv runs that version."""

from __future__ import annotations

from importlib.metadata import requires

import duckdb
from packaging.requirements import Requirement


def test_the_lake_extra_adds_extensions_for_the_pinned_engine_only() -> None:
    declared = [Requirement(text) for text in requires("receipts") or []]
    (engine,) = [r for r in declared if r.name == "duckdb"]
    assert engine.marker is None  # in the base install
    (pin,) = engine.specifier
    assert pin.operator == "=="
    lake = [r for r in declared if r.marker is not None and r.marker.evaluate({"extra": "lake"})]
    assert lake
    for requirement in lake:
        assert requirement.name.startswith("duckdb-extension"), requirement
        assert str(requirement.specifier) == f"=={pin.version}", requirement
    assert duckdb.__version__ == pin.version
