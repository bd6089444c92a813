"""The log's Merkle tree: published Certificate Transparency vectors, every small tree against
RFC 6962's recursive definitions, the stored-hash layout, the bulk appender and the reads."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.tlog.trees import StoredTree, entries, mth, path, subproof
from warehouse.tlog import merkle

# The reference leaves, roots and proofs of Certificate Transparency's Merkle tree tests, as
# published in transparency-dev/merkle proof/verify_test.go (the same data as
# google/certificate-transparency's merkle tree tests). Their inclusion vectors number leaves
# from 1; here they are 0-based record numbers.
CT_ENTRIES = [
    bytes.fromhex(h)
    for h in (
        "",
        "00",
        "10",
        "2021",
        "3031",
        "40414243",
        "5051525354555657",
        "606162636465666768696a6b6c6d6e6f",
    )
]
CT_ROOTS = [
    bytes.fromhex(h)
    for h in (
        "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
        "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
        "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
        "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
        "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
        "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
        "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
    )
]
CT_EMPTY_ROOT = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def _hashes(*values: str) -> list[bytes]:
    return [bytes.fromhex(v) for v in values]


# (record, tree size, proof)
CT_INCLUSION = [
    (0, 1, []),
    (
        0,
        8,
        _hashes(
            "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
        ),
    ),
    (
        5,
        8,
        _hashes(
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ),
    ),
    (2, 3, _hashes("fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125")),
    (
        1,
        5,
        _hashes(
            "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        ),
    ),
]
# (old size, new size, proof)
CT_CONSISTENCY = [
    (1, 1, []),
    (
        1,
        8,
        _hashes(
            "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
        ),
    ),
    (
        6,
        8,
        _hashes(
            "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ),
    ),
    (
        2,
        5,
        _hashes(
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        ),
    ),
    (
        6,
        7,
        _hashes(
            "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ),
    ),
]
SOME_HASH = bytes.fromhex("abacaba000000000000000000000000000000000000000000060061e00123456")


@pytest.fixture(scope="module")
def ct_tree() -> StoredTree:
    return StoredTree(CT_ENTRIES)


def test_roots_match_the_published_vectors(ct_tree: StoredTree) -> None:
    assert merkle.tree_hash(0, ct_tree.read).hex() == CT_EMPTY_ROOT
    roots = [merkle.tree_hash(n, ct_tree.read) for n in range(1, 9)]
    assert roots == CT_ROOTS


@pytest.mark.parametrize(("n", "t", "proof"), CT_INCLUSION)
def test_inclusion_proofs_match_the_published_vectors(
    ct_tree: StoredTree, n: int, t: int, proof: list[bytes]
) -> None:
    assert merkle.prove_record(t, n, ct_tree.read) == proof
    merkle.check_record(proof, t, CT_ROOTS[t - 1], n, merkle.leaf_hash(CT_ENTRIES[n]))


@pytest.mark.parametrize(("n", "t", "proof"), CT_CONSISTENCY)
def test_consistency_proofs_match_the_published_vectors(
    ct_tree: StoredTree, n: int, t: int, proof: list[bytes]
) -> None:
    assert merkle.prove_tree(t, n, ct_tree.read) == proof
    merkle.check_tree(proof, t, CT_ROOTS[t - 1], n, CT_ROOTS[n - 1])


def _flipped(proof: Sequence[bytes], i: int) -> list[bytes]:
    wrong = list(proof)
    wrong[i] = bytes([wrong[i][0] ^ 8]) + wrong[i][1:]
    return wrong


@pytest.mark.parametrize(("n", "t", "proof"), [v for v in CT_INCLUSION if v[2]])
def test_corrupted_inclusion_proofs_are_refused(n: int, t: int, proof: list[bytes]) -> None:
    root, leaf = CT_ROOTS[t - 1], merkle.leaf_hash(CT_ENTRIES[n])
    probes = [
        (proof, t, root, n - 1, leaf),
        (proof, t, root, n + 1, leaf),
        (proof, t, root, n ^ 2, leaf),
        (proof, t * 2, root, n, leaf),
        (proof, t // 2, root, n, leaf),
        (proof, t, root, n, SOME_HASH),
        (proof, t, bytes.fromhex(CT_EMPTY_ROOT), n, leaf),
        ([*proof, root], t, root, n, leaf),
        ([root, *proof], t, root, n, leaf),
        (proof[:-1], t, root, n, leaf),
        ([proof[0], SOME_HASH, *proof[1:]], t, root, n, leaf),
        ([*proof, b""], t, root, n, leaf),
        *((_flipped(proof, i), t, root, n, leaf) for i in range(len(proof))),
    ]
    for probe in probes:
        with pytest.raises(merkle.ProofError):
            merkle.check_record(*probe)


@pytest.mark.parametrize(("n", "t", "proof"), [v for v in CT_CONSISTENCY if v[2]])
def test_corrupted_consistency_proofs_are_refused(n: int, t: int, proof: list[bytes]) -> None:
    old, new = CT_ROOTS[n - 1], CT_ROOTS[t - 1]
    probes = [
        (proof, t, new, n - 1, old),
        (proof, t, new, n + 1, old),
        (proof, t, new, n ^ 2, old),
        (proof, t * 2, new, n, old),
        (proof, t // 2, new, n, old),
        (proof, t, new, n, SOME_HASH),
        (proof, t, SOME_HASH, n, old),
        (proof, t, old, n, new),
        ([], t, new, n, old),
        ([*proof, old], t, new, n, old),
        ([*proof, new], t, new, n, old),
        ([old, *proof], t, new, n, old),
        ([proof[0], *proof], t, new, n, old),
        (proof[:-1], t, new, n, old),
        *((_flipped(proof, i), t, new, n, old) for i in range(len(proof))),
    ]
    for probe in probes:
        with pytest.raises(merkle.ProofError):
            merkle.check_tree(*probe)


SMALL = 40


@pytest.fixture(scope="module")
def small_tree() -> StoredTree:
    return StoredTree(entries(SMALL))


def test_every_small_tree_hash_is_rfc_6962s(small_tree: StoredTree) -> None:
    for n in range(SMALL + 1):
        assert merkle.tree_hash(n, small_tree.read) == mth(small_tree.entries[:n]), n


def test_every_inclusion_proof_of_every_small_tree(small_tree: StoredTree) -> None:
    for t in range(1, SMALL + 1):
        leaves = small_tree.entries[:t]
        root = mth(leaves)
        for n in range(t):
            proof = merkle.prove_record(t, n, small_tree.read)
            assert proof == path(n, leaves), (t, n)
            leaf = merkle.leaf_hash(leaves[n])
            merkle.check_record(proof, t, root, n, leaf)
            other = merkle.leaf_hash(b"not " + leaves[n])
            with pytest.raises(merkle.ProofError):
                merkle.check_record(proof, t, root, n, other)
            if t > 1:
                with pytest.raises(merkle.ProofError):
                    merkle.check_record(proof, t, root, (n + 1) % t, leaf)


def test_every_consistency_proof_of_every_small_tree(small_tree: StoredTree) -> None:
    roots = [mth(small_tree.entries[:n]) for n in range(SMALL + 1)]
    for t in range(1, SMALL + 1):
        for n in range(1, t + 1):
            proof = merkle.prove_tree(t, n, small_tree.read)
            assert proof == subproof(n, small_tree.entries[:t], True), (t, n)
            merkle.check_tree(proof, t, roots[t], n, roots[n])
            if n < t:
                with pytest.raises(merkle.ProofError):
                    merkle.check_tree(proof, t, roots[t], n, roots[n - 1])
                with pytest.raises(merkle.ProofError):
                    merkle.check_tree(proof, t, roots[t - 1], n, roots[n])


def test_each_stored_hash_is_the_hash_of_its_complete_subtree(small_tree: StoredTree) -> None:
    assert len(small_tree.hashes) == merkle.stored_hash_count(SMALL)
    seen = set()
    for level in range(SMALL.bit_length()):
        width = 1 << level
        for n in range(SMALL // width):
            index = merkle.stored_hash_index(level, n)
            assert merkle.split_stored_hash_index(index) == (level, n)
            leaves = small_tree.entries[n * width : (n + 1) * width]
            assert small_tree.hashes[index] == mth(leaves), (level, n)
            seen.add(index)
    assert seen == set(range(len(small_tree.hashes)))


def test_the_stored_hash_layout_is_go_tlogs() -> None:
    # golang.org/x/mod/sumdb/tlog's documented order: record n's leaf hash, then the hashes
    # of the subtrees it completes, lowest level first.
    order = [(0, 0), (0, 1), (1, 0), (0, 2), (0, 3), (1, 1), (2, 0), (0, 4), (0, 5), (1, 2)]
    assert [merkle.stored_hash_index(lv, n) for lv, n in order] == list(range(len(order)))
    assert [merkle.stored_hash_count(n) for n in range(9)] == [0, 1, 3, 4, 7, 8, 10, 11, 15]


@pytest.mark.parametrize("start", [0, 1, 2, 3, 7, 8, 100, 255, 256])
def test_the_appender_stores_what_stored_hashes_stores(start: int) -> None:
    total = 300
    reference = StoredTree(entries(total))
    grown = StoredTree(entries(start))
    grown.reads.clear()
    appender = merkle.Appender(start, grown.read)
    assert len(grown.reads) <= 1
    assert appender.root() == merkle.tree_hash(start, reference.read)
    reads = len(grown.reads)
    for entry in entries(total)[start:]:
        for index, h in appender.append(entry):
            assert index == len(grown.hashes)
            grown.hashes.append(h)
    assert len(grown.reads) == reads  # no read while appending
    assert appender.size == total
    assert grown.hashes == reference.hashes
    assert appender.root() == merkle.tree_hash(total, reference.read)


def test_each_call_reads_once_and_logarithmically() -> None:
    size = 5000
    tree = StoredTree(entries(size))
    bound = 2 * size.bit_length()
    calls = [
        lambda: merkle.tree_hash(size, tree.read),
        lambda: merkle.tree_hash(size - 1, tree.read),
        lambda: merkle.prove_record(size, 1234, tree.read),
        lambda: merkle.prove_record(size - 7, size - 8, tree.read),
        lambda: merkle.prove_tree(size, 1234, tree.read),
        lambda: merkle.prove_tree(size, 4095, tree.read),
        lambda: merkle.stored_hashes(4095, b"x", tree.read),
    ]
    for call in calls:
        tree.reads.clear()
        call()
        assert len(tree.reads) == 1
        assert len(tree.reads[0]) <= bound


def test_arguments_out_of_range_are_refused(small_tree: StoredTree) -> None:
    with pytest.raises(ValueError, match="no record 5 in a tree of 5"):
        merkle.prove_record(5, 5, small_tree.read)
    with pytest.raises(ValueError, match="from a tree of 0"):
        merkle.prove_tree(5, 0, small_tree.read)
    with pytest.raises(ValueError, match="from a tree of 6 records to one of 5"):
        merkle.prove_tree(5, 6, small_tree.read)
    with pytest.raises(merkle.ProofError, match="record 3 is not in a tree of 3"):
        merkle.check_record([], 3, SOME_HASH, 3, SOME_HASH)
    with pytest.raises(merkle.ProofError, match="not 32 bytes"):
        merkle.check_record([b"short"], 2, SOME_HASH, 0, SOME_HASH)
    with pytest.raises(merkle.ProofError, match="two different roots"):
        merkle.check_tree([], 3, SOME_HASH, 3, CT_ROOTS[2])


def test_a_reader_that_answers_short_is_an_error() -> None:
    with pytest.raises(ValueError, match="returned 1 hashes for 2 indexes"):
        merkle.tree_hash(3, lambda indexes: [SOME_HASH])


LARGE = 3000


@pytest.fixture(scope="module")
def large_tree() -> StoredTree:
    return StoredTree(entries(LARGE))


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_proofs_of_larger_trees_hold_and_bind(large_tree: StoredTree, data: st.DataObject) -> None:
    t = data.draw(st.integers(1, LARGE), label="tree size")
    n = data.draw(st.integers(0, t - 1), label="record")
    m = data.draw(st.integers(1, t), label="older tree size")
    read = large_tree.read
    root = merkle.tree_hash(t, read)
    leaf = large_tree.hashes[merkle.stored_hash_index(0, n)]
    record_proof = merkle.prove_record(t, n, read)
    merkle.check_record(record_proof, t, root, n, leaf)
    tree_proof = merkle.prove_tree(t, m, read)
    merkle.check_tree(tree_proof, t, root, m, merkle.tree_hash(m, read))
    if t > 1:
        other = (n + data.draw(st.integers(1, t - 1), label="other record")) % t
        with pytest.raises(merkle.ProofError):
            merkle.check_record(record_proof, t, root, other, leaf)
    if m < t:
        with pytest.raises(merkle.ProofError):
            merkle.check_tree(tree_proof, t, root, m, merkle.tree_hash(m - 1 or t, read))


def test_bulk_inclusion_proofs_are_the_single_ones(small_tree: StoredTree) -> None:
    reads: list[int] = []

    def read(indexes: Sequence[int]) -> list[bytes]:
        reads.append(len(indexes))
        return small_tree.read(indexes)

    for t in range(1, small_tree.size + 1):
        wanted = list(range(t))
        reads.clear()
        bulk = merkle.prove_records(t, wanted, read)
        assert len(reads) <= 1  # one read for every proof
        assert bulk == {n: merkle.prove_record(t, n, small_tree.read) for n in wanted}


@pytest.mark.parametrize("seed", range(5))
def test_bulk_inclusion_proofs_of_some_records_are_the_single_ones(
    small_tree: StoredTree, seed: int
) -> None:
    rng = random.Random(seed)
    for t in rng.sample(range(1, small_tree.size + 1), 20):
        wanted = [rng.randrange(t) for _ in range(rng.randint(1, 6))]
        bulk = merkle.prove_records(t, [*wanted, *wanted], small_tree.read)  # repeats too
        assert bulk == {n: merkle.prove_record(t, n, small_tree.read) for n in wanted}
    with pytest.raises(ValueError, match="no record 5 in a tree of 5"):
        merkle.prove_records(5, [0, 5], small_tree.read)
    assert merkle.prove_records(5, [], small_tree.read) == {}


@pytest.mark.parametrize("cuts", [[300], [1, 300], [3, 4, 7, 8, 100, 300], [255, 256, 257, 300]])
def test_extending_in_runs_stores_what_appending_one_by_one_stores(cuts: list[int]) -> None:
    reference = StoredTree(entries(300))
    grown = StoredTree([])
    appender = merkle.Appender(0, grown.read)
    start = 0
    for cut in cuts:
        stored: dict[int, bytes] = {}
        for level, first, hashes in appender.extend(entries(300)[start:cut]):
            for n, h in enumerate(hashes, first):
                stored[merkle.stored_hash_index(level, n)] = h
        assert sorted(stored) == list(range(len(grown.hashes), len(grown.hashes) + len(stored)))
        grown.hashes.extend(stored[i] for i in sorted(stored))
        assert appender.root() == merkle.tree_hash(cut, reference.read)
        fresh = merkle.Appender(cut, grown.read)  # the edge read back agrees with the kept one
        assert fresh.root() == appender.root()
        start = cut
    assert grown.hashes == reference.hashes


@pytest.mark.parametrize("seed", range(4))
def test_a_root_worked_out_from_some_leaves_is_the_trees_and_binds_them(
    small_tree: StoredTree, seed: int
) -> None:
    """root_from_leaves, with one read, gives the tree's root from any set of its leaves;
    a leaf changed, or put at another record's number, gives another root."""
    rng = random.Random(seed)
    for t in range(1, small_tree.size + 1):
        numbers = rng.sample(range(t), rng.randint(1, t))
        leaves = {n: merkle.leaf_hash(small_tree.entries[n]) for n in numbers}
        small_tree.reads.clear()
        root = merkle.root_from_leaves(t, leaves, small_tree.read)
        assert len(small_tree.reads) <= 1
        assert root == mth(small_tree.entries[:t]), (t, numbers)
        n = rng.choice(numbers)
        changed = {**leaves, n: merkle.leaf_hash(b"not " + small_tree.entries[n])}
        assert merkle.root_from_leaves(t, changed, small_tree.read) != root
        if t > 1:
            other = (n + rng.randint(1, t - 1)) % t
            moved = {k: v for k, v in leaves.items() if k != n}
            moved[other] = leaves[n]
            if moved[other] != leaves.get(other):
                assert merkle.root_from_leaves(t, moved, small_tree.read) != root
    assert merkle.root_from_leaves(5, {}, small_tree.read) == mth(small_tree.entries[:5])
    with pytest.raises(ValueError, match="no record 5 in a tree of 5"):
        merkle.root_from_leaves(5, {5: bytes(32)}, small_tree.read)
