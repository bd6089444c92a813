"""Signed notes (C2SP signed-note, https://c2sp.org/signed-note) with Ed25519 keys.

A signed note is a text ending in a newline, a blank line, then one or more signature lines
``— <key name> <base64(4-byte key ID || signature)>``. The text is separated from the
signatures by the last blank line; a note is valid UTF-8 with no ASCII control character but
the newline. Key names are non-empty, without Unicode spaces or ``+``. A key ID is
``SHA-256(key name || 0x0A || 0x01 || 32-byte Ed25519 public key)[:4]`` (signature type
0x01, Ed25519 over the note text, RFC 8032).

Keys travel as strings in the form Go's ``golang.org/x/mod/sumdb/note`` writes and reads:
the verifier key ``<name>+<hex key ID>+<base64(0x01 || public key)>`` and the signer key
``PRIVATE+KEY+<name>+<hex key ID>+<base64(0x01 || 32-byte seed)>``.

Reading follows the spec: signatures by unknown keys are ignored; a signature by a trusted
key (same name *and* key ID) must verify, or the whole note is refused; a note with no
verified signature by a trusted key is refused.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from warehouse.tlog.errors import BadSignature, MalformedNote, NoteError, UnknownKey

ED25519 = 0x01  # the signature type byte of Ed25519 (C2SP signed-note, "Signature types")
_SIG_PREFIX = "\u2014 "  # em dash, space
_PRIVATE = "PRIVATE+KEY+"
# The spec asks verifiers to accept at least 16 signatures; Go's note.Open stops at 100.
MAX_SIGNATURES = 100
_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f]")


def check_name(name: str) -> None:
    """Refuse a key name the spec does not allow: empty, or with a space or ``+``."""
    if not name or "+" in name or any(c.isspace() for c in name):
        raise NoteError(f"invalid key name {name!r}: it must be non-empty, without spaces or '+'")


def key_id(name: str, public_key: bytes) -> int:
    """The key ID of an Ed25519 public key under ``name``, as a 32-bit number."""
    digest = hashlib.sha256(name.encode() + b"\n" + bytes([ED25519]) + public_key).digest()
    return int.from_bytes(digest[:4], "big")


@dataclass(frozen=True)
class Signature:
    """A signature line of a note: who signed (name, key ID) and the signature bytes."""

    name: str
    key_id: int
    signature: bytes

    @property
    def key(self) -> str:
        """``name+hex key ID``, the way the key is named in messages."""
        return f"{self.name}+{self.key_id:08x}"


@dataclass(frozen=True)
class Verifier:
    """An Ed25519 public key under a name: checks signatures."""

    name: str
    public_key: bytes

    def __post_init__(self) -> None:
        check_name(self.name)
        if len(self.public_key) != 32:
            raise NoteError(f"an Ed25519 public key is 32 bytes, not {len(self.public_key)}")

    @property
    def key_id(self) -> int:
        return key_id(self.name, self.public_key)

    @property
    def key(self) -> str:
        return f"{self.name}+{self.key_id:08x}"

    def __str__(self) -> str:
        """The verifier key string: ``name+hex key ID+base64(0x01 || public key)``."""
        encoded = base64.b64encode(bytes([ED25519]) + self.public_key).decode()
        return f"{self.key}+{encoded}"

    def verify(self, text: bytes, signature: bytes) -> bool:
        try:
            Ed25519PublicKey.from_public_bytes(self.public_key).verify(signature, text)
        except InvalidSignature:
            return False
        return True


@dataclass(frozen=True)
class Signer:
    """An Ed25519 private key (its 32-byte seed) under a name: signs notes. Its repr and
    str never show the seed; ``key_string()`` does, for the key file only."""

    name: str
    seed: bytes = field(repr=False)

    def __post_init__(self) -> None:
        check_name(self.name)
        if len(self.seed) != 32:
            raise NoteError("an Ed25519 private key seed is 32 bytes")

    @classmethod
    def generate(cls, name: str) -> Signer:
        """A new random key under ``name``."""
        seed = Ed25519PrivateKey.generate().private_bytes_raw()
        return cls(name, seed)

    def _private(self) -> Ed25519PrivateKey:
        return Ed25519PrivateKey.from_private_bytes(self.seed)

    @property
    def verifier(self) -> Verifier:
        public = self._private().public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        return Verifier(self.name, public)

    @property
    def key_id(self) -> int:
        return self.verifier.key_id

    def key_string(self) -> str:
        """The signer key string (secret): ``PRIVATE+KEY+name+hex key ID+base64(0x01 ||
        seed)``, as Go's note.GenerateKey writes it."""
        encoded = base64.b64encode(bytes([ED25519]) + self.seed).decode()
        return f"{_PRIVATE}{self.name}+{self.key_id:08x}+{encoded}"

    def sign(self, text: bytes) -> bytes:
        return self._private().sign(text)


def _split_key(text: str, what: str) -> tuple[str, int, bytes]:
    """``name+hex key ID+base64(0x01 || key)`` -> (name, key ID, key); the error never
    repeats the string (a signer key is secret)."""
    parts = text.strip().split("+", 2)  # base64 may hold "+" too
    if len(parts) != 3:
        raise NoteError(f"malformed {what}: expected name+keyid+base64 key")
    name, hex_id, encoded = parts
    check_name(name)
    if not re.fullmatch(r"[0-9a-fA-F]{8}", hex_id):
        raise NoteError(f"malformed {what}: the key ID is not 8 hex digits")
    try:
        raw = base64.b64decode(encoded, validate=True)
    except binascii.Error:
        raise NoteError(f"malformed {what}: the key is not base64") from None
    if len(raw) != 33 or raw[0] != ED25519:
        raise NoteError(f"{what} of {name}: not an Ed25519 key (type 0x01, 32 bytes)")
    return name, int(hex_id, 16), raw[1:]


def parse_verifier(text: str) -> Verifier:
    """A verifier from its key string; refuses one whose key ID does not match its key."""
    name, claimed, public = _split_key(text, "verifier key")
    verifier = Verifier(name, public)
    if verifier.key_id != claimed:
        raise NoteError(
            f"verifier key of {name}: key ID {claimed:08x} does not match the key "
            f"({verifier.key_id:08x})"
        )
    return verifier


def parse_signer(text: str) -> Signer:
    """A signer from its key string (``PRIVATE+KEY+...``)."""
    text = text.strip()
    if not text.startswith(_PRIVATE):
        raise NoteError("malformed signer key: it does not start with PRIVATE+KEY+")
    name, claimed, seed = _split_key(text[len(_PRIVATE) :], "signer key")
    signer = Signer(name, seed)
    if signer.key_id != claimed:
        raise NoteError(f"signer key of {name}: key ID {claimed:08x} does not match the key")
    return signer


def _check_text(text: str, what: str) -> None:
    if _CONTROL.search(text):
        raise MalformedNote(f"malformed note: the {what} holds an ASCII control character")


def sign(text: str | bytes, signer: Signer) -> bytes:
    """The signed note of ``text`` (which must end in a newline) with ``signer``'s key."""
    raw = text.encode() if isinstance(text, str) else bytes(text)
    try:
        decoded = raw.decode()
    except UnicodeDecodeError:
        raise MalformedNote("malformed note: the text is not UTF-8") from None
    if not raw.endswith(b"\n"):
        raise MalformedNote("malformed note: the text does not end in a newline")
    _check_text(decoded, "text")
    payload = signer.key_id.to_bytes(4, "big") + signer.sign(raw)
    line = f"{_SIG_PREFIX}{signer.name} {base64.b64encode(payload).decode()}\n"
    return raw + b"\n" + line.encode()


def parse(note: bytes) -> tuple[str, list[Signature]]:
    """The text and every signature line of a note, none of them verified."""
    try:
        decoded = note.decode()
    except UnicodeDecodeError:
        raise MalformedNote("malformed note: not UTF-8") from None
    _check_text(decoded, "note")
    split = decoded.rfind("\n\n")
    if split < 0:
        raise MalformedNote("malformed note: no blank line before the signatures")
    text, lines = decoded[: split + 1], decoded[split + 2 :]
    if not lines.endswith("\n"):
        raise MalformedNote("malformed note: the last signature line does not end in a newline")
    signatures = []
    for line in lines[:-1].split("\n"):
        if not line.startswith(_SIG_PREFIX):
            raise MalformedNote(f"malformed note: not a signature line: {line[:60]!r}")
        name, _, encoded = line[len(_SIG_PREFIX) :].partition(" ")
        try:
            check_name(name)
            raw = base64.b64decode(encoded, validate=True)
        except (NoteError, binascii.Error):
            raise MalformedNote(f"malformed note: bad signature line {line[:60]!r}") from None
        if len(raw) < 5:
            raise MalformedNote(f"malformed note: the signature by {name} is too short")
        signatures.append(Signature(name, int.from_bytes(raw[:4], "big"), raw[4:]))
        if len(signatures) > MAX_SIGNATURES:
            raise MalformedNote(f"malformed note: more than {MAX_SIGNATURES} signatures")
    return text, signatures


def open(note: bytes, verifiers: Iterable[Verifier]) -> tuple[str, list[Signature]]:
    """The text of a signed note and its verified signatures by trusted keys. Raises
    MalformedNote, BadSignature (a trusted key's signature fails: the note was altered) or
    UnknownKey (no signature by a trusted key), each naming the keys involved."""
    text, signatures = parse(note)
    trusted = {(v.name, v.key_id): v for v in verifiers}
    verified: list[Signature] = []
    for signature in signatures:
        verifier = trusted.get((signature.name, signature.key_id))
        if verifier is None or signature in verified:
            continue
        if not verifier.verify(text.encode(), signature.signature):
            raise BadSignature(
                f"the signature by {signature.key} does not verify: the note was altered "
                "after it was signed, or signed by another key under that key ID"
            )
        verified.append(signature)
    if not verified:
        signed = ", ".join(dict.fromkeys(s.key for s in signatures))
        known = ", ".join(v.key for v in trusted.values()) or "none"
        raise UnknownKey(f"no signature by a trusted key: signed by {signed}; trusted: {known}")
    return text, verified
