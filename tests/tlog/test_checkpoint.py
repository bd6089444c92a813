"""Checkpoints: the C2SP body, signed and opened, and the reasons one is refused."""

from __future__ import annotations

import base64
import hashlib
import re

import pytest

from warehouse.tlog import checkpoint, note
from warehouse.tlog.errors import BadSignature, MalformedCheckpoint, OtherOrigin, UnknownKey

ORIGIN = "receipts.example/log"
ROOT = hashlib.sha256(b"root").digest()


@pytest.fixture(scope="module")
def signer() -> note.Signer:
    return note.Signer.generate(ORIGIN)


def test_the_body_is_the_specs_three_lines() -> None:
    head = checkpoint.Checkpoint(ORIGIN, 20852163, ROOT)
    b64 = base64.b64encode(ROOT).decode()
    assert head.text() == f"{ORIGIN}\n20852163\n{b64}\n"
    assert checkpoint.parse(head.text()) == head
    extended = checkpoint.Checkpoint(ORIGIN, 0, ROOT, ("ext one", "ext two"))
    assert extended.text().endswith(f"{b64}\next one\next two\n")
    assert checkpoint.parse(extended.text(), ORIGIN) == extended


def test_the_specs_example_body_parses() -> None:
    # The example of c2sp.org/tlog-checkpoint.
    text = "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"
    head = checkpoint.parse(text)
    assert (head.origin, head.size) == ("example.com/behind-the-sofa", 20852163)
    assert head.text() == text


def test_signed_and_opened(signer: note.Signer) -> None:
    head = checkpoint.Checkpoint(ORIGIN, 5, ROOT)
    signed = checkpoint.sign(head, signer)
    assert signed.startswith(head.text().encode() + b"\n\xe2\x80\x94 " + ORIGIN.encode())
    assert checkpoint.open(signed, [signer.verifier], ORIGIN) == head


def test_another_logs_checkpoint_is_refused_as_such(signer: note.Signer) -> None:
    other = note.Signer.generate("elsewhere.example/log")
    signed = checkpoint.sign(checkpoint.Checkpoint("elsewhere.example/log", 5, ROOT), other)
    with pytest.raises(OtherOrigin, match=r"another log: origin 'elsewhere\.example/log'"):
        checkpoint.open(signed, [signer.verifier], ORIGIN)


def test_a_checkpoint_signed_by_another_key_is_refused_as_such(signer: note.Signer) -> None:
    impostor = note.Signer.generate(ORIGIN)
    signed = checkpoint.sign(checkpoint.Checkpoint(ORIGIN, 5, ROOT), impostor)
    with pytest.raises(UnknownKey, match=re.escape(f"signed by {impostor.verifier.key}")):
        checkpoint.open(signed, [signer.verifier], ORIGIN)


def test_an_altered_checkpoint_is_refused(signer: note.Signer) -> None:
    signed = checkpoint.sign(checkpoint.Checkpoint(ORIGIN, 5, ROOT), signer)
    with pytest.raises(BadSignature):
        checkpoint.open(signed.replace(b"\n5\n", b"\n6\n", 1), [signer.verifier], ORIGIN)


B64 = base64.b64encode(ROOT).decode()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (f"{ORIGIN}\n5\n{B64}", "does not end in a newline"),
        (f"{ORIGIN}\n5\n", "expected an origin"),
        (f"{ORIGIN}\n05\n{B64}\n", "tree size '05'"),
        (f"{ORIGIN}\n-5\n{B64}\n", "tree size"),
        (f"{ORIGIN}\nfive\n{B64}\n", "tree size"),
        (f"{ORIGIN}\n5\n{B64[:-4]}\n", "root hash"),
        (f"{ORIGIN}\n5\nnot base64!\n", "root hash"),
        (f"{ORIGIN}\n5\n{B64}\n\nextension\n", "empty extension"),
        (f"\n5\n{B64}\n", "origin"),
    ],
)
def test_malformed_bodies_are_refused(text: str, message: str) -> None:
    with pytest.raises(MalformedCheckpoint, match=message):
        checkpoint.parse(text)


def test_a_malformed_signed_body_is_refused_before_its_signature(signer: note.Signer) -> None:
    signed = note.sign(f"{ORIGIN}\nfive\n{B64}\n", signer)
    with pytest.raises(MalformedCheckpoint, match="tree size 'five'"):
        checkpoint.open(signed, [signer.verifier], ORIGIN)
