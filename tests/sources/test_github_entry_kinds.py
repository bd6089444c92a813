"""Tree entries that are not a file's content, through the CLI against the GitHub fake.

GitHub's git trees API lists a symlink as a ``blob`` with mode ``120000`` (its blob holds
the target path, which the raw host serves as text) and a submodule as mode ``160000``,
``type: commit``, whose ``sha`` is the submodule's commit (github/rest-api-description,
"Create a tree"; docs.github.com/rest/git/trees); the raw host has no file for a submodule.
A Git LFS file is held in git as a pointer: ``version https://git-lfs.github.com/spec/v1``,
``oid sha256:<hex>``, ``size <n>`` (github.com/git-lfs/git-lfs/blob/main/docs/spec.md). None
is the file, so each is stored as what it is, said in the run, and published without text.
The raw host serves files as ``text/plain`` (GitHub blog 2013-04-24, nosniff): a
``text/html`` answer that the commit's tree cannot check is refused.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from fakes.github import (
    HTML_ERROR_PAGE,
    RAW,
    Executable,
    FakeGitHub,
    Submodule,
    Symlink,
    blob_sha1,
    lfs_pointer,
    manifest_toml,
    no_network,
)
from sources.github.entry_kinds import lfs_pointer as lfs_pointer_of
from tests.conftest import cli, write_manifest
from warehouse import history
from warehouse.store import Warehouse

REPO_NAME = "octo/hyphae"
DOC = "github/octo/hyphae"
SUB_COMMIT = "5f3c0a7d9e1b2c4d6f8a0b1c3d5e7f9a1b2c3d4e"
MODEL = b"\x00weights" * 64
TREE = {
    "docs/guide.md": b"# Guide\n\nThe real text.\n",
    "README.md": Symlink("docs/guide.md"),
    "vendor/lib": Submodule(SUB_COMMIT),
    "model.bin": lfs_pointer(MODEL),
    "bin/run.sh": Executable(b"#!/bin/sh\necho run\n"),  # mode 100755: a file
}
FORMATS = {
    "docs/guide.md": "markdown",
    "README.md": "markdown",
    "vendor/lib": "text",
    "model.bin": "binary",
    "bin/run.sh": "text",
}


def ingest(manifest: Path, warehouse: Path) -> dict[str, Any]:
    result = cli("ingest", manifest, "--warehouse", warehouse, "--json")
    payload: dict[str, Any] = json.loads(result.stdout)
    payload["exit_code"] = result.exit_code
    return payload


def revision(doc_id: str, warehouse: Path) -> dict[str, Any]:
    result = cli("history", doc_id, "--warehouse", warehouse, "--json")
    assert result.exit_code == 0, result.output
    current: dict[str, Any] = json.loads(result.stdout)["revisions"][-1]
    return current


def media_type(doc_id: str, warehouse: Path) -> str:
    with Warehouse.open(str(warehouse), read_only=True) as wh:
        return history.snapshot(wh, doc_id).media_type


def shown(doc_id: str, warehouse: Path) -> Any:
    return json.loads(cli("show", doc_id, "--warehouse", warehouse).stdout_bytes)


def test_symlinks_submodules_and_lfs_pointers_are_stored_as_what_they_are(
    github: FakeGitHub, tmp_path: Path, warehouse_path: Path
) -> None:
    sha = github.push(REPO_NAME, TREE)
    manifest = write_manifest(tmp_path, manifest_toml(REPO_NAME, sha, FORMATS))

    run = ingest(manifest, warehouse_path)

    assert run["exit_code"] == 0, run["failures"]
    assert run["counts"]["github"]["new"] == 5
    warnings = [w["warning"] for w in run["warnings"]]
    oid = hashlib.sha256(MODEL).hexdigest()
    for expected in (
        f"README.md: at commit {sha} of {REPO_NAME} this is a symlink to 'docs/guide.md', "
        "not a file's content",
        f"vendor/lib: at commit {sha} of {REPO_NAME} this is a submodule at commit {SUB_COMMIT}",
        f"model.bin: at commit {sha} of {REPO_NAME} this is a Git LFS pointer to object "
        f"sha256:{oid} ({len(MODEL)} bytes)",
    ):
        assert any(expected in w for w in warnings), (expected, warnings)
    assert len(warnings) == 3, warnings

    assert shown(f"{DOC}/README.md", warehouse_path) == {
        "kind": "symlink",
        "path": "README.md",
        "target": "docs/guide.md",
    }
    link = revision(f"{DOC}/README.md", warehouse_path)
    assert (
        media_type(f"{DOC}/README.md", warehouse_path)
        == "application/vnd.receipts.git-symlink+json"
    )
    assert link["attributes"]["entry_kind"] == "symlink"
    assert link["attributes"]["git_blob_sha1"] == blob_sha1(b"docs/guide.md")

    assert shown(f"{DOC}/vendor/lib", warehouse_path) == {
        "kind": "submodule",
        "path": "vendor/lib",
        "commit": SUB_COMMIT,
    }
    sub = revision(f"{DOC}/vendor/lib", warehouse_path)
    assert (
        media_type(f"{DOC}/vendor/lib", warehouse_path)
        == "application/vnd.receipts.git-submodule+json"
    )
    assert sub["provenance"]["source_format"] == "github:tree"

    assert shown(f"{DOC}/model.bin", warehouse_path) == {
        "kind": "lfs-pointer",
        "path": "model.bin",
        "oid": f"sha256:{oid}",
        "size": len(MODEL),
    }
    lfs = revision(f"{DOC}/model.bin", warehouse_path)
    assert (
        media_type(f"{DOC}/model.bin", warehouse_path)
        == "application/vnd.receipts.git-lfs-pointer+json"
    )
    assert lfs["attributes"]["git_blob_sha1"] == blob_sha1(lfs_pointer(MODEL))

    guide = cli("show", f"{DOC}/docs/guide.md", "--warehouse", warehouse_path)
    assert guide.stdout_bytes == TREE["docs/guide.md"]  # a real file stays a file
    script = cli("show", f"{DOC}/bin/run.sh", "--warehouse", warehouse_path)
    assert script.stdout_bytes == b"#!/bin/sh\necho run\n"

    # A refresh of the stored pin asks nothing, and says again what the entries are.
    with no_network():
        again = ingest(manifest, warehouse_path)
    assert again["exit_code"] == 0 and again["http_requests"] == 0
    assert [w["warning"] for w in again["warnings"]] == warnings
    assert again["counts"]["github"].get("new", 0) == 0


def test_publishing_never_presents_a_non_file_entry_as_the_files_text(
    github: FakeGitHub, tmp_path: Path, warehouse_path: Path
) -> None:
    sha = github.push(REPO_NAME, TREE)
    manifest = write_manifest(tmp_path, manifest_toml(REPO_NAME, sha, FORMATS))
    assert ingest(manifest, warehouse_path)["exit_code"] == 0
    out = tmp_path / "corpus.ndjson"

    published = cli("publish", manifest, "--warehouse", warehouse_path, "--out", out)

    assert published.exit_code == 0, published.output
    docs = {
        d["path"]: d
        for d in map(json.loads, out.read_text().splitlines())
        if d.get("_type") == "sourceDocument"
    }
    assert docs["docs/guide.md"]["text"] == TREE["docs/guide.md"].decode()
    link, sub, lfs = docs["README.md"], docs["vendor/lib"], docs["model.bin"]
    assert "text" not in link and "text" not in sub and "text" not in lfs
    assert (link["entryKind"], link["linkTarget"]) == ("symlink", "docs/guide.md")
    assert (sub["entryKind"], sub["submoduleCommit"]) == ("submodule", SUB_COMMIT)
    oid = hashlib.sha256(MODEL).hexdigest()
    assert (lfs["entryKind"], lfs["lfsOid"], lfs["lfsSize"]) == (
        "lfs-pointer",
        f"sha256:{oid}",
        len(MODEL),
    )
    assert "gitBlobSha1" not in link and "size" not in lfs


def test_a_declared_digest_holds_for_an_lfs_object_and_for_no_other_non_file(
    github: FakeGitHub, tmp_path: Path, warehouse_path: Path
) -> None:
    sha = github.push(REPO_NAME, TREE)
    digest = hashlib.sha256(MODEL).hexdigest()  # the object's, as the LFS oid says
    files: dict[str, Any] = {
        "model.bin": {"format": "binary", "sha256": digest},
        "README.md": {"format": "markdown", "sha256": hashlib.sha256(b"# Guide").hexdigest()},
    }
    run = ingest(write_manifest(tmp_path, manifest_toml(REPO_NAME, sha, files)), warehouse_path)
    assert run["exit_code"] == 1
    (failure,) = run["failures"]
    assert "1 of 2 files refused" in failure["reason"]
    assert "README.md: declared sha256" in failure["reason"]
    assert "is a symlink to 'docs/guide.md'; nothing was stored" in failure["reason"]
    assert revision(f"{DOC}/model.bin", warehouse_path)["attributes"]["entry_kind"] == (
        "lfs-pointer"
    )


def test_a_text_html_answer_the_tree_cannot_check_is_refused(
    github: FakeGitHub, tmp_path: Path, warehouse_path: Path
) -> None:
    files = {"docs/guide.md": b"# Guide\n", "notes.txt": b"plain notes\n"}
    sha = github.push(REPO_NAME, files)
    manifest = write_manifest(
        tmp_path, manifest_toml(REPO_NAME, sha, {"docs/guide.md": "markdown", "notes.txt": "text"})
    )
    github.html_page("docs/guide.md")  # 200, text/html: a proxy's page, not the file
    github.secondary_limit(retry_after=3600, where="/git/trees/")  # the tree cannot be read

    run = ingest(manifest, warehouse_path)

    assert run["exit_code"] == 1
    (failure,) = run["failures"]
    url = f"{RAW}/{REPO_NAME}/{sha}/docs/guide.md"
    assert (
        f"docs/guide.md: {url} answered text/html ({len(HTML_ERROR_PAGE)} bytes) where the raw "
        "host serves files as text/plain"
    ) in failure["reason"]
    missing = cli("history", f"{DOC}/docs/guide.md", "--warehouse", warehouse_path)
    assert missing.exit_code == 1 and "no document" in missing.stderr
    # The text/plain file is stored as served, with the warning that it was not checked.
    assert run["counts"]["github"]["new"] == 1
    assert any("not checked against the commit's tree" in w["warning"] for w in run["warnings"])

    again = ingest(manifest, warehouse_path)  # not stored, so asked again, and now stored
    assert again["exit_code"] == 0, again["failures"]
    assert (
        cli("show", f"{DOC}/docs/guide.md", "--warehouse", warehouse_path).stdout_bytes
        == (files["docs/guide.md"])
    )


OID = "4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # The spec's own example pointer, and one with an extension key before `oid`.
        (
            f"version https://git-lfs.github.com/spec/v1\noid sha256:{OID}\nsize 12345\n",
            (f"sha256:{OID}", 12345),
        ),
        (
            "version https://git-lfs.github.com/spec/v1\next-0-foo sha256:"
            f"{'0' * 64}\noid sha256:{OID}\nsize 12345\n",
            (f"sha256:{OID}", 12345),
        ),
        # Not pointers: keys out of order, no size, no final newline, a short oid.
        (f"version https://git-lfs.github.com/spec/v1\nsize 1\noid sha256:{OID}\n", None),
        (f"version https://git-lfs.github.com/spec/v1\noid sha256:{OID}\n", None),
        (f"version https://git-lfs.github.com/spec/v1\noid sha256:{OID}\nsize 1", None),
        ("version https://git-lfs.github.com/spec/v1\noid sha256:ab\nsize 12\n", None),
    ],
    ids=["spec-example", "extension", "unsorted", "no-size", "no-newline", "short-oid"],
)
def test_lfs_pointers_are_read_as_the_spec_defines_them(
    body: str, expected: tuple[str, int] | None
) -> None:
    """https://github.com/git-lfs/git-lfs/blob/main/docs/spec.md: ``version`` first, the other
    keys in ascending order, ``oid sha256:<64 hex>`` and ``size`` required, LF line ends."""
    assert lfs_pointer_of(body.encode()) == expected


def test_upstream_verification_rebuilds_what_each_entry_is(
    github: FakeGitHub, tmp_path: Path, warehouse_path: Path
) -> None:
    """``verify --upstream`` compares like with like: the symlink and LFS pointer records
    rebuilt from the raw host's answer, the submodule's from the commit's tree."""
    sha = github.push(REPO_NAME, TREE)
    manifest = write_manifest(tmp_path, manifest_toml(REPO_NAME, sha, FORMATS))
    assert ingest(manifest, warehouse_path)["exit_code"] == 0

    result = cli("verify", "--upstream", manifest, "--warehouse", warehouse_path, "--json")

    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)["upstream"]
    assert (report["checked"], report["matched"], report["failures"]) == (5, 5, [])
