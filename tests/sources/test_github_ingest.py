"""Ingesting pinned GitHub files through the CLI, against the fake GitHub: verbatim bytes,
digests, fail-closed integrity checks, zero-request refresh, re-pinning, and the token."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fakes.github import (
    API,
    HTML_ERROR_PAGE,
    RAW,
    FakeGitHub,
    blob_sha1,
    manifest_toml,
    no_network,
    serve,
)
from pipelines.manifest import load_manifest
from sources.base import CurationInput
from sources.github.commit_tree import parse_tree, tree_problem, tree_unchecked
from sources.github.entry import GithubEntry, raw_file_url
from sources.github.source import SOURCE
from tests.conftest import REPO, cli, write_manifest
from warehouse import history
from warehouse.canonical import content_hash
from warehouse.ids import is_valid_sanity_id, sanity_id
from warehouse.store import Warehouse

REPO_NAME = "octo/hyphae"
DOC = "github/octo/hyphae"
# `git hash-object` of these bytes is bd9dbf5aae1a3862dd1526723246b20206e5fc37.
UP = b"what is up, doc?"
FILES = {
    "README.md": b"# Hyphae\r\n\nCaf\xc3\xa9 notes.\n",
    "docs/up.txt": UP,
    "img/logo.bin": bytes(range(256)),
}
FORMATS = {"README.md": "markdown", "docs/up.txt": "text", "img/logo.bin": "binary"}


def ingest(manifest: Path, warehouse: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    result = cli("ingest", manifest, "--warehouse", warehouse, "--json", env=env)
    payload: dict[str, Any] = json.loads(result.stdout)
    payload["exit_code"] = result.exit_code
    return payload


def history_json(doc_id: str, warehouse: Path) -> list[dict[str, Any]]:
    result = cli("history", doc_id, "--warehouse", warehouse, "--json")
    assert result.exit_code == 0, result.output
    revisions: list[dict[str, Any]] = json.loads(result.stdout)["revisions"]
    return revisions


def test_files_are_stored_verbatim_with_their_digests(
    github: FakeGitHub, tmp_path: Path, warehouse_path: Path
) -> None:
    sha = github.push(REPO_NAME, FILES)
    manifest = write_manifest(tmp_path, manifest_toml(REPO_NAME, sha, FORMATS))

    run = ingest(manifest, warehouse_path)

    assert run["exit_code"] == 0, run
    assert run["counts"]["github"]["new"] == 3
    for path, body in FILES.items():
        shown = cli("show", f"{DOC}/{path}", "--warehouse", warehouse_path)
        assert shown.stdout_bytes == body
    [revision] = history_json(f"{DOC}/docs/up.txt", warehouse_path)
    assert revision["content_hash"] == content_hash(UP)
    assert revision["attributes"] == {
        "format": "text",
        "git_blob_sha1": "bd9dbf5aae1a3862dd1526723246b20206e5fc37",
    }
    assert revision["provenance"]["url"] == f"{RAW}/{REPO_NAME}/{sha}/docs/up.txt"
    assert revision["provenance"]["commit"] == sha
    assert revision["provenance"]["source_format"] == "github:raw"
    assert [seen["commit"] for seen in revision["seen_at"]] == [sha]


def test_a_declared_digest_that_does_not_match_fails_the_entry_closed(
    github: FakeGitHub, tmp_path: Path, warehouse_path: Path
) -> None:
    sha = github.push(REPO_NAME, FILES)
    wrong = content_hash(b"what the manifest author expected")
    files = {
        **FORMATS,
        "docs/up.txt": {"format": "text", "sha256": wrong},
        "README.md": {"format": "markdown", "sha256": content_hash(FILES["README.md"])},
    }
    manifest = write_manifest(tmp_path, manifest_toml(REPO_NAME, sha, files))

    run = ingest(manifest, warehouse_path)

    assert run["exit_code"] == 1
    [failure] = run["failures"]
    assert "1 of 3 files refused" in failure["reason"]
    assert (
        f"docs/up.txt: sha256 {content_hash(UP)} does not match the declared {wrong}"
        in (failure["reason"])
    )
    missing = cli("history", f"{DOC}/docs/up.txt", "--warehouse", warehouse_path)
    assert missing.exit_code == 1 and "no document" in missing.stderr
    assert history_json(f"{DOC}/README.md", warehouse_path)[0]["content_hash"] == content_hash(
        FILES["README.md"]
    )


def test_text_formats_refuse_bytes_that_are_not_utf8(
    github: FakeGitHub, tmp_path: Path, warehouse_path: Path
) -> None:
    latin1 = "Café".encode("latin-1")
    sha = github.push(REPO_NAME, {"notes.md": latin1, "notes.bin": latin1})
    files = {"notes.md": "markdown", "notes.bin": "binary"}
    manifest = write_manifest(tmp_path, manifest_toml(REPO_NAME, sha, files))

    run = ingest(manifest, warehouse_path)

    assert run["exit_code"] == 1
    reason = run["failures"][0]["reason"]
    assert "notes.md: declared format 'markdown' but the bytes are not strict UTF-8 (byte 3)" in (
        reason
    )
    assert history_json(f"{DOC}/notes.bin", warehouse_path)[0]["content_hash"] == content_hash(
        latin1
    )
    assert cli("history", f"{DOC}/notes.md", "--warehouse", warehouse_path).exit_code == 1


def test_bodies_over_the_size_cap_are_refused(
    github: FakeGitHub, tmp_path: Path, warehouse_path: Path
) -> None:
    sha = github.push(REPO_NAME, {"small.txt": b"x" * 100, "big.txt": b"x" * 101})
    text = manifest_toml(
        REPO_NAME, sha, {"small.txt": "text", "big.txt": "text"}, entry="max_bytes = 100\n"
    )
    run = ingest(write_manifest(tmp_path, text), warehouse_path)

    assert run["exit_code"] == 1
    assert (
        "big.txt: github: body of 101 bytes exceeds the cap of 100 bytes"
        in (run["failures"][0]["reason"])
    )
    assert run["counts"]["github"]["new"] == 1


def test_a_path_missing_at_the_commit_is_refused(
    github: FakeGitHub, tmp_path: Path, warehouse_path: Path
) -> None:
    sha = github.push(REPO_NAME, {"a.md": b"a"})
    text = manifest_toml(REPO_NAME, sha, {"a.md": "markdown", "gone.md": "markdown"})
    run = ingest(write_manifest(tmp_path, text), warehouse_path)
    assert run["exit_code"] == 1
    assert f"gone.md: not found at commit {sha}" in run["failures"][0]["reason"]


def test_refresh_of_a_stored_pin_makes_no_request(
    github: FakeGitHub, tmp_path: Path, warehouse_path: Path
) -> None:
    sha = github.push(REPO_NAME, FILES)
    files: dict[str, Any] = {
        **FORMATS,
        "README.md": {"format": "markdown", "sha256": content_hash(FILES["README.md"])},
    }
    manifest = write_manifest(tmp_path, manifest_toml(REPO_NAME, sha, files))
    assert ingest(manifest, warehouse_path)["exit_code"] == 0

    with no_network():
        again = ingest(manifest, warehouse_path)

    assert again["exit_code"] == 0, again["failures"]
    assert again["http_requests"] == 0
    assert again["counts"]["github"] == {
        "new": 0,
        "changed": 0,
        "unchanged": 3,
        "gone": 0,
        "restored": 0,
        "failed": 0,
    }


def tree_requests(github: FakeGitHub) -> list[str]:
    return [str(r.url) for r in github.api_requests if "/git/trees/" in r.url.path]


def test_an_html_error_page_served_as_the_file_is_refused_and_fetched_again(
    github: FakeGitHub, tmp_path: Path, warehouse_path: Path
) -> None:
    sha = github.push(REPO_NAME, FILES)
    manifest = write_manifest(tmp_path, manifest_toml(REPO_NAME, sha, FORMATS))
    github.html_page("docs/up.txt")  # the raw host answers 200 with an error page, once

    run = ingest(manifest, warehouse_path)

    assert run["exit_code"] == 1
    (failure,) = run["failures"]
    expected, actual = blob_sha1(UP), blob_sha1(HTML_ERROR_PAGE)
    assert (
        f"docs/up.txt: git blob SHA-1 {actual} ({len(HTML_ERROR_PAGE)} bytes) does not match "
        f"{expected} ({len(UP)} bytes) in the tree of commit {sha}"
    ) in failure["reason"]
    assert run["counts"]["github"]["new"] == 2  # the other files are stored
    with Warehouse.open(str(warehouse_path), read_only=True) as wh:
        stored = {r.doc_id for r in history.revisions(wh, current=True)}
    assert f"{DOC}/docs/up.txt" not in stored
    assert tree_requests(github) == [f"{API}/repos/{REPO_NAME}/git/trees/{sha}?recursive=1"]

    # Not stored, so the next run asks for it again (and only for it), and stores the file.
    before = len(github.requests)
    again = ingest(manifest, warehouse_path)
    assert again["exit_code"] == 0, again["failures"]
    assert [r.url.path for r in github.requests[before:]] == [
        f"/repos/{REPO_NAME}",  # its default branch, and whether the pin is in its history
        f"/repos/{REPO_NAME}/compare/main...{sha}",
        f"/{REPO_NAME}/{sha}/docs/up.txt",
        f"/repos/{REPO_NAME}/git/trees/{sha}",
    ]
    assert cli("show", f"{DOC}/docs/up.txt", "--warehouse", warehouse_path).stdout_bytes == UP

    with no_network():
        assert ingest(manifest, warehouse_path)["http_requests"] == 0


def test_files_are_checked_against_one_tree_per_commit(
    github: FakeGitHub, tmp_path: Path, warehouse_path: Path
) -> None:
    sha = github.push(REPO_NAME, FILES)
    manifest = write_manifest(tmp_path, manifest_toml(REPO_NAME, sha, FORMATS))
    run = ingest(manifest, warehouse_path)
    assert run["exit_code"] == 0 and run["warnings"] == []
    assert len(tree_requests(github)) == 1
    assert len(github.raw_requests) == len(FILES)


@pytest.mark.parametrize(
    ("limit_trees", "message"),
    [
        (False, "GitHub rate limit (HTTP 403)"),
        (True, "the tree of commit {sha} is truncated and does not list docs/up.txt"),
    ],
    ids=["rate-limited", "truncated"],
)
def test_without_the_commits_tree_files_are_stored_unchecked_with_a_warning(
    github: FakeGitHub, tmp_path: Path, warehouse_path: Path, limit_trees: bool, message: str
) -> None:
    sha = github.push(REPO_NAME, FILES)
    manifest = write_manifest(tmp_path, manifest_toml(REPO_NAME, sha, FORMATS))
    if limit_trees:
        github.tree_limit = 2  # README.md and docs/ only
    else:
        # far past RECEIPTS_GITHUB_MAX_RATE_WAIT
        github.secondary_limit(retry_after=3600, where="/git/trees/")

    run = ingest(manifest, warehouse_path)

    assert run["exit_code"] == 0, run["failures"]
    assert run["counts"]["github"]["new"] == len(FILES)
    warnings = [w["warning"] for w in run["warnings"]]
    assert any(message.format(sha=sha) in w for w in warnings), warnings
    # Rate-limited: one warning for the commit; truncated: one per file the tree does not list.
    assert len(warnings) == (2 if limit_trees else 1), warnings
    assert all("receipts verify --upstream" in w for w in warnings)
    assert len(tree_requests(github)) == 1
    (run_row, *_) = json.loads(cli("runs", "--warehouse", warehouse_path, "--json").stdout)
    assert [w["warning"] for w in run_row["warnings"]] == warnings


def test_a_path_the_commits_tree_does_not_list_is_refused_unless_the_tree_is_cut_short() -> None:
    url = raw_file_url(RAW, REPO_NAME, "c" * 40, "new.md")
    tree = parse_tree(
        {"tree": [{"path": "old.md", "type": "blob", "sha": blob_sha1(b"x"), "size": 1}]},
        "https://api.test/tree",
    )
    problem = tree_problem(tree, "new.md", "c" * 40, url, b"<html></html>")
    assert problem is not None and "new.md: not in the tree of commit" in problem
    assert tree_problem(tree, "old.md", "c" * 40, url, b"x") is None
    cut = parse_tree({"tree": [], "truncated": True}, "https://api.test/tree")
    assert tree_problem(cut, "new.md", "c" * 40, url, b"x") is None
    assert "truncated" in str(tree_unchecked(cut, "new.md", "c" * 40))


def test_a_declared_digest_the_stored_bytes_do_not_match_is_checked_upstream(
    github: FakeGitHub, tmp_path: Path, warehouse_path: Path
) -> None:
    sha = github.push(REPO_NAME, FILES)
    manifest = write_manifest(tmp_path, manifest_toml(REPO_NAME, sha, FORMATS))
    assert ingest(manifest, warehouse_path)["exit_code"] == 0
    before = len(github.raw_requests)
    files: dict[str, Any] = {**FORMATS, "docs/up.txt": {"format": "text", "sha256": "0" * 64}}
    write_manifest(tmp_path, manifest_toml(REPO_NAME, sha, files))

    run = ingest(manifest, warehouse_path)

    assert run["exit_code"] == 1
    assert "docs/up.txt: sha256" in run["failures"][0]["reason"]
    assert [r.url.path for r in github.raw_requests[before:]] == [f"/{REPO_NAME}/{sha}/docs/up.txt"]


def test_repinning_keeps_one_revision_for_identical_bytes_and_shows_every_commit(
    github: FakeGitHub, tmp_path: Path, warehouse_path: Path
) -> None:
    first = github.push(REPO_NAME, FILES)
    second = github.push(REPO_NAME, {"docs/up.txt": b"what is up, doc? (revised)"})
    manifest = write_manifest(tmp_path, manifest_toml(REPO_NAME, first, FORMATS))
    assert ingest(manifest, warehouse_path)["exit_code"] == 0

    write_manifest(tmp_path, manifest_toml(REPO_NAME, second, FORMATS))
    run = ingest(manifest, warehouse_path)

    assert run["exit_code"] == 0
    assert (run["counts"]["github"]["changed"], run["counts"]["github"]["unchanged"]) == (1, 2)
    [readme] = history_json(f"{DOC}/README.md", warehouse_path)
    assert [seen["commit"] for seen in readme["seen_at"]] == [first, second]
    assert [seen["url"] for seen in readme["seen_at"]] == [
        raw_file_url(RAW, REPO_NAME, first, "README.md"),
        raw_file_url(RAW, REPO_NAME, second, "README.md"),
    ]
    changed = history_json(f"{DOC}/docs/up.txt", warehouse_path)
    assert [(r["revision"], r["provenance"]["commit"]) for r in changed] == [
        (1, first),
        (2, second),
    ]
    text = cli("history", f"{DOC}/README.md", "--warehouse", warehouse_path).stdout
    seen = text.split("\nseen\n", 1)[1]  # where the bytes were seen: at both commits
    assert first in seen and second in seen


def test_the_token_is_sent_but_never_recorded(tmp_path: Path, warehouse_path: Path) -> None:
    token = "test-only-github-token-0123456789"
    with serve(FakeGitHub(token=token)) as github:
        sha = github.push(REPO_NAME, FILES)
        manifest = write_manifest(tmp_path, manifest_toml(REPO_NAME, sha, FORMATS))
        record = tmp_path / "session"
        result = cli(
            "ingest",
            manifest,
            "--warehouse",
            warehouse_path,
            "--record",
            record,
            env={"GITHUB_TOKEN": token},
        )
    assert result.exit_code == 0, result.output
    assert {r.headers["authorization"] for r in github.requests} == {f"Bearer {token}"}
    # three files, one tree, the repository's default branch and one comparison
    assert github.remaining(authenticated=True) == 5_000 - 3 - 1 - 2
    assert token not in result.output
    recorded = "".join(p.read_text() for p in record.rglob("*.json"))
    assert recorded and token not in recorded
    dumped = json.dumps([history_json(f"{DOC}/{p}", warehouse_path) for p in FILES])
    runs = cli("runs", "--warehouse", warehouse_path, "--json").stdout
    assert token not in dumped + runs


def test_the_token_never_goes_to_a_base_url_only_a_manifest_names(
    tmp_path: Path, warehouse_path: Path
) -> None:
    mirror = "https://mirror.example.org"
    with serve(FakeGitHub(raw_base=mirror, token="ghp_secret")) as github:
        sha = github.push(REPO_NAME, {"a.md": b"a"})
        text = manifest_toml(REPO_NAME, sha, {"a.md": "markdown"}, entry=f'raw_url = "{mirror}"\n')
        run = ingest(
            write_manifest(tmp_path, text), warehouse_path, env={"GITHUB_TOKEN": "ghp_secret"}
        )
    assert run["exit_code"] == 0, run
    [request] = github.raw_requests
    assert str(request.url).startswith(mirror) and "authorization" not in request.headers


def test_the_environment_base_url_wins_and_receives_the_token(
    tmp_path: Path, warehouse_path: Path
) -> None:
    mirror = "https://raw.mirror.test"
    with serve(FakeGitHub(raw_base=mirror, token="ghp_secret")) as github:
        sha = github.push(REPO_NAME, {"a.md": b"a"})
        text = manifest_toml(
            REPO_NAME, sha, {"a.md": "markdown"}, entry='raw_url = "https://elsewhere.test"\n'
        )
        env = {"GITHUB_TOKEN": "ghp_secret", "RECEIPTS_GITHUB_RAW_URL": mirror}
        run = ingest(write_manifest(tmp_path, text), warehouse_path, env=env)
    assert run["exit_code"] == 0, run
    [request] = github.raw_requests
    assert request.headers["authorization"] == "Bearer ghp_secret"


# -- identity and curation -----------------------------------------------------------------
def entry_with(files: dict[str, Any]) -> GithubEntry:
    return GithubEntry.model_validate(
        {
            "repo": REPO_NAME,
            "commit": "a" * 40,
            "files": [{"path": p, **f} for p, f in files.items()],
        }
    )


def curation_input(doc_id: str, body: bytes, commit: str) -> CurationInput:
    return CurationInput(
        doc_id=doc_id,
        kind="file",
        revision=1,
        content_hash=content_hash(body),
        media_type="text/markdown",
        body=body,
        scope=f"github:{REPO_NAME}",
        provenance={"url": f"{RAW}/{REPO_NAME}/{commit}/x", "commit": commit},
        attributes=None,
        sanity_id_of=lambda d: d,
    )


def test_identity_gives_a_file_key_and_a_valid_sanity_id() -> None:
    doc_id = f"{DOC}/docs/release/receipts/3.0.0.md"
    kind, key = SOURCE.identity(doc_id)
    assert (kind, key) == ("file", "octo/hyphae/docs/release/receipts/3.0.0.md")
    assert is_valid_sanity_id(sanity_id("hyphaeAtlas", kind, key))


def test_curate_makes_a_source_document_with_text_digests_and_metadata() -> None:
    assert SOURCE.curate is not None
    entry = entry_with(
        {
            "docs/claims.md": {
                "kind": "claims-authority",
                "format": "markdown",
                "license": "CC-BY-SA-4.0",
                "lifecycle": "published",
                "authority_rank": 100,
                "authority_domains": ["claim"],
                "version_scope": ["current"],
            },
            "logo.bin": {"kind": "asset", "format": "binary", "lifecycle": "draft"},
        }
    )
    curated = SOURCE.curate(curation_input(f"{DOC}/docs/claims.md", UP, "a" * 40), [entry])
    assert curated.type == "sourceDocument"
    assert curated.fields == {
        "repo": REPO_NAME,
        "path": "docs/claims.md",
        "commit": "a" * 40,
        "url": f"https://github.com/{REPO_NAME}/blob/{'a' * 40}/docs/claims.md",
        "rawUrl": f"{RAW}/{REPO_NAME}/{'a' * 40}/x",
        "format": "markdown",
        "text": UP.decode(),
        "sha256": content_hash(UP),
        "gitBlobSha1": "bd9dbf5aae1a3862dd1526723246b20206e5fc37",
        "size": len(UP),
        "kind": "claims-authority",
        "license": "CC-BY-SA-4.0",
        "lifecycleStatus": "published",
        "authorityRank": 100,
        "authorityDomains": ["claim"],
        "versionScope": ["current"],
    }
    binary = SOURCE.curate(curation_input(f"{DOC}/logo.bin", b"\xff\x00", "a" * 40), [entry])
    assert "text" not in binary.fields and binary.fields["lifecycleStatus"] == "draft"


def test_the_hyphae_atlas_corpus_ingests_and_curates(tmp_path: Path, warehouse_path: Path) -> None:
    path = REPO / "manifests" / "hyphae-atlas.toml"
    [entry] = load_manifest(path).entries["github"]
    bodies = {f.path: f"{f.kind} at {f.path}\n".encode() for f in entry.files}
    with serve(FakeGitHub()) as github:
        github.push(entry.repo, bodies, sha=entry.commit)
        run = ingest(path, warehouse_path)
    assert run["exit_code"] == 0, run["failures"]
    assert run["counts"]["github"]["new"] == 20

    assert SOURCE.curate is not None
    ids = set()
    with Warehouse.open(str(warehouse_path), read_only=True) as wh:
        for file in entry.files:
            doc_id = f"github/{entry.repo}/{file.path}"
            snap = history.snapshot(wh, doc_id)
            [revision] = history.history(wh, doc_id)
            doc = CurationInput(
                doc_id=doc_id,
                kind="file",
                revision=snap.revision,
                content_hash=snap.content_hash,
                media_type=snap.media_type,
                body=snap.body,
                scope=revision["scope"],
                provenance=revision["provenance"],
                attributes=revision["attributes"],
                sanity_id_of=lambda d: d,
            )
            curated = SOURCE.curate(doc, [entry])
            assert curated.fields["text"] == bodies[file.path].decode()
            assert curated.fields["gitBlobSha1"] == revision["attributes"]["git_blob_sha1"]
            assert curated.fields["lifecycleStatus"] == file.lifecycle
            ids.add(sanity_id("hyphaeAtlas", *SOURCE.identity(doc_id)))
    assert len(ids) == 20 and all(is_valid_sanity_id(i) for i in ids)
