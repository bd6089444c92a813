"""verify_receipt.py: check a receipts proof bundle (``*.receipt.json``, format version 1)
with nothing but Python's standard library and the ``cryptography`` package.

    python verify_receipt.py FILE [--key VERIFIER_KEY] [--json]

This file is the reference implementation of the checks (docs/proof-bundles.md): it runs
six steps in order and reports each one as ok, failed (with one line of reason) or not run
(when a step it needs failed):

1. ``format``     the file is a version 1 bundle with every field of the right JSON type;
2. ``snapshot``   the base64 bytes have the stated size and SHA-256 (the content hash);
3. ``quote``      the located string (a JSON Pointer into the snapshot, or its whole text)
                  holds ``exact`` at the code-point offsets, and it reads as the quote
                  under the simple normalisation :func:`normalize`;
4. ``entry``      the log entry is the revision entry of that document, revision and hash;
5. ``inclusion``  the C2SP tlog-proof leads from the entry's leaf hash to the checkpoint's
                  root (RFC 9162 section 2.1.3.2);
6. ``checkpoint`` the checkpoint note carries a valid Ed25519 signature by the bundle's
                  verifier key (which must equal ``--key`` when it is given).

Exit 0 when all six hold, 1 when any failed, 2 when the file cannot be read at all.
``receipts verify-bundle`` runs this same file; ``receipts verify-bundle --print-verifier``
prints it, so a reader can keep it and run it without receipts installed.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import hashlib
import json
import re
import sys
import unicodedata
from dataclasses import dataclass, field
from typing import Any

FORMAT = "receipts-proof-bundle"
VERSION = 1
STEPS = ("format", "snapshot", "quote", "entry", "inclusion", "checkpoint")
# Which earlier steps a step needs: it is "not run" when one of them did not hold.
NEEDS = {
    "format": (),
    "snapshot": ("format",),
    "quote": ("format", "snapshot"),
    "entry": ("format",),
    "inclusion": ("format",),
    "checkpoint": ("format",),
}
OK, FAILED, NOT_RUN = "ok", "failed", "not run"
ENTRY_HEADER = "receipts-log-entry v1"
ENTRY_KINDS = ("revision", "restoration")
PROOF_HEADER = "c2sp.org/tlog-proof@v1"
CONTEXT_CHARS = 80

# -- the quote's normalisation -------------------------------------------------------------
_APOSTROPHES = "\u2018\u2019\u201b\u2032"
_QUOTES = "\u201c\u201d\u201f\u2033"
_DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212"
_FOLD = {
    **dict.fromkeys(map(ord, _APOSTROPHES), "'"),
    **dict.fromkeys(map(ord, _QUOTES), '"'),
    **dict.fromkeys(map(ord, _DASHES), "-"),
}
SPACES = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_SPACE_RUN = re.compile("[" + re.escape(SPACES) + "]+")


def normalize(text: str) -> str:
    """The form a quote and the document's words are compared in: Unicode NFKC; curly
    apostrophes and primes as ``'``, curly double quotes as ``"``, hyphens, dashes and the
    minus sign as ``-``; every run of whitespace as one space, none at either end; lower
    case."""
    if not text.isascii():  # ASCII is its own NFKC form, with nothing to fold
        text = unicodedata.normalize("NFKC", text).translate(_FOLD)
    if "  " in text or not text.isprintable():  # the one printable space is " "
        text = _SPACE_RUN.sub(" ", text)
    return text.strip(" ").lower()


# -- the report ------------------------------------------------------------------------------
class StepFailed(Exception):
    """A step does not hold; the message is its one line of reason."""


@dataclass
class Report:
    """Each step's outcome, in order: (name, status, reason)."""

    steps: list[tuple[str, str, str | None]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return len(self.steps) == len(STEPS) and all(s == OK for _, s, _ in self.steps)

    def status(self, name: str) -> str | None:
        return next((s for n, s, _ in self.steps if n == name), None)

    def as_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "steps": [{"step": n, "status": s, "reason": r} for n, s, r in self.steps],
        }

    def lines(self) -> list[str]:
        out = []
        for name, status, reason in self.steps:
            label = {OK: "ok", FAILED: "FAILED", NOT_RUN: "not run"}[status]
            out.append(f"{label:<8} {name}" + (f": {reason}" if reason else ""))
        out.append("the bundle holds" if self.ok else "the bundle does NOT hold")
        return out


def _one_line(text: str) -> str:
    """One line, with no character a terminal would act on (a bundle's text is untrusted)."""
    line = " ".join(str(text).split())
    return "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in line)


# -- 1. format -------------------------------------------------------------------------------
_STR, _INT, _OBJ, _LIST, _NULL = "string", "integer", "object", "array", "null"
# Every required field, by path, with the JSON types it may have.
FIELDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("format", (_STR,)),
    ("version", (_INT,)),
    ("document", (_OBJ,)),
    ("document.doc_id", (_STR,)),
    ("document.revision", (_INT,)),
    ("document.kind", (_STR,)),
    ("document.source", (_STR,)),
    ("document.title", (_STR, _NULL)),
    ("snapshot", (_OBJ,)),
    ("snapshot.content_hash", (_STR,)),
    ("snapshot.canonical_form", (_STR,)),
    ("snapshot.media_type", (_STR,)),
    ("snapshot.size", (_INT,)),
    ("snapshot.bytes_base64", (_STR,)),
    ("quote", (_OBJ,)),
    ("quote.text", (_STR,)),
    ("quote.exact", (_STR,)),
    ("quote.locator", (_OBJ,)),
    ("quote.locator.pointer", (_STR, _NULL)),
    ("quote.locator.start", (_INT,)),
    ("quote.locator.end", (_INT,)),
    ("quote.prefix", (_STR,)),
    ("quote.suffix", (_STR,)),
    ("citation", (_OBJ,)),
    ("citation.url", (_STR, _NULL)),
    ("citation.captured_at", (_STR, _NULL)),
    ("citation.robust_links", (_OBJ,)),
    ("citation.robust_links.data-originalurl", (_STR, _NULL)),
    ("citation.robust_links.data-versionurl", (_STR, _NULL)),
    ("citation.robust_links.data-versiondate", (_STR, _NULL)),
    ("log", (_OBJ,)),
    ("log.entry", (_STR,)),
    ("log.proof", (_STR,)),
    ("log.verifier_key", (_STR,)),
    ("claim", (_OBJ, _NULL)),
)
_MISSING = object()


def json_type(value: Any) -> str:
    if value is None:
        return _NULL
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return _INT
    if isinstance(value, str):
        return _STR
    if isinstance(value, dict):
        return _OBJ
    if isinstance(value, list):
        return _LIST
    return "number"


def _at(bundle: dict[str, Any], path: str) -> Any:
    value: Any = bundle
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return _MISSING
        value = value[part]
    return value


def check_format(data: bytes) -> dict[str, Any]:
    try:
        bundle = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise StepFailed("the file is not UTF-8 text") from None
    except ValueError as exc:
        raise StepFailed(f"not a JSON document (truncated or damaged?): {exc}") from None
    if not isinstance(bundle, dict):
        raise StepFailed(f"a bundle is a JSON object, not {json_type(bundle)}")
    if bundle.get("format") != FORMAT:
        raise StepFailed(f"'format' is {bundle.get('format')!r}, not {FORMAT!r}")
    version = bundle.get("version")
    if json_type(version) != _INT or version != VERSION:
        raise StepFailed(f"bundle version {version!r}; this verifier reads version {VERSION}")
    for path, types in FIELDS:
        value = _at(bundle, path)
        if value is _MISSING:
            raise StepFailed(f"the required field {path} is missing")
        if json_type(value) not in types:
            raise StepFailed(f"{path} is {json_type(value)}, not {' or '.join(types)}")
    claim = bundle["claim"]
    if claim is not None:
        for name, types in (("id", (_STR,)), ("status", (_STR,)), ("history", (_LIST,))):
            if json_type(claim.get(name, _MISSING)) not in types:
                raise StepFailed(f"claim.{name} is missing or not {types[0]}")
    return bundle


# -- 2. snapshot -----------------------------------------------------------------------------
def check_snapshot(bundle: dict[str, Any]) -> bytes:
    snapshot = bundle["snapshot"]
    try:
        data = base64.b64decode(snapshot["bytes_base64"], validate=True)
    except (binascii.Error, ValueError):
        raise StepFailed("bytes_base64 is not standard base64") from None
    if len(data) != snapshot["size"]:
        raise StepFailed(f"the bytes are {len(data)} long, the bundle says {snapshot['size']}")
    actual = hashlib.sha256(data).hexdigest()
    if actual != snapshot["content_hash"]:
        raise StepFailed(
            f"the bytes hash to {actual}, not the content hash {snapshot['content_hash']}"
        )
    return data


# -- 3. quote --------------------------------------------------------------------------------
_INDEX = re.compile(r"0|[1-9][0-9]*")


def resolve_pointer(document: Any, pointer: str) -> Any:
    """The value at an RFC 6901 JSON Pointer; StepFailed naming the token that misses."""
    if pointer == "":
        return document
    if not pointer.startswith("/"):
        raise StepFailed(f"the pointer {pointer!r} does not start with '/'")
    value = document
    for raw in pointer[1:].split("/"):
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(value, dict) and token in value:
            value = value[token]
        elif isinstance(value, list) and _INDEX.fullmatch(token) and int(token) < len(value):
            value = value[int(token)]
        else:
            raise StepFailed(f"the pointer {pointer!r} names nothing in the snapshot")
    return value


def located_string(data: bytes, pointer: str | None) -> str:
    """The string a locator's offsets count in: the whole text, or a JSON string value."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise StepFailed("the snapshot is not UTF-8 text") from None
    if pointer is None:
        return text
    try:
        document = json.loads(text)
    except ValueError:
        raise StepFailed("the locator has a JSON Pointer but the snapshot is not JSON") from None
    value = resolve_pointer(document, pointer)
    if not isinstance(value, str):
        raise StepFailed(f"the value at {pointer!r} is {json_type(value)}, not a string")
    return value


def check_quote(bundle: dict[str, Any], data: bytes) -> None:
    quote = bundle["quote"]
    locator = quote["locator"]
    text = located_string(data, locator["pointer"])
    start, end = locator["start"], locator["end"]
    if not 0 <= start < end <= len(text):
        raise StepFailed(f"offsets {start}..{end} are not within the {len(text)} code points")
    if text[start:end] != quote["exact"]:
        raise StepFailed(f"the text at {start}..{end} is not the bundle's 'exact' words")
    if normalize(quote["text"]) != normalize(quote["exact"]):
        raise StepFailed("the quote does not read as the words at its location")


# -- 4. entry --------------------------------------------------------------------------------
def _unescape(value: str) -> str:
    out, chars = [], iter(value)
    for char in chars:
        if char == "\\":
            following = next(chars, "")
            char = {"\\": "\\", "n": "\n", "r": "\r"}.get(following, "")
            if not char:
                raise StepFailed(f"unknown escape \\{following} in the log entry")
        out.append(char)
    return "".join(out)


def entry_fields(entry: str) -> dict[str, str | None]:
    if not entry.endswith("\n"):
        raise StepFailed("the log entry does not end with a line feed")
    lines = entry[:-1].split("\n")
    if lines[0] != ENTRY_HEADER:
        raise StepFailed(f"the log entry does not start with {ENTRY_HEADER!r}")
    fields: dict[str, str | None] = {}
    for line in lines[1:]:
        name, space, value = line.partition(" ")
        fields[name] = _unescape(value) if space else None
    return fields


def check_entry(bundle: dict[str, Any]) -> None:
    fields = entry_fields(bundle["log"]["entry"])
    if fields.get("kind") not in ENTRY_KINDS:
        raise StepFailed(f"the log entry is of kind {fields.get('kind')!r}, not a revision")
    document, snapshot = bundle["document"], bundle["snapshot"]
    for name, expected in (
        ("doc_id", document["doc_id"]),
        ("revision", str(document["revision"])),
        ("content_hash", snapshot["content_hash"]),
    ):
        if fields.get(name) != expected:
            raise StepFailed(f"the log entry's {name} is {fields.get(name)!r}, not {expected!r}")


# -- 5. inclusion ----------------------------------------------------------------------------
@dataclass(frozen=True)
class TlogProof:
    index: int
    hashes: list[bytes]
    checkpoint: bytes  # the signed note, verbatim


def _b64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise StepFailed(f"{what} is not base64") from None


def parse_proof(text: str) -> TlogProof:
    """A C2SP tlog-proof: header, optional ``extra``, ``index N``, hashes, an empty line,
    then the checkpoint note."""
    head, blank, note = text.partition("\n\n")
    if not blank:
        raise StepFailed("the proof has no empty line before its checkpoint")
    lines = head.split("\n")
    if lines[0] != PROOF_HEADER:
        raise StepFailed(f"the proof does not start with {PROOF_HEADER}")
    rest = lines[1:]
    if rest and rest[0].startswith("extra "):
        rest.pop(0)
    match = re.fullmatch(r"index (0|[1-9][0-9]*)", rest[0]) if rest else None
    if match is None:
        raise StepFailed("the proof has no 'index N' line")
    hashes = []
    for number, line in enumerate(rest[1:]):
        value = _b64(line, f"proof hash {number}")
        if len(value) != 32:
            raise StepFailed(f"proof hash {number} is {len(value)} bytes, not 32")
        hashes.append(value)
    return TlogProof(int(match.group(1)), hashes, note.encode("utf-8"))


def split_note(note: bytes) -> tuple[bytes, list[str]]:
    """A signed note's body (up to and including the line feed before the last empty line)
    and its signature lines; an unsigned checkpoint is its body alone."""
    split = note.rfind(b"\n\n")
    if split < 0:
        return note, []
    body, signatures = note[: split + 1], note[split + 2 :].decode("utf-8", "replace")
    return body, [line for line in signatures.split("\n") if line]


def checkpoint_head(note: bytes) -> tuple[str, int, bytes]:
    """The checkpoint's origin, tree size and root hash (not yet its signature)."""
    body, _ = split_note(note)
    try:
        lines = body.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        raise StepFailed("the checkpoint is not UTF-8 text") from None
    if len(lines) < 4 or not re.fullmatch(r"0|[1-9][0-9]*", lines[1]):
        raise StepFailed("the checkpoint has no origin, tree size and root hash lines")
    root = _b64(lines[2], "the checkpoint's root hash")
    if len(root) != 32:
        raise StepFailed("the checkpoint's root hash is not 32 bytes")
    return lines[0], int(lines[1]), root


def _node(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def inclusion_root(index: int, size: int, leaf: bytes, path: list[bytes]) -> bytes:
    """RFC 9162 section 2.1.3.2: the root the inclusion path leads to from ``leaf``."""
    if index >= size:
        raise StepFailed(f"entry {index} is not in the checkpoint's tree of {size}")
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            raise StepFailed("the inclusion proof is longer than the tree is deep")
        if fn & 1 or fn == sn:
            r = _node(p, r)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            r = _node(r, p)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise StepFailed("the inclusion proof is shorter than the tree is deep")
    return r


def check_inclusion(bundle: dict[str, Any]) -> TlogProof:
    proof = parse_proof(bundle["log"]["proof"])
    _, size, root = checkpoint_head(proof.checkpoint)
    leaf = hashlib.sha256(b"\x00" + bundle["log"]["entry"].encode("utf-8")).digest()
    if inclusion_root(proof.index, size, leaf, proof.hashes) != root:
        raise StepFailed(
            f"the proof of entry {proof.index} does not lead to the root of the checkpoint's "
            f"tree of {size}: another entry, or another log's tree"
        )
    return proof


# -- 6. checkpoint ---------------------------------------------------------------------------
def parse_verifier_key(text: str) -> tuple[str, int, bytes]:
    """``name+<8 hex key id>+base64(0x01 || public key)``: name, key id, public key."""
    parts = text.split("+", 2)
    if len(parts) != 3 or not re.fullmatch(r"[0-9a-fA-F]{8}", parts[1]) or not parts[0]:
        raise StepFailed("the verifier key is not name+keyid+base64")
    name, hex_id, encoded = parts
    raw = _b64(encoded, "the verifier key")
    if len(raw) != 33 or raw[0] != 0x01:
        raise StepFailed("the verifier key is not an Ed25519 key")
    public = raw[1:]
    digest = hashlib.sha256(name.encode("utf-8") + b"\n\x01" + public).digest()
    if int(hex_id, 16) != int.from_bytes(digest[:4], "big"):
        raise StepFailed(f"the verifier key's id {hex_id} does not match its key")
    return name, int(hex_id, 16), public


def check_checkpoint(bundle: dict[str, Any], trusted_key: str | None) -> None:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    key = bundle["log"]["verifier_key"]
    if trusted_key is not None and key.strip() != trusted_key.strip():
        raise StepFailed(f"the bundle's verifier key {key} is not the trusted key {trusted_key}")
    name, key_id, public = parse_verifier_key(key.strip())
    body, signature_lines = split_note(parse_proof(bundle["log"]["proof"]).checkpoint)
    if not signature_lines:
        raise StepFailed("the checkpoint is not signed")
    signers = []
    for line in signature_lines:
        signer, _, encoded = line.removeprefix("\u2014 ").partition(" ")
        try:
            raw = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise StepFailed(f"a signature line is not base64: {line[:60]!r}") from None
        if len(raw) < 5 or not line.startswith("\u2014 "):
            raise StepFailed(f"not a signature line: {line[:60]!r}")
        signers.append(f"{signer}+{raw[:4].hex()}")
        if signer != name or int.from_bytes(raw[:4], "big") != key_id:
            continue
        try:
            Ed25519PublicKey.from_public_bytes(public).verify(raw[4:], body)
        except InvalidSignature:
            raise StepFailed(
                f"the signature by {name}+{key_id:08x} does not verify: the checkpoint was "
                "altered after it was signed"
            ) from None
        return
    raise StepFailed(
        f"no signature by {name}+{key_id:08x}; the checkpoint is signed by {', '.join(signers)}"
    )


# -- running the steps -----------------------------------------------------------------------
def verify(data: bytes, trusted_key: str | None = None) -> Report:
    """Every step on a bundle's bytes; never raises for a bad bundle."""
    report = Report()
    bundle: dict[str, Any] = {}
    snapshot = b""

    def run(name: str, step: Any) -> Any:
        missing = [n for n in NEEDS[name] if report.status(n) != OK]
        if missing:
            report.steps.append((name, NOT_RUN, f"needs {', '.join(missing)}"))
            return None
        try:
            result = step()
        except StepFailed as exc:
            report.steps.append((name, FAILED, _one_line(str(exc))))
            return None
        report.steps.append((name, OK, None))
        return result

    bundle = run("format", lambda: check_format(data)) or {}
    snapshot = run("snapshot", lambda: check_snapshot(bundle)) or b""
    run("quote", lambda: check_quote(bundle, snapshot))
    run("entry", lambda: check_entry(bundle))
    run("inclusion", lambda: check_inclusion(bundle))
    run("checkpoint", lambda: check_checkpoint(bundle, trusted_key))
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="verify_receipt.py",
        description="Check a receipts proof bundle (format version 1). "
        "Exit 0: every step holds; 1: a step failed; 2: the file cannot be read.",
    )
    parser.add_argument("file", help="the bundle (*.receipt.json)")
    parser.add_argument("--key", help="the verifier key (name+keyid+base64) you trust")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    try:
        with open(args.file, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        reason = f"cannot read {args.file}: {exc.strerror or exc}"
        if args.json:
            print(json.dumps({"file": args.file, "ok": False, "error": reason, "steps": []}))
        else:
            print(f"error: {reason}", file=sys.stderr)
        return 2
    report = verify(data, args.key)
    if args.json:
        print(json.dumps({"file": args.file, **report.as_json()}))
    else:
        print("\n".join(report.lines()))
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
