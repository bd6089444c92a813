"""The foundation commands, driven the way a user drives them."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.conftest import cli, write_manifest
from tests.tampering import forge_snapshot
from warehouse.store import Warehouse

MANIFEST = """
[corpus]
name = "synth"
namespace = "synth"

[[synthetic]]
name = "a"
count = 50
size = 200
complete = true
"""


@pytest.fixture
def manifest(tmp_path: Path) -> Path:
    return write_manifest(tmp_path, MANIFEST)


def test_ingest_json_reports_counts_per_source(manifest: Path, warehouse_path: Path) -> None:
    first = cli("ingest", manifest, "--warehouse", warehouse_path, "--json")
    assert first.exit_code == 0, first.output
    report = json.loads(first.stdout)
    assert report["status"] == "ok"
    assert report["counts"]["synthetic"] == {
        "new": 50,
        "changed": 0,
        "unchanged": 0,
        "gone": 0,
        "restored": 0,
        "failed": 0,
    }
    again = json.loads(cli("ingest", manifest, "--warehouse", warehouse_path, "--json").stdout)
    assert again["run_id"] == report["run_id"] + 1
    assert again["counts"]["synthetic"]["unchanged"] == 50


def test_warehouse_comes_from_the_environment(manifest: Path, tmp_path: Path) -> None:
    target = tmp_path / "env.duckdb"
    result = cli("ingest", manifest, "--json", env={"RECEIPTS_WAREHOUSE": str(target)})
    assert result.exit_code == 0
    assert target.exists()


def test_runs_history_show(manifest: Path, warehouse_path: Path) -> None:
    cli("ingest", manifest, "--warehouse", warehouse_path)
    runs = json.loads(cli("runs", "--warehouse", warehouse_path, "--json").stdout)
    assert [r["status"] for r in runs] == ["ok"]
    assert runs[0]["manifest"] == "synth"

    hist = json.loads(
        cli("history", "synthetic/record/a-3", "--warehouse", warehouse_path, "--json").stdout
    )
    rev = hist["revisions"][0]
    assert rev["revision"] == 1 and rev["valid_from_run"] == 1 and rev["current"]

    shown = cli("show", "synthetic/record/a-3", "--warehouse", warehouse_path)
    assert hashlib.sha256(shown.stdout_bytes).hexdigest() == rev["content_hash"]
    by_hash = cli(
        "show",
        "synthetic/record/a-3",
        "--hash",
        rev["content_hash"][:12],
        "--warehouse",
        warehouse_path,
    )
    assert by_hash.stdout_bytes == shown.stdout_bytes

    text = cli("history", "synthetic/record/a-3", "--warehouse", warehouse_path).output
    assert rev["content_hash"] in text


def test_unknown_document_is_a_clear_error(manifest: Path, warehouse_path: Path) -> None:
    cli("ingest", manifest, "--warehouse", warehouse_path)
    result = cli("history", "nhtsa/complaint/1", "--warehouse", warehouse_path)
    assert result.exit_code == 1
    assert "no document 'nhtsa/complaint/1'" in result.stderr
    missing = cli("show", "synthetic/record/a-3", "--revision", "9", "--warehouse", warehouse_path)
    assert missing.exit_code == 1 and "has no revision 9" in missing.stderr


def test_verify_detects_a_corrupted_snapshot(manifest: Path, warehouse_path: Path) -> None:
    cli("ingest", manifest, "--warehouse", warehouse_path)
    ok = cli("verify", "--warehouse", warehouse_path, "--json")
    assert ok.exit_code == 0 and json.loads(ok.stdout)["checked"] == 50
    with Warehouse.open(str(warehouse_path)) as wh:  # simulate bit rot behind our back
        wh._connection_for_tests().execute(
            "UPDATE snapshots SET body = 'tampered'::BLOB WHERE content_hash = "
            "(SELECT min(content_hash) FROM snapshots)"
        )
    bad = cli("verify", "--warehouse", warehouse_path)
    assert bad.exit_code == 1
    assert "1 mismatches" in bad.output


def test_bad_usage_exits_2(manifest: Path, warehouse_path: Path) -> None:
    assert cli("ingest", manifest, "--only", "rss", "--warehouse", warehouse_path).exit_code == 2
    assert cli("show", "x/y/z", "--revision", "1", "--hash", "ab").exit_code == 2
    assert cli("nope").exit_code == 2


def test_read_commands_on_a_missing_warehouse(tmp_path: Path) -> None:
    result = cli("runs", "--warehouse", tmp_path / "none.duckdb")
    assert result.exit_code == 1
    assert "no warehouse at" in result.stderr


def test_every_command_has_help() -> None:
    for args in (["--help"], ["ingest", "--help"], ["manifest", "check", "--help"]):
        result = cli(*args)
        assert result.exit_code == 0 and "Usage:" in result.output


def _tamper(warehouse_path: Path, doc: str) -> tuple[str, str]:
    """Replace the stored bytes of ``doc``'s snapshot with plausible forged JSON, behind the
    warehouse's back; returns (recorded hash, hash of the forged bytes)."""
    return forge_snapshot(str(warehouse_path), doc, b"record 3", b"record FORGED")


def test_a_corrupted_snapshot_is_never_served(
    manifest: Path, warehouse_path: Path, tmp_path: Path
) -> None:
    doc = "synthetic/record/a-3"
    assert cli("ingest", manifest, "--warehouse", warehouse_path).exit_code == 0
    recorded, actual = _tamper(warehouse_path, doc)
    attempts = {
        "show": ("show", doc),
        "diff": ("diff", doc, "1", "1"),
        "verify-quote": ("verify-quote", doc, "record FORGED"),
        "publish": ("publish", manifest, "--out", tmp_path / "out.ndjson"),
    }
    for name, args in attempts.items():
        result = cli(*args, "--warehouse", warehouse_path)
        assert result.exit_code == 1, (name, result.output)
        assert "FORGED" not in result.stdout, name
        line = result.stderr.strip()
        assert len(line.splitlines()) == 1, (name, line)
        assert f"{doc} revision 1 is corrupted" in line, (name, line)
        assert recorded in line and actual in line, (name, line)
    assert (
        not (tmp_path / "out.ndjson").exists()
        or b"FORGED" not in (tmp_path / "out.ndjson").read_bytes()
    )
    # the other documents are still served
    assert cli("show", "synthetic/record/a-4", "--warehouse", warehouse_path).exit_code == 0


def test_a_deeply_nested_manifest_is_a_usage_error(tmp_path: Path, warehouse_path: Path) -> None:
    deep = write_manifest(tmp_path, "a = " + "[" * 3000 + "]" * 3000 + "\n" + MANIFEST, "deep.toml")
    for command in ("ingest", "refresh"):
        result = cli(command, deep, "--warehouse", warehouse_path)
        assert result.exit_code == 2, result.output
        assert result.stderr.strip().splitlines() == [
            f"receipts: {deep}: nested too deeply to read (arrays or tables thousands of "
            "levels deep)"
        ]


def _damage(path: Path, how: str) -> None:
    data = bytearray(path.read_bytes())
    if how == "truncated":
        path.write_bytes(bytes(data[:20_000]))
        return
    # DuckDB's blocks (256 KiB, each led by its checksum) follow three 4 KiB file headers:
    # scribble over every block, leaving the headers intact.
    for start in range(3 * 4096 + 64, len(data) - 64, 8192):
        data[start : start + 64] = b"\xff" * 64
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("how", ["truncated", "checksums"])
def test_a_damaged_warehouse_file_is_one_line(
    manifest: Path, warehouse_path: Path, how: str
) -> None:
    assert cli("ingest", manifest, "--warehouse", warehouse_path).exit_code == 0
    _damage(warehouse_path, how)
    for args in (("verify",), ("runs",), ("show", "synthetic/record/a-3")):
        result = cli(*args, "--warehouse", warehouse_path)
        assert result.exit_code == 1, (args, result.output)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, (args, lines)
        assert lines[0].startswith(f"receipts: warehouse file {warehouse_path} is damaged ("), lines
        assert "restore it from a backup, then run `receipts verify`" in lines[0]
