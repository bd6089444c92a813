"""The log's signing key on disk: one line, the signer key string Go's note package writes
(``PRIVATE+KEY+<name>+<key ID>+<base64>``), in a file only its owner can read."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from warehouse.tlog.errors import KeyFileError, NoteError
from warehouse.tlog.note import Signer, parse_signer

KEY_FILE_MODE = 0o600


def make_key_file(path: Path, name: str) -> Signer:
    """Make a new key under ``name`` and write it to ``path`` (mode 0600). Refuses to
    overwrite an existing file: a lost key cannot sign the log's next checkpoint."""
    signer = Signer.generate(name)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, KEY_FILE_MODE)
    except FileExistsError:
        raise KeyFileError(f"key file {path} already exists; refusing to overwrite it") from None
    except OSError as exc:
        raise KeyFileError(f"cannot create key file {path}: {exc.strerror}") from None
    try:
        os.fchmod(fd, KEY_FILE_MODE)  # whatever the umask
        os.write(fd, (signer.key_string() + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    return signer


def load_key_file(path: Path) -> Signer:
    """The key in ``path``. Refuses a file that group or others may read or write, naming
    the chmod that fixes it, and never repeats the file's content in an error."""
    try:
        info = path.stat()
    except FileNotFoundError:
        raise KeyFileError(f"no key file {path}") from None
    except OSError as exc:
        raise KeyFileError(f"cannot read key file {path}: {exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise KeyFileError(f"key file {path} is not a regular file")
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o077:
        error = KeyFileError(
            f"key file {path} is open to group or others (mode {mode:04o}); run `chmod 600 {path}`"
        )
        error.hint = f"chmod 600 {path}"
        raise error
    try:
        return parse_signer(path.read_text())
    except (NoteError, UnicodeDecodeError) as exc:
        reason = str(exc) if isinstance(exc, NoteError) else "not UTF-8 text"
        raise KeyFileError(f"key file {path} does not hold a signer key: {reason}") from None
