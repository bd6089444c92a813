"""Signed notes: the published example of Go's note package, key strings, and every reason a
note is refused."""

from __future__ import annotations

import base64
import hashlib
import re

import pytest

from warehouse.tlog import note
from warehouse.tlog.errors import BadSignature, MalformedNote, NoteError, UnknownKey

# The example key pair and signed note of Go's golang.org/x/mod/sumdb/note documentation
# (note.go's package comment and example_test.go, x/mod v0.7.0 as Debian packages it).
GO_SKEY = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
GO_VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
GO_TEXT = (
    "If you think cryptography is the answer to your problem,\n"
    "then you don't know what your problem is.\n"
)
GO_NOTE = (
    GO_TEXT + "\n— PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZ"
    "SNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n"
).encode()


def test_signing_the_published_example_gives_the_published_note() -> None:
    signer = note.parse_signer(GO_SKEY)
    assert signer.key_string() == GO_SKEY
    assert str(signer.verifier) == GO_VKEY
    assert note.sign(GO_TEXT, signer) == GO_NOTE


def test_opening_the_published_note() -> None:
    verifier = note.parse_verifier(GO_VKEY)
    text, signatures = note.open(GO_NOTE, [verifier])
    assert text == GO_TEXT
    assert [s.key for s in signatures] == ["PeterNeumann+c74f20a3"]


def test_the_key_id_is_the_specs_hash() -> None:
    signer = note.Signer.generate("example.com/log")
    public = signer.verifier.public_key
    digest = hashlib.sha256(b"example.com/log\n\x01" + public).digest()
    assert signer.key_id == int.from_bytes(digest[:4], "big")
    name, hex_id, encoded = str(signer.verifier).split("+", 2)
    assert (name, hex_id) == ("example.com/log", digest[:4].hex())
    assert base64.b64decode(encoded) == b"\x01" + public
    assert note.parse_verifier(str(signer.verifier)) == signer.verifier
    assert note.parse_signer(signer.key_string()) == signer


def test_a_signer_never_shows_its_seed() -> None:
    signer = note.parse_signer(GO_SKEY)
    secret = GO_SKEY.split("+", 4)[4]
    assert secret not in repr(signer)
    assert secret not in str(signer)


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("PeterNeumann+c74f20a3", r"expected name\+keyid\+base64"),
        ("PeterNeumann+c74f20a+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", "8 hex digits"),
        ("PeterNeumann+c74f20a4+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", "does not match"),
        ("Peter Neumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", "key name"),
        ("PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwx!bzhKqiBfsVkmqq/LDE4izWy10T", "not base64"),
        # Go's note_test.go: a key of the wrong length, and an unknown algorithm byte.
        ("PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY==", "Ed25519"),
        ("PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", "Ed25519"),
    ],
)
def test_malformed_verifier_keys_are_refused(key: str, message: str) -> None:
    with pytest.raises(NoteError, match=message):
        note.parse_verifier(key)


def test_a_malformed_signer_key_is_refused_without_repeating_it() -> None:
    broken = GO_SKEY[:-4] + "!!!!"
    with pytest.raises(NoteError) as caught:
        note.parse_signer(broken)
    assert broken.split("+", 4)[4] not in str(caught.value)
    with pytest.raises(NoteError, match="PRIVATE"):
        note.parse_signer(GO_VKEY)


@pytest.fixture(scope="module")
def signer() -> note.Signer:
    return note.Signer.generate("receipts.example/log")


def test_notes_round_trip_with_blank_lines_in_the_text(signer: note.Signer) -> None:
    text = "line one\n\nline three\n"
    signed = note.sign(text, signer)
    assert note.open(signed, [signer.verifier])[0] == text


def test_unknown_keys_are_ignored_when_a_trusted_one_signed(signer: note.Signer) -> None:
    other = note.Signer.generate("witness.example")
    signed = note.sign("hello\n", signer)
    cosigned = signed + note.sign("hello\n", other).split(b"\n\n", 1)[1]
    text, signatures = note.open(cosigned, [signer.verifier])
    assert text == "hello\n"
    assert [s.name for s in signatures] == [signer.name]
    both = note.open(cosigned, [signer.verifier, other.verifier])[1]
    assert [s.name for s in both] == [signer.name, "witness.example"]


def test_a_note_signed_by_another_key_names_both_keys(signer: note.Signer) -> None:
    impostor = note.Signer.generate(signer.name)  # same name, another key
    signed = note.sign("hello\n", impostor)
    with pytest.raises(UnknownKey) as caught:
        note.open(signed, [signer.verifier])
    message = str(caught.value)
    assert f"signed by {impostor.verifier.key}" in message
    assert f"trusted: {signer.verifier.key}" in message


def test_an_altered_note_is_refused(signer: note.Signer) -> None:
    signed = note.sign("size 10\n", signer)
    with pytest.raises(
        BadSignature, match=re.escape(f"signature by {signer.verifier.key} does not")
    ):
        note.open(signed.replace(b"size 10\n", b"size 11\n", 1), [signer.verifier])


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"no signature\n", "no blank line"),
        (b"text\n\nnot a signature line\n", "not a signature line"),
        (b"text\n\n\xe2\x80\x94 name AAAA\n", "too short"),
        (b"text\n\n\xe2\x80\x94 name !!!\n", "bad signature line"),
        (b"text\n\n\xe2\x80\x94 na+me AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n", "bad"),
        (b"te\x01xt\n\n\xe2\x80\x94 name AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n", "control"),
        (b"\xff\n\n\xe2\x80\x94 name AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n", "not UTF-8"),
        (b"text\n\n\xe2\x80\x94 name AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "does not end"),
    ],
)
def test_malformed_notes_are_refused(signer: note.Signer, raw: bytes, message: str) -> None:
    with pytest.raises(MalformedNote, match=message):
        note.open(raw, [signer.verifier])


def test_too_many_signatures_are_refused(signer: note.Signer) -> None:
    line = note.sign("x\n", signer).split(b"\n\n", 1)[1]
    with pytest.raises(MalformedNote, match="more than 100"):
        note.open(b"x\n\n" + line * 101, [signer.verifier])


@pytest.mark.parametrize("text", ["no newline", "ctrl\x07\n", ""])
def test_sign_refuses_text_that_is_not_a_note_text(signer: note.Signer, text: str) -> None:
    with pytest.raises(MalformedNote):
        note.sign(text, signer)


@pytest.mark.parametrize("name", ["", "a b", "a+b", "tab\tname"])
def test_invalid_key_names_are_refused(name: str) -> None:
    with pytest.raises(NoteError, match="invalid key name"):
        note.Signer.generate(name)
