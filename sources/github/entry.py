"""GitHub: the ``[[github]]`` manifest entry, and the identities and URLs of its files.

A ``[[github]]`` entry names a ``repo`` (``owner/name``), a ``commit`` (exactly 40 hex digits:
a branch or tag moves, so it is refused), optionally the ``ref`` (branch or tag) whose history
holds it, and its ``files``, each with its curation metadata.
Each file is stored under the doc_id ``github/<owner>/<repo>/<path>``.
"""

from __future__ import annotations

import posixpath
import re
from typing import Literal
from urllib.parse import quote

from pydantic import Field, StrictInt, field_validator, model_validator

from sources.base import StrictModel
from sources.http import checked_base_url
from warehouse.ids import doc_id

SOURCE_NAME = "github"
DEFAULT_MAX_BYTES = 20 * 1024 * 1024
WEB_URL = "https://github.com"

Lifecycle = Literal["published", "historical", "unreleased", "draft"]
Format = Literal["markdown", "text", "json", "yaml", "toml", "csv", "html", "xml", "pdf", "binary"]

# Declared format → (media type of the stored snapshot, whether the bytes must be UTF-8 text).
FORMATS: dict[str, tuple[str, bool]] = {
    "markdown": ("text/markdown", True),
    "text": ("text/plain", True),
    "json": ("application/json", True),
    "yaml": ("application/yaml", True),
    "toml": ("application/toml", True),
    "csv": ("text/csv", True),
    "html": ("text/html", True),
    "xml": ("application/xml", True),
    "pdf": ("application/pdf", False),
    "binary": ("application/octet-stream", False),
}

_SHA1_HEX = re.compile(r"^[0-9a-fA-F]{40}\Z")
_SHORT_HEX = re.compile(r"^[0-9a-fA-F]{4,39}\Z")
_SHA256_HEX = re.compile(r"^[0-9a-f]{64}\Z")
_REPO = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}\Z")


# -- manifest ------------------------------------------------------------------------------
def path_problem(path: str) -> str | None:
    """Why ``path`` is not a safe, normalised repository path, or None when it is."""
    if not path:
        return "is empty"
    if "\\" in path:
        return "contains a backslash; use '/' between folders"
    if path.startswith("/"):
        return "is absolute; give it relative to the repository root"
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in path):
        return "contains whitespace or a control character"
    segments = path.split("/")
    if ".." in segments:
        return "contains '..'"
    if posixpath.normpath(path) != path or "." in segments or "" in segments:
        return f"is not normalised (write {posixpath.normpath(path)!r})"
    return None


def commit_problem(commit: str) -> str | None:
    """Why ``commit`` is not a pinned commit SHA, or None when it is."""
    if _SHA1_HEX.match(commit):
        return None
    how = "run `receipts pin MANIFEST --ref <branch or tag>` to write the commit it points to"
    if _SHORT_HEX.match(commit):
        return f"{commit!r} is an abbreviated SHA; pin the full 40-hex commit: {how}"
    return (
        f"{commit!r} is not a commit SHA (exactly 40 hex digits); a branch or tag name moves, "
        f"so it is refused: {how}"
    )


class GithubFile(StrictModel):
    """One pinned file and its curation metadata."""

    path: str
    sha256: str | None = None
    kind: str = Field(min_length=1)
    format: Format
    license: str | None = None
    lifecycle: Lifecycle
    authority_rank: StrictInt | None = Field(default=None, ge=0, le=100)
    authority_domains: list[str] = Field(default_factory=list)
    version_scope: list[str] = Field(default_factory=list)

    @field_validator("path")
    @classmethod
    def _safe_path(cls, value: str) -> str:
        problem = path_problem(value)
        if problem:
            raise ValueError(f"path {value!r} {problem}")
        return value

    @field_validator("sha256")
    @classmethod
    def _hex_digest(cls, value: str | None) -> str | None:
        if value is not None and not _SHA256_HEX.match(value):
            raise ValueError("sha256 must be 64 lowercase hex digits")
        return value

    @property
    def media_type(self) -> str:
        return FORMATS[self.format][0]

    @property
    def is_text(self) -> bool:
        return FORMATS[self.format][1]


class GithubEntry(StrictModel):
    """A ``[[github]]`` entry: files of one repository at one pinned commit."""

    repo: str
    commit: str
    files: list[GithubFile] = Field(min_length=1)
    # The branch or tag whose history holds the pin (default: the repository's default
    # branch): a commit only a fork holds is refused (see sources.github.reach).
    ref: str | None = Field(default=None, min_length=1, max_length=255)
    raw_url: str | None = None
    api_url: str | None = None
    max_bytes: StrictInt = Field(default=DEFAULT_MAX_BYTES, ge=1, le=100 * 1024 * 1024)

    _base_url = field_validator("raw_url", "api_url")(checked_base_url)

    @field_validator("repo")
    @classmethod
    def _owner_and_name(cls, value: str) -> str:
        if not _REPO.match(value) or value.split("/")[1] in (".", ".."):
            raise ValueError(f"repo {value!r} must be 'owner/name', e.g. 'octocat/hello-world'")
        return value

    @field_validator("ref")
    @classmethod
    def _ref_name(cls, value: str | None) -> str | None:
        if value is not None and (
            any(ch.isspace() or ord(ch) < 32 for ch in value) or ".." in value
        ):
            raise ValueError(f"ref {value!r} is not a branch or tag name")
        return value

    @field_validator("commit")
    @classmethod
    def _pinned(cls, value: str) -> str:
        problem = commit_problem(value)
        if problem:
            raise ValueError(problem)
        return value.lower()

    @model_validator(mode="after")
    def _paths_unique(self) -> GithubEntry:
        seen: set[str] = set()
        for file in self.files:
            if file.path in seen:
                raise ValueError(f"path {file.path!r} is listed twice")
            seen.add(file.path)
        return self

    @property
    def owner(self) -> str:
        return self.repo.split("/")[0]

    @property
    def name(self) -> str:
        return self.repo.split("/")[1]


# -- identities and URLs (pure) ------------------------------------------------------------
def file_doc_id(repo: str, path: str) -> str:
    owner, name = repo.split("/")
    return doc_id(SOURCE_NAME, owner, name, path)


def raw_file_url(raw_base: str, repo: str, commit: str, path: str) -> str:
    """The raw URL of ``path`` at ``commit``."""
    return f"{raw_base}/{repo}/{commit}/{quote(path, safe='/')}"


def web_file_url(repo: str, commit: str, path: str) -> str:
    """The github.com page of ``path`` at ``commit``: a citation that never moves."""
    return f"{WEB_URL}/{repo}/blob/{commit}/{quote(path, safe='/')}"


def identity(document_id: str) -> tuple[str, str]:
    """``github/<owner>/<repo>/<path>`` → (``file``, ``<owner>/<repo>/<path>``)."""
    return "file", document_id.split("/", 1)[1]
