"""An NDJSON target is its file, however the path is written: a push to
``./out/x.ndjson`` and a ``drift --target`` of ``/abs/out/x.ndjson`` are one target, so a
document deleted from the file in between is found."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import cli, write_manifest

MANIFEST = """
[corpus]
name = "ident"
namespace = "ident"

[[synthetic]]
name = "a"
count = 3
size = 64
complete = true
"""


def test_a_deletion_is_found_whether_the_path_is_relative_or_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    manifest = write_manifest(tmp_path, MANIFEST)
    warehouse = tmp_path / "w.duckdb"
    assert cli("ingest", manifest, "--warehouse", warehouse).exit_code == 0
    pushed = cli("publish", manifest, "--warehouse", warehouse, "--target", "ndjson:./out/x.ndjson")
    assert pushed.exit_code == 0, pushed.output
    absolute = (tmp_path / "out" / "x.ndjson").resolve()
    lines = absolute.read_text(encoding="utf-8").splitlines()
    removed = json.loads(lines[0])["_id"]
    absolute.write_text("\n".join(lines[1:]) + "\n", encoding="utf-8")

    result = cli(
        "drift", manifest, "--warehouse", warehouse, "--target", "--target-out", absolute,
        "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    target = json.loads(result.stdout)["target_drift"]
    assert target["last_push"] is not None
    assert target["deleted"] == [removed]
    assert target["target"] == f"ndjson:{absolute}"
