"""A lake's DuckDB extensions: each binary through DuckDB's signature check once, then known
by its SHA-256 (warehouse.extensions); a binary DuckDB refuses is never loaded."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
from pathlib import Path

import duckdb
import pytest

from tests.conftest import cli
from warehouse import extensions
from warehouse.backends import connect_lake, load_extension, parse
from warehouse.errors import WarehouseError
from warehouse.store import Warehouse

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("duckdb_extension_ducklake") is None,
    reason="needs receipts[lake]: make install",
)


@pytest.fixture()
def checks(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """A cache of its own, and the loads DuckDB's signature check was asked of."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    extensions.forget()
    asked: list[str] = []
    check = extensions.signature_check

    def counted(load: str) -> None:
        asked.append(load)
        check(load)

    monkeypatch.setattr(extensions, "signature_check", counted)
    return asked


def _settings(con: duckdb.DuckDBPyConnection) -> tuple[bool, bool]:
    row = con.execute(
        "SELECT current_setting('allow_unsigned_extensions'), "
        "current_setting('autoload_known_extensions')"
    ).fetchone()
    assert row is not None
    return bool(row[0]), bool(row[1])


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_each_binary_is_checked_by_duckdb_once_then_known_by_its_sha256(
    checks: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake = f"ducklake:sqlite:{tmp_path / 'c.sqlite'}"
    first = cli("migrate", "--warehouse", lake, "--data-path", tmp_path / "data")
    assert first.exit_code == 0, first.stderr
    binaries = [extensions.wheel_binary(n) for n in ("ducklake", "sqlite_scanner")]
    assert all(binaries)
    assert sorted(checks) == sorted(f"'{b}'" for b in binaries)
    recorded = sorted(p.name for p in extensions.checked_folder().iterdir())
    assert [n for n in recorded if not n.startswith("stat-")] == sorted(
        _sha256(b) for b in binaries if b
    )
    assert [extensions.recorded(b) for b in binaries if b] == [_sha256(b) for b in binaries if b]
    assert extensions.checked_folder().is_relative_to(tmp_path / "cache" / "receipts")

    again = cli("runs", "--warehouse", lake)
    assert again.exit_code == 0, again.stderr
    assert len(checks) == 2  # not checked again
    extensions.forget()  # as a new process would start
    hashed: list[Path] = []
    monkeypatch.setattr(extensions, "digest", lambda binary: hashed.append(binary) or "")
    con = connect_lake(parse(lake), read_only=True, config={})
    try:
        # DuckDB does not check the known binaries again, and loads nothing else on its own
        assert _settings(con) == (True, False)
    finally:
        con.close()
    assert len(checks) == 2
    assert hashed == []  # known by their stat: not hashed again


def test_a_binary_whose_stat_changed_is_hashed_again(
    checks: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A binary written to (here only its times) is hashed again; the same bytes are then
    still the ones DuckDB checked, and it is not checked again."""
    genuine = extensions.wheel_binary("ducklake")
    assert genuine is not None
    copy = tmp_path / "ducklake.duckdb_extension"
    shutil.copy(genuine, copy)
    monkeypatch.setattr(extensions, "wheel_binary", lambda name: copy)
    assert extensions.checked(["ducklake"]) == {"ducklake": copy}
    assert checks == [f"'{copy}'"]
    key = extensions.stat_key(copy)
    assert extensions.recorded(copy) == _sha256(copy)

    os.utime(copy, ns=(0, 0))  # a write would move the same times
    assert extensions.stat_key(copy) != key
    assert extensions.recorded(copy) is None
    extensions.forget()
    hashed: list[Path] = []
    digest = extensions.digest
    monkeypatch.setattr(extensions, "digest", lambda b: hashed.append(b) or digest(b))
    assert extensions.checked(["ducklake"]) == {"ducklake": copy}
    assert hashed == [copy]
    assert checks == [f"'{copy}'"]  # the same bytes: not checked again
    assert extensions.recorded(copy) == _sha256(copy)


def _altered(tmp_path: Path) -> Path:
    genuine = extensions.wheel_binary("ducklake")
    assert genuine is not None
    altered = tmp_path / "ducklake.duckdb_extension"
    shutil.copy(genuine, altered)
    data = bytearray(altered.read_bytes())
    data[len(data) // 2] ^= 0xFF
    altered.write_bytes(bytes(data))
    return altered


@pytest.mark.parametrize("genuine_recorded", [False, True])
def test_a_binary_duckdb_refuses_is_neither_loaded_nor_recorded(
    checks: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    genuine_recorded: bool,
) -> None:
    """An altered binary fails the check, whether or not the genuine one's SHA-256 was
    recorded: a recorded SHA-256 admits only the bytes it is the hash of."""
    lake = f"ducklake:sqlite:{tmp_path / 'c.sqlite'}"
    if genuine_recorded:
        with Warehouse.open(lake, data_path=str(tmp_path / "data")):
            pass
    altered = _altered(tmp_path)
    wheel = extensions.wheel_binary
    monkeypatch.setattr(
        extensions, "wheel_binary", lambda name: altered if name == "ducklake" else wheel(name)
    )
    before = sorted(p.name for p in extensions.checked_folder().glob("*"))
    extensions.forget()
    with pytest.raises(WarehouseError) as refused:
        Warehouse.open(lake, data_path=str(tmp_path / "data"))
    message = str(refused.value)
    assert f"DuckDB refuses the ducklake extension at {altered}" in message
    assert "signature is either missing or invalid" in message
    assert "pip install --force-reinstall duckdb-extension-ducklake==" in message
    assert sorted(p.name for p in extensions.checked_folder().glob("*")) == before
    assert _sha256(altered) not in before


def test_a_cache_that_cannot_be_written_has_duckdb_check_every_time(
    checks: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    not_a_folder = tmp_path / "cache-file"
    not_a_folder.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(not_a_folder))
    lake = f"ducklake:sqlite:{tmp_path / 'c.sqlite'}"
    for _ in range(2):
        extensions.forget()  # as a new process would start
        with Warehouse.open(lake, data_path=str(tmp_path / "data")) as wh:
            assert wh.applied_migrations()
            assert len(checks) == 2  # each binary once in the process
        checks.clear()


def test_an_extension_without_a_wheel_is_checked_on_a_connection_that_does_not_check(
    checks: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DuckDB's own folder (no wheel): checked by DuckDB before a connection that loads
    known binaries unchecked loads it; a refusal says which extra to install."""
    target = parse(f"ducklake:sqlite:{tmp_path / 'c.sqlite'}", str(tmp_path / "data"))
    con = connect_lake(target, read_only=False, config={})
    try:
        assert _settings(con) == (True, False)
        monkeypatch.setattr(extensions, "wheel_binary", lambda name: None)
        with pytest.raises(WarehouseError, match=r"receipts\[lake\]"):
            load_extension(con, "httpfs_not_installed")
    finally:
        con.close()
    assert checks[-1] == "httpfs_not_installed"
