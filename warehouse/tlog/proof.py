"""Proofs a reader can check offline (C2SP tlog-proof, https://c2sp.org/tlog-proof):

    c2sp.org/tlog-proof@v1
    [extra <base64 opaque data>]
    index <zero-based entry index, decimal, no leading zero>
    <base64 inclusion proof hash, from the leaf's sibling up to the root's child>
    ...
    <empty line>
    <the signed checkpoint, verbatim>

Such a file is stored with the extension ``.tlog-proof``. Checking one takes the entry's
bytes, the log's verifier key and (optionally) its origin: the checkpoint must be signed by
the key, and the inclusion proof must lead from the entry's leaf hash to its root.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from warehouse.tlog import checkpoint as checkpoints
from warehouse.tlog import merkle, note
from warehouse.tlog.errors import CheckpointError, NoteError, ProofError

HEADER = "c2sp.org/tlog-proof@v1"
SUFFIX = ".tlog-proof"
_INDEX = re.compile(r"index (0|[1-9][0-9]*)")


@dataclass(frozen=True)
class TlogProof:
    """An entry's index, its inclusion proof, and the signed checkpoint it leads to."""

    index: int
    hashes: tuple[bytes, ...]
    checkpoint: bytes
    extra: bytes | None = None

    def format(self) -> bytes:
        return format_proof(self.index, self.hashes, self.checkpoint, self.extra)


def format_proof(
    index: int, hashes: Sequence[bytes], checkpoint: bytes, extra: bytes | None = None
) -> bytes:
    """The proof file's bytes."""
    if index < 0:
        raise ValueError(f"no entry {index}")
    lines = [HEADER]
    if extra is not None:
        lines.append(f"extra {base64.b64encode(extra).decode()}")
    lines.append(f"index {index}")
    lines.extend(base64.b64encode(h).decode() for h in hashes)
    return ("\n".join(lines) + "\n\n").encode() + checkpoint


def _malformed(reason: str) -> ProofError:
    return ProofError(f"format: not a tlog-proof: {reason}", step="format")


def _b64(value: str, what: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except binascii.Error:
        raise _malformed(f"{what} is not base64") from None


def parse_proof(data: bytes) -> TlogProof:
    """The parts of a proof file; a malformed one is refused at the ``format`` step."""
    head, blank, signed = data.partition(b"\n\n")
    if not blank:
        raise _malformed("no empty line before the checkpoint")
    try:
        lines = head.decode().split("\n")
    except UnicodeDecodeError:
        raise _malformed("not UTF-8") from None
    if lines[0] != HEADER:
        raise _malformed(f"the first line is not {HEADER}")
    rest = lines[1:]
    extra = None
    if rest and rest[0].startswith("extra "):
        extra = _b64(rest.pop(0)[len("extra ") :], "the extra data")
    if not rest or not (match := _INDEX.fullmatch(rest[0])):
        raise _malformed("no 'index N' line")
    hashes = []
    for number, line in enumerate(rest[1:]):
        value = _b64(line, f"proof hash {number}")
        if len(value) != merkle.HASH_SIZE:
            raise _malformed(f"proof hash {number} is {len(value)} bytes, not 32")
        hashes.append(value)
    return TlogProof(int(match.group(1)), tuple(hashes), signed, extra)


def verify_proof(
    data: bytes,
    entry: bytes,
    verifiers: Iterable[note.Verifier],
    origin: str | None = None,
) -> tuple[TlogProof, checkpoints.Checkpoint]:
    """Check a proof file for ``entry``: its format, its checkpoint (well formed, from
    ``origin`` when given), the checkpoint's signature by one of ``verifiers``, and the
    inclusion of the entry. A failure raises ProofError whose ``step`` names the check."""
    proof = parse_proof(data)
    try:
        text, _ = note.parse(proof.checkpoint)
        checkpoints.parse(text, origin)
    except (NoteError, CheckpointError) as exc:
        raise ProofError(f"checkpoint: {exc}", step="checkpoint") from exc
    try:
        head = checkpoints.open(proof.checkpoint, verifiers, origin)
    except NoteError as exc:
        raise ProofError(f"signature: {exc}", step="signature") from exc
    if proof.index >= head.size:
        raise ProofError(
            f"inclusion: entry {proof.index} is not in the checkpoint's tree of {head.size}",
            step="inclusion",
        )
    try:
        merkle.check_record(
            proof.hashes, head.size, head.root, proof.index, merkle.leaf_hash(entry)
        )
    except ProofError as exc:
        raise ProofError(
            f"inclusion: {exc}; is this the entry the proof was made for?", step="inclusion"
        ) from exc
    return proof, head
