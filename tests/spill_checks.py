"""Checks shared by the tests of where warehouses spill (:mod:`warehouse.spill`)."""

from __future__ import annotations

from pathlib import Path

from warehouse.store import Warehouse


def assert_each_spills_apart(
    first: Warehouse, second: Warehouse, temporary: Path, prefix: str
) -> None:
    """``first`` and ``second`` spill to two directories ``prefix*`` of their own under
    ``temporary``; closing ``first`` removes its own and only its own. Both are closed."""
    try:
        spills = [
            Path(w._scalar("SELECT current_setting('temp_directory')")) for w in (first, second)
        ]
        assert spills[0] != spills[1]
        for spill in spills:
            assert spill.parent == temporary and spill.name.startswith(prefix)
            assert spill.is_dir()
        first.close()
        assert not spills[0].exists() and spills[1].is_dir()
    finally:
        first.close()
        second.close()
