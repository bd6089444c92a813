"""[[github]] manifest entries: pinned commits only, safe normalised paths, strict metadata."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from pipelines.manifest import load_manifest, parse_manifest
from sources.github.entry import GithubEntry, commit_problem, path_problem
from tests.conftest import REPO, cli, write_manifest
from warehouse.errors import ManifestError

SHA = "fcccee58a96987867381a5a5fca7cb12dc3bb632"
CORPUS = '[corpus]\nname = "atlas"\nnamespace = "atlas"\n'


def github(commit: str = SHA, path: str = "docs/a.md", extra: str = "") -> str:
    return (
        CORPUS
        + f'[[github]]\nrepo = "octo/hyphae"\ncommit = "{commit}"\n'
        + f'[[github.files]]\npath = "{path}"\nkind = "spec"\nformat = "markdown"\n'
        + f'lifecycle = "published"\n{extra}'
    )


VALID = {
    "minimal": github(),
    "upper-case sha": github(commit=SHA.upper()),
    "full metadata": github(
        extra='sha256 = "' + "a" * 64 + '"\nlicense = "Apache-2.0"\nauthority_rank = 100\n'
        'authority_domains = ["api"]\nversion_scope = ["3.0.0"]\n'
    ),
    "nested path with dots in names": github(path="docs/release/receipts/3.0.0.md"),
    "dotfile": github(path=".github/workflows/ci.yml"),
}

INVALID = {
    "branch name": (github(commit="main"), "'main' is not a commit SHA", "receipts pin"),
    "tag name": (github(commit="v3.0.0"), "a branch or tag name moves", "receipts pin"),
    "short sha": (github(commit="fcccee5"), "abbreviated SHA", "receipts pin"),
    "41 hex": (github(commit=SHA + "0"), "not a commit SHA", "exactly 40 hex"),
    "absolute path": (github(path="/etc/passwd"), "files.0.path", "is absolute"),
    "dot-dot": (github(path="docs/../../secret"), "files.0.path", "contains '..'"),
    "backslash": (github(path="docs\\\\a.md"), "files.0.path", "backslash"),
    "dot segment": (github(path="./docs/a.md"), "not normalised", "'docs/a.md'"),
    "double slash": (github(path="docs//a.md"), "not normalised", "'docs/a.md'"),
    "trailing slash": (github(path="docs/"), "not normalised", "'docs'"),
    "whitespace": (github(path="docs/a b.md"), "files.0.path", "whitespace"),
    "empty path": (github(path=""), "files.0.path", "is empty"),
    "lifecycle": (
        github().replace('"published"', '"live"'),
        "files.0.lifecycle",
        "'published', 'historical', 'unreleased' or 'draft'",
    ),
    "format": (github().replace('"markdown"', '"docx"'), "files.0.format", "'markdown'"),
    "rank above 100": (github(extra="authority_rank = 101\n"), "authority_rank", "100"),
    "sha256 not hex": (github(extra='sha256 = "abc"\n'), "files.0.sha256", "64 lowercase hex"),
    "camelCase key": (
        github(extra="authorityRank = 5\n"),
        "field 'files.0.authorityRank': unknown field",
        "authority_rank",
    ),
    "repo without owner": (github().replace("octo/hyphae", "hyphae"), "'owner/name'", "repo"),
    "raw_url a file": (
        github().replace("[[github.files]]", 'raw_url = "file:///etc"\n[[github.files]]'),
        "field 'raw_url'",
        "'file:///etc' is not an http(s) URL",
    ),
    "raw_url not a url": (
        github().replace("[[github.files]]", 'raw_url = "not a url"\n[[github.files]]'),
        "field 'raw_url'",
        "contains whitespace",
    ),
    "api_url with user info": (
        github().replace(
            "[[github.files]]", 'api_url = "https://api.github.com@evil.example"\n[[github.files]]'
        ),
        "field 'api_url'",
        "its host is 'evil.example'",
    ),
    "rank as text": (
        github(extra='authority_rank = "50"\n'),
        "field 'files.0.authority_rank'",
        "Input should be a valid integer",
    ),
    "rank as a boolean": (
        github(extra="authority_rank = true\n"),
        "field 'files.0.authority_rank'",
        "Input should be a valid integer",
    ),
    "control character in kind": (
        github().replace('kind = "spec"', 'kind = "sp\\u001b]0;x\\u0007ec"'),
        "field 'files.0.kind'",
        "contains a control character (U+001B)",
    ),
    "no files": (
        CORPUS + f'[[github]]\nrepo = "octo/hyphae"\ncommit = "{SHA}"\nfiles = []\n',
        "field 'files'",
        "at least 1",
    ),
    "same path twice": (
        github() + '[[github.files]]\npath = "docs/a.md"\nkind = "k"\nformat = "text"\n'
        'lifecycle = "draft"\n',
        "listed twice",
        "docs/a.md",
    ),
}


@pytest.mark.parametrize("text", VALID.values(), ids=VALID.keys())
def test_valid_github_entries(text: str) -> None:
    manifest = parse_manifest(text, Path("m.toml"))
    [entry] = manifest.entries["github"]
    assert entry.commit == SHA


@pytest.mark.parametrize(("text", "where", "why"), INVALID.values(), ids=INVALID.keys())
def test_invalid_github_entries_are_refused_with_the_reason(
    text: str, where: str, why: str
) -> None:
    with pytest.raises(ManifestError) as caught:
        parse_manifest(text, Path("m.toml"))
    message = str(caught.value)
    assert message.startswith("m.toml: [[github]] entry 1 (")
    assert where in message and why in message


@pytest.mark.parametrize(
    ("path", "ok"),
    [
        ("a.md", True),
        ("a/b/c.json", True),
        ("..", False),
        ("a/..", False),
        ("a/.", False),
        ("a\\b", False),
        ("/a", False),
        ("a/", False),
        ("a\tb", False),
        ("a\x00b", False),
        ("...", True),
    ],
)
def test_path_problem(path: str, ok: bool) -> None:
    assert (path_problem(path) is None) is ok


def test_unpinned_manifest_is_refused_by_ingest_with_how_to_pin(tmp_path: Path) -> None:
    manifest = write_manifest(tmp_path, github(commit="main"))
    result = cli("ingest", manifest, "--warehouse", tmp_path / "w.duckdb")
    assert result.exit_code == 2
    assert "'main' is not a commit SHA" in result.stderr
    assert "receipts pin MANIFEST --ref <branch or tag>" in result.stderr
    assert not (tmp_path / "w.duckdb").exists()


def test_hyphae_atlas_manifest_declares_the_pinned_corpus() -> None:
    path = REPO / "manifests" / "hyphae-atlas.toml"
    manifest = load_manifest(path)
    [entry] = manifest.entries["github"]
    assert isinstance(entry, GithubEntry)
    assert entry.repo == "Hyphae-Research-Foundation/hyphae"
    assert entry.commit == SHA
    assert len(entry.files) == 20
    assert {f.lifecycle for f in entry.files} == {"published", "historical", "unreleased"}
    claims = next(f for f in entry.files if f.path == "docs/product/claims.md")
    assert (claims.kind, claims.authority_rank, claims.authority_domains) == (
        "claims-authority",
        100,
        ["claim"],
    )
    # The manifest is plain TOML a reviewer can read: snake_case keys, no camelCase.
    raw = tomllib.loads(path.read_text())
    assert "authorityRank" not in str(raw)


def test_manifest_check_counts_github_entries(tmp_path: Path) -> None:
    result = cli("manifest", "check", write_manifest(tmp_path, github()), "--json")
    assert result.exit_code == 0, result.output
    assert '"github": 1' in result.output


def test_the_docs_example_entry_is_valid() -> None:
    section = (REPO / "docs" / "sources" / "github.md").read_text()
    example = section.split("```toml\n", 1)[1].split("```", 1)[0]
    manifest = parse_manifest(CORPUS + example, Path("docs/sources/github.md"))
    assert manifest.entries["github"][0].files[0].path == "docs/product/claims.md"


@pytest.mark.parametrize("command", [["pin"], ["drift"], ["verify"]])
def test_github_commands_have_help_and_appear_in_the_docs(command: list[str]) -> None:
    result = cli(*command, "--help")
    assert result.exit_code == 0
    assert len(result.stdout.splitlines()) > 5
    page = (REPO / "docs" / "sources" / "github.md").read_text()
    assert f"`receipts {command[0]} " in page
    if command == ["verify"]:
        assert "--upstream [MANIFEST]" in result.stdout and "--upstream [MANIFEST]" in page


def test_a_commit_with_a_line_end_is_no_pinned_commit() -> None:
    sha = "0123456789abcdef0123456789abcdef01234567"
    assert commit_problem(sha) is None
    assert commit_problem(sha + "\n") is not None  # ``$`` would have matched before it
