"""Bundle files are written whole or not at all, into a directory that exists (each file
renamed over its name) or one that receipts makes (filled under a hidden name beside it,
then renamed once)."""

from __future__ import annotations

import errno
import os
import threading
import time
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


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[files._Writer]:
    """Past the first file, a writer process: each one started, in order."""
    monkeypatch.setattr(files, "INLINE_FILES", 1)
    made: list[files._Writer] = []
    real = files._start

    def start(directory: str, mode: str) -> files._Writer | None:
        writer = real(directory, mode)
        if writer is not None:
            made.append(writer)
        return writer

    monkeypatch.setattr(files, "_start", start)
    return made


@pytest.mark.parametrize("exists", [False, True])
def test_past_the_first_files_a_writer_process_writes_them(
    tmp_path: Path, started: list[files._Writer], exists: bool
) -> None:
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


def _names(made: list[tuple[str, bytes]]) -> set[str]:
    return {name for name, _ in made}


def _bundles(tmp_path: Path, exists: bool, kept: tuple[str, bytes]) -> Path:
    """The bundles' directory: made with ``kept`` in it when it ``exists``."""
    out = tmp_path / "bundles"
    if exists:
        out.mkdir()
        (out / kept[0]).write_bytes(kept[1])
    return out


@pytest.mark.parametrize("exists", [False, True])
def test_names_known_up_front_are_created_before_their_bytes_come(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exists: bool
) -> None:
    monkeypatch.setattr(files, "INLINE_FILES", 1)
    out = _bundles(tmp_path, exists, ("c1.receipt.json", b'{"trunc'))
    refused = "c9.receipt.json"  # reserved, never produced: no file is left of it
    seen: list[set[str]] = []

    def produced() -> Iterator[tuple[str, bytes]]:
        for made in FILES:
            # every name is reserved before the first file's bytes are handed over: the
            # writer creates them (empty, under a hidden name) while they are built
            if not seen:
                deadline = time.monotonic() + 10
                while len(_hidden(tmp_path, out, exists)) < len(FILES) + 1:
                    assert time.monotonic() < deadline, "the names were not reserved"
                    time.sleep(0.01)
            seen.append(_hidden(tmp_path, out, exists))
            yield made

    files.write_all(out, produced(), _names(FILES) | {refused})
    assert len(seen[0]) == len(FILES) + 1
    expected = dict(FILES)
    assert _listing(out) == expected  # the reserved name never produced has no file
    assert [p.name for p in tmp_path.iterdir()] == ["bundles"]


def _hidden(tmp_path: Path, out: Path, exists: bool) -> set[str]:
    """The files being written: under the hidden directory beside ``out``, or (into an
    existing one) under their hidden temporary names."""
    if exists:
        return {p.name for p in out.iterdir() if p.name.endswith(".tmp")}
    staging = [p for p in tmp_path.iterdir() if p.name.startswith(".bundles.")]
    return {p.name for p in staging[0].iterdir()} if staging else set()


@pytest.mark.parametrize("exists", [False, True])
def test_a_failure_while_building_removes_the_reserved_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exists: bool
) -> None:
    monkeypatch.setattr(files, "INLINE_FILES", 1)
    out = _bundles(tmp_path, exists, ("c0.receipt.json", b"old"))

    def produced() -> Iterator[tuple[str, bytes]]:
        yield FILES[0]
        raise RuntimeError("building failed")

    with pytest.raises(RuntimeError, match="building failed"):
        files.write_all(out, produced(), _names(FILES))
    # nothing reserved is left, and a file written before the failure is whole
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]
    assert set(_listing(out)) <= {"c0.receipt.json"}
    if exists:
        assert _listing(out)["c0.receipt.json"] in (b"old", FILES[0][1])
    assert [p.name for p in tmp_path.iterdir()] == ["bundles"]


def test_a_name_the_writer_cannot_reserve_is_named_and_nothing_is_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(files, "INLINE_FILES", 1)
    out = tmp_path / "bundles"
    out.mkdir()
    too_long = "x" * 300 + ".receipt.json"  # longer than a file name may be
    with pytest.raises(UsageError, match=r"x{300}\.receipt\.json could not be written .*too long"):
        files.write_all(out, iter(FILES), [*_names(FILES), too_long])
    assert _listing(out) == {}  # the names reserved before it are removed again


@pytest.mark.parametrize("chunk", [1, 7, 64, 1 << 20])
def test_the_writer_reads_whole_records_whatever_its_chunks(
    monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    """Records cut anywhere by the reads (a long one, longer than many chunks, read at
    once), reservations among them; an input cut short hands on only whole records."""
    from pipelines.proofs import file_writer

    monkeypatch.setattr(file_writer, "CHUNK", chunk)
    records: list[tuple[str, bytes | None]] = [
        ("a.receipt.json", b"x" * 50),
        ("r\u00e9serv\u00e9.receipt.json", None),
        ("empty.receipt.json", b""),
        ("long.receipt.json", bytes(range(256)) * 40),
    ]
    payload = b"".join(
        file_writer.HEADER.pack(len(n.encode()), file_writer.RESERVE if d is None else len(d))
        + n.encode()
        + (d or b"")
        for n, d in records
    )
    for cut, expected in ((len(payload), records), (len(payload) - 1, records[:3])):
        read, write = os.pipe()
        feeder = threading.Thread(target=_feed, args=(write, payload[:cut]))
        feeder.start()
        try:
            got = [(n, None if d is None else bytes(d)) for n, d in file_writer._records(read)]
        finally:
            feeder.join()
            os.close(read)
        assert got == expected


def _feed(fd: int, data: bytes) -> None:
    """``data`` into the pipe ``fd`` in pieces of 5 bytes, then its end."""
    try:
        for at in range(0, len(data), 5):
            os.write(fd, data[at : at + 5])
    finally:
        os.close(fd)


def test_an_interrupt_at_the_terminal_is_left_to_receipts_by_the_writer(
    tmp_path: Path, started: list[files._Writer]
) -> None:
    """Ctrl-C reaches the terminal's process group: the writer process is out of it (a
    session of its own), and receipts, interrupted, stops it and removes what it left."""
    out = tmp_path / "bundles"
    out.mkdir()

    def produced() -> Iterator[tuple[str, bytes]]:
        yield FILES[0]
        assert os.getpgid(started[0].process.pid) != os.getpgrp()
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        files.write_all(out, produced(), _names(FILES))
    assert started[0].process.returncode is not None  # stopped, not left running
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]
