"""Proof files (C2SP tlog-proof): written, read back, checked, and each failed step named."""

from __future__ import annotations

import base64

import pytest

from tests.tlog.trees import StoredTree, entries
from warehouse.tlog import checkpoint, merkle, note, proof
from warehouse.tlog.errors import ProofError

ORIGIN = "receipts.example/log"


@pytest.fixture(scope="module")
def signer() -> note.Signer:
    return note.Signer.generate(ORIGIN)


@pytest.fixture(scope="module")
def tree() -> StoredTree:
    return StoredTree(entries(23))


def _proof_of(tree: StoredTree, signer: note.Signer, n: int, extra: bytes | None = None) -> bytes:
    head = checkpoint.Checkpoint(ORIGIN, tree.size, merkle.tree_hash(tree.size, tree.read))
    hashes = merkle.prove_record(tree.size, n, tree.read)
    return proof.format_proof(n, hashes, checkpoint.sign(head, signer), extra)


def test_the_file_has_the_specs_layout(tree: StoredTree, signer: note.Signer) -> None:
    data = _proof_of(tree, signer, 9, extra=b"doc nhtsa/recall/1")
    lines = data.decode().split("\n")
    hashes = merkle.prove_record(tree.size, 9, tree.read)
    assert lines[0] == "c2sp.org/tlog-proof@v1"
    assert lines[1] == "extra " + base64.b64encode(b"doc nhtsa/recall/1").decode()
    assert lines[2] == "index 9"
    assert lines[3 : 3 + len(hashes)] == [base64.b64encode(h).decode() for h in hashes]
    assert lines[3 + len(hashes)] == ""
    assert "\n".join(lines[4 + len(hashes) :]).startswith(f"{ORIGIN}\n23\n")
    parsed = proof.parse_proof(data)
    assert parsed.format() == data
    assert (parsed.index, parsed.hashes, parsed.extra) == (9, tuple(hashes), b"doc nhtsa/recall/1")


def test_every_entry_of_the_tree_verifies(tree: StoredTree, signer: note.Signer) -> None:
    for n, entry in enumerate(tree.entries):
        parsed, head = proof.verify_proof(_proof_of(tree, signer, n), entry, [signer.verifier])
        assert (parsed.index, head.size, head.origin) == (n, tree.size, ORIGIN)
    proof.verify_proof(_proof_of(tree, signer, 0), tree.entries[0], [signer.verifier], ORIGIN)


def _step(data: bytes, entry: bytes, verifiers: list[note.Verifier], origin: str | None) -> str:
    with pytest.raises(ProofError) as caught:
        proof.verify_proof(data, entry, verifiers, origin)
    assert str(caught.value).startswith(f"{caught.value.step}: ")
    return str(caught.value.step)


def test_each_failure_names_its_step(tree: StoredTree, signer: note.Signer) -> None:
    good = _proof_of(tree, signer, 5)
    entry, trusted = tree.entries[5], [signer.verifier]
    assert _step(good, tree.entries[6], trusted, ORIGIN) == "inclusion"
    assert _step(_proof_of(tree, signer, 6), entry, trusted, ORIGIN) == "inclusion"
    other_key = note.Signer.generate(ORIGIN)
    assert _step(good, entry, [other_key.verifier], ORIGIN) == "signature"
    assert _step(good.replace(b"\n23\n", b"\n24\n"), entry, trusted, ORIGIN) == "signature"
    assert _step(good, entry, trusted, "elsewhere.example/log") == "checkpoint"
    assert _step(good.replace(b"index 5", b"index 05"), entry, trusted, None) == "format"
    assert _step(good.replace(b"index 5", b"index 30"), entry, trusted, None) == "inclusion"


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"c2sp.org/tlog-proof@v2\nindex 0\n\ncheckpoint\n", "first line"),
        (b"c2sp.org/tlog-proof@v1\nextra !!\nindex 0\n\ncheckpoint\n", "extra data"),
        (b"c2sp.org/tlog-proof@v1\n\n\ncheckpoint\n", "no 'index N'"),
        (b"c2sp.org/tlog-proof@v1\nindex -5\n\ncheckpoint\n", "no 'index N'"),
        (b"c2sp.org/tlog-proof@v1\nindex 0\n!!notbase64!!\n\ncheckpoint\n", "not base64"),
        (b"c2sp.org/tlog-proof@v1\nindex 0\n" + base64.b64encode(bytes(64)) + b"\n\nc\n", "64"),
        (b"c2sp.org/tlog-proof@v1\nindex 0\n", "no empty line"),
    ],
)
def test_malformed_files_are_refused(data: bytes, reason: str) -> None:
    with pytest.raises(ProofError, match=reason) as caught:
        proof.parse_proof(data)
    assert caught.value.step == "format"
