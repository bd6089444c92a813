"""The DuckDB extensions a lake's connection loads, from their PyPI wheels (the ``lake``
extra, ``duckdb-extension-<name>``) or DuckDB's own folder, each binary put through
DuckDB's signature check once rather than at every start.

DuckDB checks an extension's signature whenever a database loads it, hashing the whole
binary: here, loading ducklake (36 MB) and postgres_scanner (42 MB) took 200-270 ms of
every lake command's start, and 4-5 ms with the check off (``allow_unsigned_extensions``),
while Python's hashlib hashed the ducklake binary in 25 ms. So (:func:`checked`):

- a wheel's binary is first loaded in a database of its own with the check on; once it has
  loaded there, its SHA-256 is recorded in the cache, as an empty file named after it
  (``<cache>/duckdb-extensions/v<DuckDB version>/<sha256>``, the cache being
  :func:`warehouse.settings_files.cache_dir`);
- a lake's connection whose extensions are all wheels' binaries hashing to recorded
  SHA-256s is opened with ``allow_unsigned_extensions`` (DuckDB does not check them again)
  and ``autoload_known_extensions`` off (nothing is loaded on it unchecked);
- a binary once hashed is known by what its ``stat`` says, its inode change time
  included, which every write, rename or ``utime`` of it moves and no user can set: a
  ``stat-<key>`` file beside the SHA-256s names its SHA-256 while the stat is the same
  (hashing the two binaries took 50-70 ms of each start);
- a binary that fails the check is refused as before, and nothing is recorded. Without a
  wheel (an extension in DuckDB's own folder), DuckDB checks every load, as before; where
  the cache cannot be written, every process checks again.

A recorded SHA-256 admits only a binary with those bytes, and a recorded stat only the file
it was taken of while unchanged: to have receipts load a binary DuckDB never checked, one
must write both the cache and where the wheel is installed, and whoever can write there can
change receipts' own code as well.
"""

from __future__ import annotations

import hashlib
import importlib
import os
from collections.abc import Sequence
from pathlib import Path

import duckdb

from warehouse.errors import WarehouseError
from warehouse.settings_files import cache_dir
from warehouse.sql_literal import string

CACHE_NAME = "duckdb-extensions"
# What a connection that loads only checked binaries is opened with.
TRUSTED_CONFIG = {"allow_unsigned_extensions": True, "autoload_known_extensions": False}

# The SHA-256s checked in this process, and each binary's by its stat key.
_checked_here: set[str] = set()
_digests: dict[str, str] = {}


def forget() -> None:
    """Forget what this process hashed and checked (the cache stays)."""
    _digests.clear()
    _checked_here.clear()


def wheel_binary(name: str) -> Path | None:
    """The binary of extension ``name`` in its PyPI wheel for this DuckDB, if installed."""
    try:
        module = importlib.import_module(f"duckdb_extension_{name}")
    except ImportError:
        return None
    if module.__file__ is None:
        return None
    folder = Path(module.__file__).parent / "extensions"
    for version in (f"v{duckdb.__version__}", duckdb.__version__):
        candidate = folder / version / f"{name}.duckdb_extension"
        if candidate.exists():
            return candidate
    return None


def checked_folder() -> Path:
    """Where the SHA-256s of the binaries DuckDB checked are recorded, for this DuckDB."""
    return cache_dir() / CACHE_NAME / f"v{duckdb.__version__}"


def stat_key(binary: Path) -> str:
    """What names ``binary`` as it is now: its path, device, inode, size, modification and
    inode change times (the last moves with every change to the file, and only the kernel
    sets it)."""
    found = binary.stat()
    fields = [binary.absolute(), found.st_dev, found.st_ino, found.st_size]
    fields += [found.st_mtime_ns, found.st_ctime_ns]
    return "stat-" + hashlib.sha256("\0".join(map(str, fields)).encode()).hexdigest()


def digest(binary: Path) -> str:
    """The SHA-256 of ``binary``'s bytes (hashed once per process while it is unchanged)."""
    key = stat_key(binary)
    found = _digests.get(key)
    if found is None:
        with binary.open("rb") as handle:
            found = _digests[key] = hashlib.file_digest(handle, "sha256").hexdigest()
    return found


def recorded(binary: Path) -> str | None:
    """The SHA-256 recorded as checked for ``binary`` as its stat is now, if any."""
    folder = checked_folder()
    try:
        sha256 = (folder / stat_key(binary)).read_text().strip()
    except OSError:
        return None
    return sha256 if len(sha256) == 64 and (folder / sha256).is_file() else None


def _record(binary: Path, sha256: str) -> None:
    folder = checked_folder()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / sha256).touch()
        key = stat_key(binary)
        written = folder / f".{key}.{os.getpid()}"
        written.write_text(sha256)
        written.replace(folder / key)
    except OSError:  # a cache that cannot be written: DuckDB checks again next time
        pass


def signature_check(load: str) -> None:
    """DuckDB's signature check of what ``LOAD <load>`` loads, in a database of its own:
    raises what that ``LOAD`` raises."""
    with duckdb.connect(":memory:", config={"autoinstall_known_extensions": False}) as con:
        con.execute(f"LOAD {load}")


def checked(names: Sequence[str]) -> dict[str, Path] | None:
    """The wheel binary of each extension of ``names``, every one checked by DuckDB now or
    recorded as checked before; None when one has no wheel (those are loaded as before).
    A binary that fails the check is a :class:`WarehouseError` naming it."""
    binaries: dict[str, Path] = {}
    for name in names:
        binary = wheel_binary(name)
        if binary is None:
            return None
        if recorded(binary) is None:
            sha256 = digest(binary)
            if sha256 not in _checked_here and not (checked_folder() / sha256).is_file():
                try:
                    signature_check(string(str(binary)))
                except duckdb.Error as exc:
                    raise WarehouseError(
                        f"DuckDB refuses the {name} extension at {binary} "
                        f"({str(exc).splitlines()[0]}): reinstall it, `pip install "
                        f"--force-reinstall duckdb-extension-{name.replace('_', '-')}"
                        f"=={duckdb.__version__}`"
                    ) from None
            _checked_here.add(sha256)
            _record(binary, sha256)
        binaries[name] = binary
    return binaries


def allows_unchecked(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether ``con`` loads extensions without DuckDB's signature check."""
    row = con.execute("SELECT current_setting('allow_unsigned_extensions')").fetchone()
    return bool(row and row[0])
