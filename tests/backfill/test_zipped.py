"""A zip member's bytes inflated a piece at a time: the same bytes zipfile reads, and a
damaged member refused."""

from __future__ import annotations

import random
import zipfile
from pathlib import Path

import pytest

from sources.nhtsa.flatfile.zipped import member_pieces
from warehouse.errors import FlatFileError

MEMBER = "FLAT_CMPL.txt"


def _text(lines: int = 3_000, seed: int = 5) -> bytes:
    rng = random.Random(seed)
    words = [b"AIR BAG", b"BRAKES", "FREINÉ".encode("iso-8859-1"), b"\t", b"1999"]
    return b"".join(
        b" ".join(rng.choice(words) for _ in range(rng.randrange(1, 40))) + b"\r\n"
        for _ in range(lines)
    )


def _archive(path: Path, data: bytes, method: int = zipfile.ZIP_DEFLATED) -> zipfile.ZipInfo:
    with zipfile.ZipFile(path, "w", compression=method) as archive:
        archive.writestr("README.txt", "a member before the data")
        archive.writestr(MEMBER, data)
    with zipfile.ZipFile(path) as archive:
        return archive.getinfo(MEMBER)


@pytest.mark.parametrize(
    "method", [zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA]
)
@pytest.mark.parametrize("size", [1_000, 65_536, 1 << 22])
def test_a_member_reads_as_zipfile_reads_it(tmp_path: Path, method: int, size: int) -> None:
    data = _text()
    info = _archive(tmp_path / "a.zip", data, method)
    pieces = list(member_pieces(tmp_path / "a.zip", info, size))
    assert b"".join(pieces) == data
    assert all(0 < len(piece) <= size for piece in pieces)
    if size < len(data) // 4:
        assert len(pieces) > 1  # handed out as it is read, not whole


def test_a_zip64_member_is_read_past_its_longer_local_header(tmp_path: Path) -> None:
    data = _text()
    path = tmp_path / "a.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("README.txt", "a member before the data")
        with archive.open(MEMBER, "w", force_zip64=True) as member:  # sizes in an extra field
            member.write(data)
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(MEMBER)
    header = path.read_bytes()[info.header_offset : info.header_offset + 30]
    assert int.from_bytes(header[28:30], "little") >= 20  # the zip64 extra field is there
    assert b"".join(member_pieces(path, info, 1 << 16)) == data


def test_a_member_whose_crc_does_not_match_is_refused(tmp_path: Path) -> None:
    info = _archive(tmp_path / "a.zip", _text())
    info.CRC ^= 1
    with pytest.raises(FlatFileError, match=r"FLAT_CMPL.txt in a.zip is damaged: its CRC-32"):
        list(member_pieces(tmp_path / "a.zip", info, 1 << 16))


def test_a_member_of_another_length_than_the_directory_says_is_refused(tmp_path: Path) -> None:
    info = _archive(tmp_path / "a.zip", _text())
    info.file_size += 1
    with pytest.raises(FlatFileError, match=r"holds \d+ bytes where the archive says \d+"):
        list(member_pieces(tmp_path / "a.zip", info, 1 << 16))


def test_an_archive_cut_short_inside_the_member_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "a.zip"
    info = _archive(path, _text(30_000))
    whole = path.read_bytes()
    path.write_bytes(whole[: info.header_offset + 100 + info.compress_size // 2])
    with pytest.raises(FlatFileError, match="the archive ends inside it"):
        list(member_pieces(path, info, 1 << 16))


def test_invalid_deflated_bytes_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "a.zip"
    info = _archive(path, _text())
    whole = bytearray(path.read_bytes())
    start = info.header_offset + 30 + len(MEMBER)
    whole[start : start + 64] = b"\xff" * 64
    path.write_bytes(bytes(whole))
    with pytest.raises(FlatFileError, match="is damaged"):
        list(member_pieces(path, info, 1 << 16))


def test_deflated_bytes_that_end_early_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "a.zip"
    info = _archive(path, _text())
    info.compress_size //= 2  # the directory claims fewer deflated bytes than the stream has
    with pytest.raises(FlatFileError, match="its deflated bytes end early"):
        list(member_pieces(path, info, 1 << 16))


def test_a_member_not_where_the_directory_says_is_refused(tmp_path: Path) -> None:
    info = _archive(tmp_path / "a.zip", _text())
    info.header_offset += 7
    with pytest.raises(FlatFileError, match="no local header where the directory says"):
        list(member_pieces(tmp_path / "a.zip", info, 1 << 16))


def test_an_encrypted_member_is_refused(tmp_path: Path) -> None:
    info = _archive(tmp_path / "a.zip", _text())
    info.flag_bits |= 0x1
    with pytest.raises(FlatFileError, match="is encrypted"):
        list(member_pieces(tmp_path / "a.zip", info, 1 << 16))
