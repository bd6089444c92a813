"""What receipts writes, checked by an implementation it did not write: Go's
golang.org/x/mod/sumdb/tlog and note (x/mod 0.7.0 as Debian packages it), through the
checker in tests/tlog/go. And the other way: a key and a note Go made, used by receipts."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from tests.tlog.conftest import GoCheck
from tests.tlog.trees import StoredTree, entries
from warehouse.tlog import checkpoint, merkle, note, proof, tiles

ORIGIN = "receipts.example/log"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def unb64(values: list[str]) -> list[bytes]:
    return [base64.b64decode(v) for v in values]


@pytest.fixture(scope="module")
def tree() -> StoredTree:
    return StoredTree(entries(300))


@pytest.fixture(scope="module")
def signer() -> note.Signer:
    return note.Signer.generate(ORIGIN)


def test_go_stores_the_same_hashes_and_roots(go_check: GoCheck, tree: StoredTree) -> None:
    answer = go_check("tree", {"entries": [b64(e) for e in tree.entries]})
    assert unb64(answer["stored"]) == tree.hashes
    roots = [merkle.tree_hash(n, tree.read) for n in range(1, tree.size + 1)]
    assert unb64(answer["roots"]) == roots
    appender = merkle.Appender(0, tree.read)
    pairs = [pair for entry in tree.entries for pair in appender.append(entry)]
    assert [h for _, h in pairs] == unb64(answer["stored"])


def _claims(
    tree: StoredTree, pairs: list[tuple[int, int]], record: bool
) -> list[dict[str, object]]:
    claims = []
    for t, n in pairs:
        if record:
            h = tree.hashes[merkle.stored_hash_index(0, n)]
            path = merkle.prove_record(t, n, tree.read)
        else:
            h = merkle.tree_hash(n, tree.read)
            path = merkle.prove_tree(t, n, tree.read)
        th = merkle.tree_hash(t, tree.read)
        claims.append({"t": t, "th": b64(th), "n": n, "h": b64(h), "proof": list(map(b64, path))})
    return claims


RECORDS = [(1, 0), (2, 1), (7, 3), (8, 5), (255, 254), (256, 0), (257, 256), (300, 123), (300, 299)]
TREES = [(1, 1), (8, 6), (7, 6), (5, 2), (256, 255), (257, 256), (300, 1), (300, 129), (300, 300)]


def test_go_accepts_our_proofs_and_proves_the_same(go_check: GoCheck, tree: StoredTree) -> None:
    records = _claims(tree, RECORDS, record=True)
    trees = _claims(tree, TREES, record=False)
    answer = go_check(
        "check", {"stored": list(map(b64, tree.hashes)), "records": records, "trees": trees}
    )
    pairs = [
        *zip(records, answer["records"], strict=True),
        *zip(trees, answer["trees"], strict=True),
    ]
    for claim, result in pairs:
        assert result["error"] == "", claim
        assert result["go_proof"] == claim["proof"], claim
        assert result["go_root"] == claim["th"], claim


def test_go_refuses_our_proofs_once_altered(go_check: GoCheck, tree: StoredTree) -> None:
    records = _claims(tree, [(300, 123)], record=True)
    trees = _claims(tree, [(300, 129)], record=False)
    for claim in (*records, *trees):
        claim["h"] = b64(merkle.leaf_hash(b"another entry"))
    answer = go_check(
        "check", {"stored": list(map(b64, tree.hashes)), "records": records, "trees": trees}
    )
    assert answer["records"][0]["error"] != ""
    assert answer["trees"][0]["error"] != ""


def test_go_opens_our_signed_checkpoint(go_check: GoCheck, signer: note.Signer) -> None:
    head = checkpoint.Checkpoint(ORIGIN, 42, merkle.leaf_hash(b"root"))
    signed = checkpoint.sign(head, signer)
    answer = go_check("open-note", {"vkeys": [str(signer.verifier)], "note": b64(signed)})
    assert answer == {"text": head.text(), "keys": [signer.verifier.key]}
    other = note.Signer.generate(ORIGIN)
    refused = go_check("open-note", {"vkeys": [str(other.verifier)], "note": b64(signed)})
    assert "no verifiable signatures" in refused["error"]
    altered = signed.replace(b"\n42\n", b"\n43\n")
    refused = go_check("open-note", {"vkeys": [str(signer.verifier)], "note": b64(altered)})
    assert "invalid signature" in refused["error"]


def test_we_use_a_key_and_a_note_go_made(go_check: GoCheck) -> None:
    text = f"{ORIGIN}\n7\n{b64(merkle.leaf_hash(b'x'))}\n"
    made = go_check("sign", {"name": ORIGIN, "text": text})
    signed = base64.b64decode(made["note"])
    verifier = note.parse_verifier(made["vkey"])
    opened, signatures = note.open(signed, [verifier])
    assert opened == text
    assert [s.key for s in signatures] == [verifier.key]
    assert checkpoint.open(signed, [verifier], ORIGIN).size == 7
    # Ed25519 is deterministic: Go's signer key, read by receipts, signs the same bytes.
    signer = note.parse_signer(made["skey"])
    assert signer.key_string() == made["skey"]
    assert str(signer.verifier) == made["vkey"]
    assert note.sign(text, signer) == signed


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (0, 1),
        (0, 256),
        (250, 600),
        (512, 513),
        (65000, 70000),
        (0, 70000),
        (65535, 65536),
        (300, 300),
    ],
)
def test_go_plans_the_same_new_tiles(go_check: GoCheck, old: int, new: int) -> None:
    # Go's sumdb publishes every partial width from the old tree's to the new one's (its
    # clients may ask for any tree size); C2SP tlog-tiles only needs the partial tiles of
    # checkpointed sizes. So receipts writes, of Go's plan, the full tiles and the widest
    # partial tile of each level, leaving out what the old tree already had.
    planned = [
        tiles.parse_path(path) for path in go_check("new-tiles", {"old": old, "new": new})["paths"]
    ]
    widest: dict[tuple[int, int], int] = {}
    for tile in planned:
        widest[tile.level, tile.n] = max(widest.get((tile.level, tile.n), 0), tile.width)

    def old_width(level: int, n: int) -> int:
        return max(0, min(256, (old >> (8 * level)) - 256 * n))

    expected = [
        tiles.Tile(level, n, width)
        for (level, n), width in widest.items()
        if width > old_width(level, n)
    ]
    assert tiles.new_tiles(old, new) == expected
    assert planned or old == new == 0


def test_go_reads_our_published_tiles(
    go_check: GoCheck, tmp_path: Path, signer: note.Signer
) -> None:
    # Past 65,536 entries: full and partial tiles on levels 0 and 1, and a level-2 tile.
    size = 70_000
    log = StoredTree()
    log.entries = entries(size)
    appender = merkle.Appender(0, log.read)
    for entry in log.entries:
        log.hashes.extend(h for _, h in appender.append(entry))

    def publish(old: int, new: int) -> list[str]:
        head = checkpoint.Checkpoint(ORIGIN, new, merkle.tree_hash(new, log.read))
        return tiles.write_tiles(
            tmp_path,
            old,
            new,
            log.read,
            lambda s, e: log.entries[s:e],
            checkpoint.sign(head, signer),
        )

    publish(0, 65_000)
    request = {"dir": str(tmp_path), "vkey": str(signer.verifier), "origin": ORIGIN}
    first = go_check("tiles", request)
    assert first["size"] == 65_000 and first["entries"] == 65_000
    assert unb64(first["stored"]) == log.hashes[: merkle.stored_hash_count(65_000)]
    publish(65_000, size)
    second = go_check("tiles", request)
    assert second["size"] == size and second["entries"] == size
    assert unb64(second["stored"]) == log.hashes


def test_go_checks_our_proof_file(go_check: GoCheck, tree: StoredTree, signer: note.Signer) -> None:
    head = checkpoint.Checkpoint(ORIGIN, tree.size, merkle.tree_hash(tree.size, tree.read))
    data = proof.format_proof(
        77, merkle.prove_record(tree.size, 77, tree.read), checkpoint.sign(head, signer)
    )
    request = {"vkey": str(signer.verifier), "origin": ORIGIN, "proof": b64(data)}
    answer = go_check("proof", {**request, "entry": b64(tree.entries[77])})
    assert answer == {"index": 77, "size": tree.size}
    wrong = go_check("proof", {**request, "entry": b64(tree.entries[78])})
    assert "invalid transparency proof" in wrong["error"]
