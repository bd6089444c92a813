"""What the transparency log refuses, as branches of receipts' error tree
(``warehouse/errors.py``): each message names the reason.

    LogError
    ├── ProofError            a proof that does not hold
    ├── NoteError             a signed note that cannot be trusted
    │   ├── MalformedNote     not a signed note at all
    │   ├── UnknownKey        no signature by a known key
    │   └── BadSignature      a known key's signature does not verify
    ├── CheckpointError       a checkpoint refused
    │   ├── MalformedCheckpoint
    │   └── OtherOrigin       a checkpoint of another log
    ├── TileError             a tile or entry bundle that cannot be read or written
    └── KeyFileError          a key file that cannot be made or trusted
"""

from __future__ import annotations

from warehouse.errors import ReceiptsError


class LogError(ReceiptsError):
    """The transparency log refused something; the message says what and why."""


class ProofError(LogError, ValueError):
    """A proof that does not hold: it does not lead to the hash it claims, or is malformed.
    ``step`` names the check that failed when a whole proof file was checked: ``format``,
    ``checkpoint``, ``signature`` or ``inclusion``."""

    def __init__(self, message: str, step: str | None = None) -> None:
        super().__init__(message)
        self.step = step


class NoteError(LogError, ValueError):
    """A signed note that cannot be trusted."""


class MalformedNote(NoteError):
    """The bytes are not a signed note (C2SP signed-note's format)."""


class UnknownKey(NoteError):
    """No signature on the note is by a key the reader trusts."""

    hint = "compare the note's signature line with the verifier key you were given"


class BadSignature(NoteError):
    """A trusted key's signature does not verify: the text was altered after signing."""


class CheckpointError(LogError, ValueError):
    """A checkpoint refused."""


class MalformedCheckpoint(CheckpointError):
    """The note's text is not a C2SP checkpoint body."""


class OtherOrigin(CheckpointError):
    """A checkpoint of another log: its origin line is not the one expected."""


class TileError(LogError, ValueError):
    """A tile or an entry bundle that cannot be read, or an entry that cannot be bundled."""


class KeyFileError(LogError):
    """A key file that cannot be made, or cannot be trusted."""
