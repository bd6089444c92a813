"""Bundle files are written whole or not at all, into a directory that exists (each file
renamed over its name) or one that receipts makes (filled under a hidden name beside it,
then renamed once)."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipelines.proofs import files
from warehouse.errors import UsageError

FILES = [(f"c{n}.receipt.json", f'{{"n": {n}}}\n'.encode()) for n in range(5)]


def _listing(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def test_a_new_directory_is_filled_beside_it_then_renamed(tmp_path: Path) -> None:
    out = tmp_path / "deep" / "bundles"
    seen: list[list[str]] = []

    def produced() -> Iterator[tuple[str, bytes]]:
        for made in FILES:
            seen.append(sorted(p.name for p in out.iterdir()))  # nothing shows before the end
            yield made

    files.write_all(out, produced())
    assert seen == [[]] * len(FILES)
    assert _listing(out) == dict(FILES)
    assert [p.name for p in out.parent.iterdir()] == ["bundles"]  # no hidden directory left


def test_an_existing_directory_keeps_its_files_and_gets_each_replaced_whole(
    tmp_path: Path,
) -> None:
    out = tmp_path / "bundles"
    out.mkdir()
    (out / "other.txt").write_bytes(b"kept")
    (out / "c0.receipt.json").write_bytes(b'{"trunc')
    files.write_all(out, iter(FILES))
    assert _listing(out) == {**dict(FILES), "other.txt": b"kept"}


def test_a_new_directory_filled_meanwhile_gets_the_files_moved_in(tmp_path: Path) -> None:
    out = tmp_path / "bundles"

    def produced() -> Iterator[tuple[str, bytes]]:
        yield FILES[0]
        (out / "late.txt").write_bytes(b"late")  # someone else writes into it meanwhile
        yield from FILES[1:]

    files.write_all(out, produced())
    assert _listing(out) == {**dict(FILES), "late.txt": b"late"}
    assert [p.name for p in tmp_path.iterdir()] == ["bundles"]


@pytest.mark.parametrize("exists", [False, True])
def test_a_failed_write_leaves_no_file_cut_short(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exists: bool
) -> None:
    out = tmp_path / "bundles"
    if exists:
        out.mkdir()
    real, calls = os.write, []

    def third_fails(fd: int, data: memoryview) -> int:
        calls.append(len(data))
        if len(calls) == 3:
            real(fd, data[:2])
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data)

    monkeypatch.setattr("pipelines.proofs.files.os.write", third_fails)
    with pytest.raises(UsageError, match=r"c2\.receipt\.json could not be written"):
        files.write_all(out, iter(FILES))
    # a new directory: nothing of it shows; an existing one: the files written before
    expected = dict(FILES[:2]) if exists else {}
    assert _listing(out) == expected
    assert [p.name for p in tmp_path.iterdir()] == ["bundles"]


@pytest.mark.parametrize("exists", [False, True])
def test_past_the_first_files_a_writer_process_writes_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exists: bool
) -> None:
    monkeypatch.setattr(files, "INLINE_FILES", 1)
    started: list[files._Writer] = []
    real = files._start

    def start(directory: str, mode: str) -> files._Writer | None:
        started.append(real(directory, mode))
        return started[-1]

    monkeypatch.setattr(files, "_start", start)
    out = tmp_path / "bundles"
    if exists:
        out.mkdir()
        (out / "c3.receipt.json").write_bytes(b'{"trunc')
    big = ("c9.receipt.json", bytes(range(256)) * 8_000)  # more than the pipe holds
    files.write_all(out, iter([*FILES, big]))
    assert len(started) == 1
    assert _listing(out) == dict([*FILES, big])
    assert [p.name for p in tmp_path.iterdir()] == ["bundles"]


@pytest.mark.parametrize("exists", [False, True])
def test_a_file_the_writer_process_cannot_write_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exists: bool
) -> None:
    monkeypatch.setattr(files, "INLINE_FILES", 1)
    out = tmp_path / "bundles"
    if exists:
        out.mkdir()
    too_long = "x" * 300 + ".receipt.json"  # longer than a file name may be
    produced = [*FILES[:3], (too_long, b"{}\n"), *FILES[3:]]
    with pytest.raises(UsageError, match=r"x{300}\.receipt\.json could not be written .*too long"):
        files.write_all(out, iter(produced))
    expected = dict(FILES[:3]) if exists else {}
    assert _listing(out) == expected
    assert [p.name for p in tmp_path.iterdir()] == ["bundles"]


def test_a_failure_while_building_stops_the_writer_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(files, "INLINE_FILES", 1)
    out = tmp_path / "bundles"

    def produced() -> Iterator[tuple[str, bytes]]:
        yield from FILES
        raise RuntimeError("building failed")

    with pytest.raises(RuntimeError, match="building failed"):
        files.write_all(out, produced())
    assert _listing(out) == {}
    assert [p.name for p in tmp_path.iterdir()] == ["bundles"]


def test_without_a_writer_process_every_file_is_written_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(files, "INLINE_FILES", 1)

    def cannot_start(*_: object, **__: object) -> None:
        raise OSError(errno.EAGAIN, "Resource temporarily unavailable")

    monkeypatch.setattr(files.subprocess, "Popen", cannot_start)
    out = tmp_path / "bundles"
    files.write_all(out, iter(FILES))
    assert _listing(out) == dict(FILES)
