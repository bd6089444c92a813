"""The key file: made 0600, never overwritten, refused when others may read it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from warehouse.tlog import keys, note
from warehouse.tlog.errors import KeyFileError


def test_a_key_file_is_made_0600_and_loads_back(tmp_path: Path) -> None:
    path = tmp_path / "log.key"
    old = os.umask(0)
    try:
        signer = keys.make_key_file(path, "receipts.example/log")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text() == signer.key_string() + "\n"
    assert keys.load_key_file(path) == signer


def test_an_existing_file_is_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "log.key"
    first = keys.make_key_file(path, "receipts.example/log")
    with pytest.raises(KeyFileError, match="already exists; refusing to overwrite"):
        keys.make_key_file(path, "receipts.example/log")
    assert keys.load_key_file(path) == first


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o620, 0o644])
def test_a_key_file_open_to_others_is_refused_naming_the_chmod(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "log.key"
    keys.make_key_file(path, "receipts.example/log")
    path.chmod(mode)
    with pytest.raises(KeyFileError, match=rf"mode {mode:04o}\); run `chmod 600 {path}`"):
        keys.load_key_file(path)


def test_a_file_without_a_key_is_refused_without_showing_it(tmp_path: Path) -> None:
    path = tmp_path / "log.key"
    signer = note.Signer.generate("receipts.example/log")
    damaged = signer.key_string()[:-6] + "\n"
    path.write_text(damaged)
    path.chmod(0o600)
    with pytest.raises(KeyFileError, match="does not hold a signer key") as caught:
        keys.load_key_file(path)
    assert damaged.strip().split("+", 4)[4] not in str(caught.value)
    with pytest.raises(KeyFileError, match="no key file"):
        keys.load_key_file(tmp_path / "missing.key")
