"""Pins: resolve a branch or tag to a commit SHA, and write it into a manifest.

``receipts pin`` reads the manifest with tomlkit, so the rewrite changes the ``commit`` values
(and an entry's ``ref``, when it names one) and nothing else: comments, key order, spacing and
line endings stay as they were. An entry whose ``commit`` is still a branch or tag name (which
``ingest`` refuses) can be pinned this way too. The rewritten entries are validated before the
file is replaced.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import orjson
import tomlkit
import tomlkit.exceptions
from pydantic import ValidationError

from sources.github.api import API, GithubClients
from sources.github.entry import GithubEntry
from sources.http import HttpClient
from warehouse.errors import ManifestNotPinnable, PinError

_SHA = re.compile(r"^[0-9a-f]{40}\Z")
SHA_MEDIA_TYPE = "application/vnd.github.sha"


def commit_sha_of(response: httpx.Response) -> str | None:
    """The commit SHA in a commits-API answer: the bare SHA (``vnd.github.sha``) or JSON."""
    text = response.content.strip()
    if text[:1] == b"{":
        try:
            value = orjson.loads(text).get("sha")
        except (orjson.JSONDecodeError, AttributeError):
            return None
        candidate = value if isinstance(value, str) else ""
    else:
        candidate = text.decode("ascii", errors="replace")
    candidate = candidate.strip().lower()
    return candidate if _SHA.match(candidate) else None


def _message(response: httpx.Response) -> str:
    try:
        value = orjson.loads(response.content)
    except orjson.JSONDecodeError:
        return f"HTTP {response.status_code}"
    message = value.get("message") if isinstance(value, dict) else None
    return f"HTTP {response.status_code}: {message}" if message else f"HTTP {response.status_code}"


def resolve_ref(client: HttpClient, api_base: str, repo: str, ref: str) -> str:
    """The 40-hex commit SHA that ``ref`` (a branch, tag or SHA) of ``repo`` points to."""
    url = f"{api_base}/repos/{repo}/commits/{quote(ref, safe='/')}"
    response = client.get(url, headers={"Accept": SHA_MEDIA_TYPE}, ok=(200, 404, 422))
    if response.status_code != 200:
        raise PinError(f"{repo}: no commit for ref {ref!r} ({_message(response)})")
    sha = commit_sha_of(response)
    if sha is None:
        raise PinError(f"{repo}: the commits API gave no commit SHA for ref {ref!r} ({url})")
    return sha


class RefResolver:
    """Resolves refs through the commits API, once per (API base, repo, ref)."""

    def __init__(self, clients: GithubClients) -> None:
        self.clients = clients
        self._known: dict[tuple[str, str, str], str] = {}

    def __call__(self, repo: str, ref: str, api_url: str | None = None) -> str:
        client, api_base = self.clients.get(API, api_url)
        key = (api_base, repo, ref)
        if key not in self._known:
            self._known[key] = resolve_ref(client, api_base, repo, ref)
        return self._known[key]


@dataclass(frozen=True)
class PinChange:
    """What ``pin`` did (or would do) to one ``[[github]]`` entry."""

    entry: int
    repo: str
    ref: str
    old: str | None
    new: str

    @property
    def changed(self) -> bool:
        return self.old != self.new

    def as_json(self) -> dict[str, Any]:
        return {
            "entry": self.entry,
            "repo": self.repo,
            "ref": self.ref,
            "old": self.old,
            "new": self.new,
            "changed": self.changed,
        }


def _github_tables(document: tomlkit.TOMLDocument, where: str) -> list[Any]:
    tables = document.get("github")
    if not isinstance(tables, list) or not tables:
        raise ManifestNotPinnable(f"{where}: declares no [[github]] entries to pin")
    return tables


def plan_pins(
    document: tomlkit.TOMLDocument,
    ref: str,
    resolve: Callable[[str, str, str | None], str],
    *,
    repos: Iterable[str] = (),
    where: str = "manifest",
) -> list[PinChange]:
    """The new commit of every ``[[github]]`` entry (of ``repos``, if given) at ``ref``."""
    only = set(repos)
    changes = []
    for index, table in enumerate(_github_tables(document, where)):
        repo = table.get("repo")
        if not isinstance(repo, str):
            raise ManifestNotPinnable(f"{where}: [[github]] entry {index + 1} has no 'repo'")
        if only and repo not in only:
            continue
        api_url = table.get("api_url")
        old = table.get("commit")
        new = resolve(repo, ref, str(api_url) if api_url is not None else None)
        changes.append(PinChange(index + 1, repo, ref, None if old is None else str(old), new))
    unknown = only - {c.repo for c in changes}
    if unknown:
        raise ManifestNotPinnable(f"{where}: no [[github]] entry for {', '.join(sorted(unknown))}")
    return changes


def apply_pins(document: tomlkit.TOMLDocument, changes: Iterable[PinChange]) -> None:
    """Write each change's commit into its entry, in place (comments and layout stay). An
    entry that names the ``ref`` holding its pin gets the ref it was pinned at, so ingest
    checks the new pin against the ref that holds it (see :mod:`sources.github.reach`)."""
    tables = _github_tables(document, "manifest")
    for change in changes:
        if change.changed:
            table = tables[change.entry - 1]
            table["commit"] = change.new
            if "ref" in table and table["ref"] != change.ref:
                table["ref"] = change.ref


def _validate(document: tomlkit.TOMLDocument, where: str) -> None:
    for index, table in enumerate(_github_tables(document, where)):
        try:
            GithubEntry.model_validate(table.unwrap())
        except ValidationError as exc:
            error = exc.errors()[0]
            loc = ".".join(str(part) for part in error["loc"]) or "(entry)"
            raise ManifestNotPinnable(
                f"{where}: [[github]] entry {index + 1} would still be invalid after pinning, "
                f"field '{loc}': {error['msg']}; nothing was written"
            ) from None


def _write_atomically(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.chmod(tmp, path.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def pin_manifest(
    path: Path,
    ref: str,
    resolve: Callable[[str, str, str | None], str],
    *,
    repos: Iterable[str] = (),
    dry_run: bool = False,
) -> list[PinChange]:
    """Resolve ``ref`` for every ``[[github]]`` entry and rewrite their ``commit`` in ``path``."""
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ManifestNotPinnable(f"{path}: no such manifest") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestNotPinnable(f"{path}: cannot read: {exc}") from None
    try:
        document = tomlkit.parse(text)
    except tomlkit.exceptions.ParseError as exc:
        raise ManifestNotPinnable(f"{path}: not valid TOML: {exc}") from None
    changes = plan_pins(document, ref, resolve, repos=repos, where=str(path))
    if any(c.changed for c in changes):
        apply_pins(document, changes)
        _validate(document, str(path))
        if not dry_run:
            _write_atomically(path, tomlkit.dumps(document).encode("utf-8"))
    return changes


__all__ = [
    "ManifestNotPinnable",
    "PinChange",
    "PinError",
    "RefResolver",
    "pin_manifest",
    "resolve_ref",
]
