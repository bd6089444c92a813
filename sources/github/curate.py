"""GitHub curation: a stored file -> the fields of its ``sourceDocument``."""

from __future__ import annotations

from sources.base import Curated, CurationInput
from sources.github.entry import GithubEntry, GithubFile, file_doc_id, web_file_url
from sources.github.entry_kinds import MEDIA_TYPES, curated_fields, stored_non_file
from warehouse.canonical import git_blob_sha1
from warehouse.errors import SourceError


def find_file(
    document_id: str, entries: list[GithubEntry], commit: str | None
) -> tuple[GithubEntry, GithubFile]:
    """The manifest entry and file of a doc_id; with several pins, the one at ``commit``."""
    found = [
        (entry, file)
        for entry in entries
        for file in entry.files
        if file_doc_id(entry.repo, file.path) == document_id
    ]
    if not found:
        raise SourceError(f"{document_id} is not declared in any [[github]] entry")
    at_commit = [pair for pair in found if pair[0].commit == commit]
    return (at_commit or found)[-1]


def curate(doc: CurationInput, entries: list[GithubEntry]) -> Curated:
    """A ``sourceDocument``: where the file is, its bytes' digests, its text, its metadata;
    for a symlink, submodule or Git LFS pointer, what it is instead of a text."""
    commit = doc.provenance.get("commit")
    entry, file = find_file(doc.doc_id, entries, commit)
    commit = commit or entry.commit
    fields: dict[str, object] = {
        "repo": entry.repo,
        "path": file.path,
        "commit": commit,
        "url": web_file_url(entry.repo, commit, file.path),
        "rawUrl": doc.provenance.get("url"),
        "format": file.format,
        "sha256": doc.content_hash,
        "gitBlobSha1": git_blob_sha1(doc.body),
        "size": len(doc.body),
        "kind": file.kind,
        "license": file.license,
        "lifecycleStatus": file.lifecycle,
        "authorityRank": file.authority_rank,
        "authorityDomains": list(file.authority_domains),
        "versionScope": list(file.version_scope),
    }
    non_file = (
        stored_non_file(file.path, doc.body, doc.media_type)
        if doc.media_type in MEDIA_TYPES.values()
        else None
    )
    if non_file is not None:
        # Not the file: say what the entry is; no text, and no digest or size of a file.
        for key in ("gitBlobSha1", "size"):
            del fields[key]
        fields.update(curated_fields(non_file))
    elif file.is_text:
        fields["text"] = doc.body.decode("utf-8")
    return Curated(type="sourceDocument", fields={k: v for k, v in fields.items() if v is not None})
