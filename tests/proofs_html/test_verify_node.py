"""The proof page's step logic (``verify.js``) run under Node against the same good and bad
bundles as the browser tests: it is plain JavaScript over Web Crypto, the same in both."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import unicodedata
from importlib import resources
from typing import Any

import pytest

from tests.proofs_html import bundles as b
from warehouse.tlog import checkpoint, merkle
from warehouse.tlog.errors import ProofError
from warehouse.tlog.proof import parse_proof

RUNNER = resources.files("tests.proofs_html") / "verify_node.cjs"
VERIFY_JS = resources.files("pipelines.proofs_html") / "assets" / "verify.js"


def _verify(*cases: tuple[str, str]) -> list[dict[str, Any]]:
    """The results of verify.js for each (bundle text, trusted key) under Node."""
    return _node([{"text": text, "key": key} for text, key in cases])


def _node(inputs: list[dict[str, str]]) -> list[Any]:
    node = shutil.which("node")
    if node is None:
        if os.environ.get("CI"):
            pytest.fail("node is missing: apt-get install nodejs")
        pytest.skip("needs node (Node.js 20 or later): apt-get install nodejs")
    payload = json.dumps(inputs)
    done = subprocess.run(
        [node, str(RUNNER), str(VERIFY_JS)],
        input=payload,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    results: list[Any] = json.loads(done.stdout)
    return results


def _statuses(result: dict[str, Any]) -> tuple[str, ...]:
    return tuple(step["status"] for step in result["steps"])


def _reasons(result: dict[str, Any]) -> str:
    return " | ".join(step["reason"] for step in result["steps"] if step["reason"])


GOOD = {
    "json": b.good_bundle,
    "markdown": b.markdown_bundle,
    "normalised": b.normalised_bundle,
    "hostile": b.hostile_bundle,
}


def test_good_bundles_hold_at_every_step() -> None:
    results = _verify(*[(json.dumps(make()), "") for make in GOOD.values()])
    for name, result in zip(GOOD, results, strict=True):
        assert [s["step"] for s in result["steps"]] == list(b.STEPS)
        assert _statuses(result) == (b.OK,) * 6, (name, _reasons(result))
        assert result["holds"] is True


def test_each_bad_bundle_fails_at_its_step() -> None:
    names = list(b.BAD)
    cases = [(json.dumps(b.bad_bundle(name)), "") for name in names]
    results = _verify(*cases, (b.truncated_text(), ""))
    expected = [b.BAD[name][1] for name in names] + [b.TRUNCATED_STATUSES]
    for name, result, statuses in zip([*names, "truncated"], results, expected, strict=True):
        assert _statuses(result) == statuses, (name, _reasons(result))
        assert b.REASONS[name] in _reasons(result), name
        assert result["holds"] is False


def test_a_trusted_key_must_be_the_bundles_key() -> None:
    # A bundle whose log is signed by another key, naming that key: it holds on its own,
    # and fails at the checkpoint when the reader gives the key they trust.
    forged = json.dumps(b.good_bundle(signer=b.OTHER))
    trusted = str(b.SIGNER.verifier)
    own, given, same = _verify(
        (forged, ""), (forged, trusted), (json.dumps(b.good_bundle()), trusted)
    )
    assert own["holds"] is True
    assert _statuses(given) == (b.OK,) * 5 + (b.FAILED,)
    reason = given["steps"][-1]["reason"]
    assert str(b.OTHER.verifier) in reason and trusted in reason
    assert same["holds"] is True


def test_offsets_count_code_points_not_utf16_units() -> None:
    # The Markdown bundle's quote comes after astral characters (two UTF-16 units each):
    # offsets in UTF-16 units would land elsewhere.
    bundle = b.markdown_bundle()
    text = b.base64.b64decode(bundle["snapshot"]["bytes_base64"]).decode()
    start = bundle["quote"]["locator"]["start"]
    assert len(text.encode("utf-16-le")) // 2 > len(text)
    shifted = json.loads(json.dumps(bundle))
    shifted["quote"]["locator"]["start"] = start + 5
    shifted["quote"]["locator"]["end"] += 5
    good, bad = _verify((json.dumps(bundle), ""), (json.dumps(shifted), ""))
    assert good["holds"] is True
    assert _statuses(bad)[2] == b.FAILED


@pytest.mark.parametrize(
    ("spoil", "step", "reason"),
    [
        (lambda d: d.pop("log"), "format", '"log" is missing'),
        (lambda d: d["document"].update(revision="2"), "format", "not a JSON integer"),
        (lambda d: d["snapshot"].update(size=1), "snapshot", "the bundle says 1"),
        (lambda d: d["snapshot"].update(bytes_base64="a b"), "snapshot", "not standard base64"),
        (lambda d: d["quote"]["locator"].update(pointer="/nowhere"), "quote", "leads nowhere"),
        (lambda d: d["quote"]["locator"].update(pointer="/odiNumber"), "quote", "not a string"),
        (lambda d: d["quote"]["locator"].update(end=10**6), "quote", "not within"),
        (lambda d: d["log"].update(proof="nonsense"), "inclusion", "no empty line"),
        (
            lambda d: d["log"].update(verifier_key="x+00000000+AAAA"),
            "checkpoint",
            "not an Ed25519 key",
        ),
    ],
)
def test_malformed_fields_are_named(spoil: Any, step: str, reason: str) -> None:
    bundle = b.good_bundle()
    spoil(bundle)
    (result,) = _verify((json.dumps(bundle), ""))
    failed = {s["step"]: s["reason"] for s in result["steps"] if s["status"] == b.FAILED}
    assert step in failed and reason in failed[step], failed


def test_inclusion_proofs_of_every_place_in_small_trees() -> None:
    # Every entry index of every tree of 1 to 17 entries (the warehouse's Merkle code makes
    # the proofs): each holds. Then each proof against a checkpoint claiming one entry more:
    # verify.js and the warehouse's checker must agree on every one.
    places = [(i, size - 1 - i) for size in range(1, 18) for i in range(size)]
    made = [b.good_bundle(around=place) for place in places]
    grown = []
    for bundle in made:
        head, _, note = bundle["log"]["proof"].partition("\n\n")
        origin, size, root, _ = note.split("\n", 3)
        # The tree size in the checkpoint one larger (its signature no longer matters here).
        grown.append(
            dict(
                bundle,
                log=dict(bundle["log"], proof=f"{head}\n\n{origin}\n{int(size) + 1}\n{root}\n"),
            )
        )
    results = _verify(*[(json.dumps(x), "") for x in made + grown])
    held = results[: len(made)]
    assert [r["steps"][4]["status"] for r in held] == [b.OK] * len(made)
    assert all(r["holds"] for r in held)
    statuses = [r["steps"][4]["status"] for r in results[len(made) :]]
    # (A proof for a tree of n also leads to the same root for n + 1 when the path's shape
    # does not change, RFC 9162; it fails otherwise.)
    expected = [_python_inclusion(x) for x in grown]
    assert statuses == expected
    assert {b.OK, b.FAILED} <= set(expected)


def _python_inclusion(bundle: dict[str, Any]) -> str:
    """Step 5 by the warehouse's own checker (RFC 9162, warehouse.tlog.merkle)."""
    proof = parse_proof(bundle["log"]["proof"].encode())
    head = checkpoint.parse(proof.checkpoint.decode())
    leaf = merkle.leaf_hash(bundle["log"]["entry"].encode())
    try:
        merkle.check_record(proof.hashes, head.size, head.root, proof.index, leaf)
    except ProofError:
        return b.FAILED
    return b.OK


def _normalize(text: str) -> str:
    """Step 3's normalisation as the bundle format words it, in Python."""
    text = unicodedata.normalize("NFKC", text)
    text = re.sub("[\u2018\u2019\u201b\u2032]", "'", text)
    text = re.sub("[\u201c\u201d\u201f\u2033]", '"', text)
    text = re.sub("[\u2010-\u2015\u2212]", "-", text)
    spaces = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
    text = re.sub(f"[{spaces}]+", " ", text)
    return text.strip(" ").lower()


# What the normalisation changes or must leave: quotes, primes, dashes, spaces of every kind,
# compatibility forms (ligatures, full width, superscripts, circled), cases with special
# lowering (dotted I, final sigma, sharp s), combining marks, astral letters.
ALPHABET = (
    "aZ09 .'\"-\u2018\u2019\u201b\u2032\u201c\u201d\u201f\u2033\u2010\u2011\u2013\u2014"
    "\u2015\u2212\t\n\r\x0b\x0c\x85\xa0\u1680\u2003\u200a\u200b\u2028\u2029\u202f"
    "\u205f\u3000\ufb01\uff21\uff41\u00b2\u2460\u0130\u03a3\u03c3\u00df\u1e9e\u0301"
    "\u00e9\u212b\u2126\U0001d518\U0001f600\u00c5\u0041\u030a"
)


def test_the_normalisation_is_the_formats() -> None:
    chooser = random.Random(50)
    texts = ["".join(chooser.choices(ALPHABET, k=chooser.randint(0, 12))) for _ in range(600)]
    texts += [
        "  \u201cQuoted\u201d \u2014 it\u2019s \ufb01ne  ",
        "\u0130stanbul \u039f\u0394\u039f\u03a3",
    ]
    assert _node([{"normalize": text} for text in texts]) == [_normalize(t) for t in texts]
