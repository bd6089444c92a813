"""Checkpoints (C2SP tlog-checkpoint, https://c2sp.org/tlog-checkpoint): the signed head of
the log, a signed note whose text is

    <origin>
    <tree size, decimal, no leading zero>
    <base64 of the RFC 6962 root hash>
    [extension lines, each non-empty]

The origin names the log; the log's key name in the signature line should match it.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable
from dataclasses import dataclass

from warehouse.tlog import note
from warehouse.tlog.errors import MalformedCheckpoint, OtherOrigin
from warehouse.tlog.merkle import HASH_SIZE

_SIZE = re.compile(r"0|[1-9][0-9]*")


@dataclass(frozen=True)
class Checkpoint:
    """The head of a log: its origin, its size (number of entries) and its root hash."""

    origin: str
    size: int
    root: bytes
    extensions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.origin or any(c in self.origin for c in "\n\r") or self.origin.isspace():
            raise MalformedCheckpoint(f"invalid checkpoint origin {self.origin!r}")
        if self.size < 0:
            raise MalformedCheckpoint(f"invalid checkpoint size {self.size}")
        if len(self.root) != HASH_SIZE:
            raise MalformedCheckpoint(f"a checkpoint root is {HASH_SIZE} bytes")
        if any(not line or "\n" in line for line in self.extensions):
            raise MalformedCheckpoint("checkpoint extension lines must be non-empty lines")

    def text(self) -> str:
        """The checkpoint body: the text a signed note signs."""
        lines = [self.origin, str(self.size), base64.b64encode(self.root).decode()]
        return "\n".join([*lines, *self.extensions]) + "\n"


def parse(text: str, origin: str | None = None) -> Checkpoint:
    """The checkpoint a note text holds; with ``origin``, refuse another log's checkpoint."""
    if not text.endswith("\n"):
        raise MalformedCheckpoint("malformed checkpoint: the text does not end in a newline")
    lines = text[:-1].split("\n")
    if len(lines) < 3:
        raise MalformedCheckpoint(
            "malformed checkpoint: expected an origin, a tree size and a root hash line"
        )
    first, size, root, *extensions = lines
    if origin is not None and first != origin:
        raise OtherOrigin(f"a checkpoint of another log: origin {first!r}, expected {origin!r}")
    if not _SIZE.fullmatch(size):
        raise MalformedCheckpoint(f"malformed checkpoint: tree size {size[:40]!r}")
    try:
        hash_ = base64.b64decode(root, validate=True)
    except binascii.Error:
        hash_ = b""
    if len(hash_) != HASH_SIZE:
        raise MalformedCheckpoint(f"malformed checkpoint: root hash {root[:60]!r}")
    if any(not line for line in extensions):
        raise MalformedCheckpoint("malformed checkpoint: an empty extension line")
    return Checkpoint(first, int(size), hash_, tuple(extensions))


def sign(checkpoint: Checkpoint, signer: note.Signer) -> bytes:
    """The signed checkpoint note."""
    return note.sign(checkpoint.text(), signer)


def open(signed: bytes, verifiers: Iterable[note.Verifier], origin: str | None) -> Checkpoint:
    """The checkpoint of a signed note, refused with its reason: malformed, another log's
    (``origin`` differs; None accepts any origin a trusted key signed), not signed by a
    trusted key, or a signature that fails."""
    text, _ = note.parse(signed)
    parse(text, origin)  # another log's checkpoint is refused as such, before its signature
    text, _ = note.open(signed, verifiers)
    return parse(text, origin)
