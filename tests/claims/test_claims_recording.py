"""When ``receipts verify-claims`` records a check: once per change of what it found (or
with ``--record``), never for printing the same check again in another format; and on a
warehouse this process may not write (a read-only file in a read-only folder) it checks,
prints and says it recorded nothing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import corpus_fixture as fixture
from tests.conftest import cli
from tests.observe.receivers import receiver

STALLED_DOC = "nhtsa/complaint/11561421"
CLAIMS = [
    {"claim_id": "a", "doc_id": STALLED_DOC, "quote": "the vehicle stalled", "revision": 1},
    {"claim_id": "b", "doc_id": STALLED_DOC, "quote": "on the highway", "revision": 1},
]


@pytest.fixture
def warehouse(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    copy = tmp_path / "claims.duckdb"
    shutil.copyfile(fixture.shared(tmp_path_factory), copy)
    return str(copy)


def write_claims(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def check_ids(warehouse: str, claim_id: str) -> list[int]:
    result = cli("claims", "history", claim_id, "--warehouse", warehouse, "--json")
    assert result.exit_code == 0, result.output
    return [c["check_id"] for c in json.loads(result.stdout)["checks"]]


def test_rendering_a_check_in_every_format_records_it_once(tmp_path: Path, warehouse: str) -> None:
    path = write_claims(tmp_path / "c.ndjson", CLAIMS)
    outputs = {}
    for fmt in ("text", "md", "html", "json"):
        result = cli("verify-claims", "--file", path, "--warehouse", warehouse, "--format", fmt)
        assert result.exit_code == 0, result.output
        outputs[fmt] = result
    assert check_ids(warehouse, "a") == check_ids(warehouse, "b") == [1]
    assert "not recorded: the same findings as check 1" in outputs["md"].stderr
    report = json.loads(outputs["json"].stdout)
    assert (report["check_id"], report["recorded"], report["not_recorded"]) == (
        1,
        False,
        "unchanged",
    )
    # every rendering shows the same changes: those of the check that was recorded
    assert "first check → stale" in outputs["text"].stdout
    assert "first check → stale" in outputs["html"].stdout


def test_a_check_that_finds_something_else_is_recorded(tmp_path: Path, warehouse: str) -> None:
    path = write_claims(tmp_path / "c.ndjson", CLAIMS)
    assert cli("verify-claims", "--file", path, "--warehouse", warehouse).exit_code == 0
    # another quote for claim b: what the check finds changes
    write_claims(path, [CLAIMS[0], {**CLAIMS[1], "quote": "without warning"}])
    result = cli("verify-claims", "--file", path, "--warehouse", warehouse, "--json")
    assert json.loads(result.stdout)["recorded"]
    # a claim left out of the set changes it too
    write_claims(path, CLAIMS[:1])
    assert json.loads(
        cli("verify-claims", "--file", path, "--warehouse", warehouse, "--json").stdout
    )["recorded"]
    assert check_ids(warehouse, "a") == [1, 2, 3]
    assert check_ids(warehouse, "b") == [1, 2]


def test_a_check_shown_again_notifies_nobody_again(tmp_path: Path, warehouse: str) -> None:
    path = write_claims(tmp_path / "c.ndjson", CLAIMS[:1])
    with receiver() as hook:
        args = ("--notify", hook.url("json"), "--notify-on", "claims")
        verify = ("verify-claims", "--file", path, "--warehouse", warehouse, *args)
        assert cli(*verify).exit_code == 0  # a holds
        write_claims(path, [{**CLAIMS[0], "quote": "on the highway"}])  # a: now stale
        for fmt in ("text", "md", "html"):
            result = cli(*verify, "--format", fmt)
            assert result.exit_code == 0, result.output
    [post] = hook.bodies  # told once, not once per rendering
    assert "a (nhtsa/complaint/11561421): holds -> stale" in post["message"]


def test_record_records_a_check_that_found_the_same(tmp_path: Path, warehouse: str) -> None:
    path = write_claims(tmp_path / "c.ndjson", CLAIMS)
    for _ in range(2):
        result = cli("verify-claims", "--file", path, "--warehouse", warehouse, "--record")
        assert result.exit_code == 0 and "not recorded" not in result.stderr
    assert check_ids(warehouse, "a") == [1, 2]


# -- a read-only warehouse -----------------------------------------------------------------
def _as_reader() -> list[str]:
    """A command prefix that runs without the right to write files this test made read-only:
    as root, without the capabilities that override file permissions."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("needs setpriv (util-linux) to drop root's file-permission override")
    prefix = [setpriv, "--bounding-set=-dac_override,-dac_read_search", "--"]
    probe = subprocess.run([*prefix, "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"cannot drop capabilities here: {probe.stderr.decode()[:200]}")
    return prefix


@pytest.fixture
def read_only_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="receipts-read-only-"))
    try:
        yield folder
    finally:
        folder.chmod(0o755)
        shutil.rmtree(folder, ignore_errors=True)


def _receipts(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*_as_reader(), sys.executable, "-m", "pipelines.cli", *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )


def test_a_read_only_warehouse_is_checked_and_nothing_recorded(
    tmp_path_factory: pytest.TempPathFactory, read_only_folder: Path
) -> None:
    warehouse = read_only_folder / "w.duckdb"
    shutil.copyfile(fixture.shared(tmp_path_factory), warehouse)
    claims = write_claims(read_only_folder / "c.ndjson", CLAIMS)
    before = warehouse.read_bytes()
    warehouse.chmod(0o444)
    claims.chmod(0o444)
    read_only_folder.chmod(0o555)

    result = _receipts("verify-claims", "--file", claims, "--warehouse", warehouse, "--json")
    assert result.returncode == 0, result.stderr
    assert "internal error" not in result.stderr
    assert "not recorded: the warehouse is read-only" in result.stderr
    report = json.loads(result.stdout)
    assert {c["claim_id"]: c["status"] for c in report["claims"]} == {"a": "holds", "b": "stale"}
    assert (report["recorded"], report["not_recorded"], report["check_id"]) == (
        False,
        "read-only",
        None,
    )
    text = _receipts("verify-claims", "--file", claims, "--warehouse", warehouse)
    assert text.returncode == 0 and "2 claims checked: 1 holds, 1 stale" in text.stdout
    # --record cannot be honoured: said, and a failure
    asked = _receipts("verify-claims", "--file", claims, "--warehouse", warehouse, "--record")
    assert asked.returncode == 1 and "read-only" in asked.stderr

    assert sorted(p.name for p in read_only_folder.iterdir()) == ["c.ndjson", "w.duckdb"]
    assert warehouse.read_bytes() == before
