"""Tree entries that are not a file's content: symlinks, submodules and Git LFS pointers.

GitHub's git trees API lists each entry with a ``mode`` and a ``type``: ``100644`` (file) and
``100755`` (executable) are ``blob``; ``040000`` is a ``tree``; ``120000`` is a ``blob`` that
holds the path of a symlink; ``160000`` is a submodule, ``type: commit``, whose ``sha`` is the
submodule's commit (GitHub's OpenAPI description, github/rest-api-description, "Create a
tree" ``mode``; https://docs.github.com/rest/git/trees). The raw host serves a symlink's
target path as text and has no file for a submodule. A file kept in Git LFS is stored in git
as a pointer: ``version https://git-lfs.github.com/spec/v1`` first, then ``key value`` lines
in key order, ``oid sha256:<64 hex>`` and ``size <bytes>`` required, each line ending in
``\\n``, under 1024 bytes (https://github.com/git-lfs/git-lfs/blob/main/docs/spec.md).

None of these is the file the manifest asks for, so each is stored as what it is: a small
canonical JSON record (``{"kind": "symlink", "path", "target"}``, ``{"kind": "submodule",
"path", "commit"}``, ``{"kind": "lfs-pointer", "path", "oid", "size"}``) under a media type
that says so, never under the file's declared format.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson

from warehouse.canonical import record_json

SYMLINK = "symlink"
SUBMODULE = "submodule"
LFS_POINTER = "lfs-pointer"

MEDIA_TYPES = {
    SYMLINK: "application/vnd.receipts.git-symlink+json",
    SUBMODULE: "application/vnd.receipts.git-submodule+json",
    LFS_POINTER: "application/vnd.receipts.git-lfs-pointer+json",
}
SYMLINK_MODE = "120000"
SUBMODULE_MODE = "160000"

LFS_VERSION = b"version https://git-lfs.github.com/spec/v1\n"
_LFS_MAX = 1024
_LFS_LINE = re.compile(rb"^([a-z0-9.-]+) ([^\r\n]*)\Z")
_LFS_OID = re.compile(r"^sha256:([0-9a-f]{64})\Z")
_SHA1 = re.compile(r"^[0-9a-f]{40}\Z")


@dataclass(frozen=True)
class NonFile:
    """A tree entry that is not a file's content, and the fields that say what it is."""

    kind: str
    path: str
    fields: tuple[tuple[str, Any], ...]

    @property
    def media_type(self) -> str:
        return MEDIA_TYPES[self.kind]

    @property
    def body(self) -> bytes:
        return self.encoded[0]

    @property
    def canonical_form(self) -> str:
        return self.encoded[1]

    @property
    def encoded(self) -> tuple[bytes, str]:
        """Its JSON record's bytes and their canonical form."""
        return record_json({"kind": self.kind, "path": self.path, **dict(self.fields)})

    def describe(self) -> str:
        values = dict(self.fields)
        if self.kind == SYMLINK:
            return f"a symlink to {values['target']!r}"
        if self.kind == SUBMODULE:
            return f"a submodule at commit {values['commit']}"
        return f"a Git LFS pointer to object {values['oid']} ({values['size']} bytes)"


def lfs_pointer(body: bytes) -> tuple[str, int] | None:
    """(``sha256:<hex>``, size) when ``body`` is a Git LFS pointer as the spec defines it."""
    if len(body) >= _LFS_MAX or not body.startswith(LFS_VERSION) or not body.endswith(b"\n"):
        return None
    keys: dict[str, str] = {}
    for line in body[len(LFS_VERSION) : -1].split(b"\n"):
        match = _LFS_LINE.match(line)
        if match is None:
            return None
        key = match.group(1).decode("ascii")
        if keys and key <= max(keys):  # keys after `version` come in ascending order, once
            return None
        keys[key] = match.group(2).decode("utf-8", errors="replace")
    oid = _LFS_OID.match(keys.get("oid", ""))
    size = keys.get("size", "")
    if oid is None or not size.isascii() or not size.isdigit():
        return None
    return keys["oid"], int(size)


def symlink(path: str, target: bytes) -> NonFile | None:
    """The symlink whose target the raw host served; None when the target is not UTF-8."""
    try:
        text = target.decode("utf-8", errors="strict")
    except UnicodeDecodeError:
        return None
    return NonFile(SYMLINK, path, (("target", text),))


def submodule(path: str, commit: str) -> NonFile:
    return NonFile(SUBMODULE, path, (("commit", commit),))


def lfs(path: str, body: bytes) -> NonFile | None:
    found = lfs_pointer(body)
    if found is None:
        return None
    return NonFile(LFS_POINTER, path, (("oid", found[0]), ("size", found[1])))


def stored_non_file(path: str, body: bytes, media_type: str | None = None) -> NonFile | None:
    """The record this module wrote for ``path``, read back from its stored bytes (a refresh
    re-uses them without a request); None for anything else (a file's bytes)."""
    if media_type is not None and media_type not in MEDIA_TYPES.values():
        return None
    if not body.startswith(b'{"'):
        return None
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(value, dict) or value.get("path") != path:
        return None
    kind = value.get("kind")
    found: NonFile | None = None
    if kind == SYMLINK and isinstance(value.get("target"), str) and len(value) == 3:
        found = NonFile(SYMLINK, path, (("target", value["target"]),))
    elif kind == SUBMODULE and _SHA1.match(str(value.get("commit"))) and len(value) == 3:
        found = submodule(path, str(value["commit"]))
    elif kind == LFS_POINTER and _LFS_OID.match(str(value.get("oid"))) and len(value) == 4:
        size = value.get("size")
        if isinstance(size, int) and not isinstance(size, bool) and size >= 0:
            found = NonFile(LFS_POINTER, path, (("oid", value["oid"]), ("size", size)))
    # Only the exact bytes this module writes: a JSON file that merely looks alike is a file.
    return found if found is not None and found.body == body else None


def curated_fields(record: NonFile) -> dict[str, Any]:
    """What a published ``sourceDocument`` says about a non-file entry (never ``text``)."""
    values = dict(record.fields)
    if record.kind == SYMLINK:
        return {"entryKind": SYMLINK, "linkTarget": values["target"]}
    if record.kind == SUBMODULE:
        return {"entryKind": SUBMODULE, "submoduleCommit": values["commit"]}
    return {"entryKind": LFS_POINTER, "lfsOid": values["oid"], "lfsSize": values["size"]}
