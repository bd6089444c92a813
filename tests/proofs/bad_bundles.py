"""Bad bundles made from a good one, each with the step that must refuse it (shared by the
tests of `receipts verify-bundle` and of the single-file verifier in a bare venv)."""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Callable
from typing import Any

from warehouse.tlog import note

Bundle = dict[str, Any]


def _tampered_bytes(b: Bundle) -> None:
    data = base64.b64decode(b["snapshot"]["bytes_base64"]).replace(b"dealer", b"driver")
    b["snapshot"]["bytes_base64"] = base64.b64encode(data).decode()


def _wrong_quote(b: Bundle) -> None:
    b["quote"]["text"] = "the brakes worked perfectly"


def _other_key(b: Bundle) -> None:
    """The checkpoint's signature replaced by one of another key under the same name."""
    proof = b["log"]["proof"]
    head, _, checkpoint = proof.partition("\n\n")
    body = checkpoint[: checkpoint.rfind("\n\n") + 1]
    name = b["log"]["verifier_key"].split("+")[0]
    b["log"]["proof"] = head + "\n\n" + note.sign(body, note.Signer.generate(name)).decode()


def _other_document(b: Bundle) -> None:
    doc_id = b["document"]["doc_id"]
    b["log"]["entry"] = b["log"]["entry"].replace(f"doc_id {doc_id}\n", "doc_id nhtsa/x/1\n")


def _version_2(b: Bundle) -> None:
    b["version"] = 2


def _other_tree(b: Bundle, other: Bundle) -> None:
    b["log"]["proof"] = other["log"]["proof"]


# name -> (how to break a good bundle, given another log's bundle; the step that refuses it)
BAD: dict[str, tuple[Callable[[Bundle, Bundle], None], str]] = {
    "tampered-bytes": (lambda b, o: _tampered_bytes(b), "snapshot"),
    "wrong-quote": (lambda b, o: _wrong_quote(b), "quote"),
    "other-tree": (_other_tree, "inclusion"),
    "other-key": (lambda b, o: _other_key(b), "checkpoint"),
    "other-document": (lambda b, o: _other_document(b), "entry"),
    "version-2": (lambda b, o: _version_2(b), "format"),
}


def bad_files(good: bytes, other: bytes) -> dict[str, tuple[bytes, str]]:
    """Each bad bundle's bytes and the step that must fail; ``truncated`` included."""
    out = {"truncated": (good[: len(good) // 2], "format")}
    for name, (breaks, step) in BAD.items():
        bundle = copy.deepcopy(json.loads(good))
        breaks(bundle, json.loads(other))
        out[name] = (json.dumps(bundle).encode(), step)
    return out
