"""What the transparency log's formats refuse: branches of receipts' one error tree, defined
in ``warehouse/errors.py`` (``LogError`` and below) and named here for the modules of this
package."""

from __future__ import annotations

from warehouse.errors import (
    BadSignature,
    CheckpointError,
    KeyFileError,
    LogError,
    MalformedCheckpoint,
    MalformedNote,
    NoteError,
    OtherOrigin,
    ProofError,
    TileError,
    UnknownKey,
)

__all__ = [
    "BadSignature",
    "CheckpointError",
    "KeyFileError",
    "LogError",
    "MalformedCheckpoint",
    "MalformedNote",
    "NoteError",
    "OtherOrigin",
    "ProofError",
    "TileError",
    "UnknownKey",
]
