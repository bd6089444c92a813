"""GitHub records: a file's bytes checked against what the manifest declares, and the
stored record (the bytes verbatim, their git blob SHA-1 beside them)."""

from __future__ import annotations

from sources.github.entry import GithubEntry, GithubFile, file_doc_id
from sources.github.entry_kinds import LFS_POINTER, SUBMODULE, NonFile
from warehouse.canonical import content_hash, git_blob_sha1
from warehouse.clock import now
from warehouse.errors import FileRefused
from warehouse.records import Provenance, Record

SOURCE_FORMAT = "github:raw"
# What a submodule is comes from the commit's tree alone (the raw host has no file for it).
TREE_SOURCE_FORMAT = "github:tree"


def check_file_bytes(file: GithubFile, body: bytes, where: str) -> None:
    """Refuse bytes that do not match the declared digest, or are not strict UTF-8 text."""
    if file.sha256 is not None:
        actual = content_hash(body)
        if actual != file.sha256:
            raise FileRefused(
                f"{file.path}: sha256 {actual} does not match the declared {file.sha256} "
                f"({where}); nothing was stored"
            )
    if file.is_text:
        try:
            body.decode("utf-8", errors="strict")
        except UnicodeDecodeError as exc:
            raise FileRefused(
                f"{file.path}: declared format {file.format!r} but the bytes are not strict "
                f'UTF-8 (byte {exc.start}); declare format = "binary" if that is intended'
            ) from None


def file_record(entry: GithubEntry, file: GithubFile, url: str, body: bytes) -> Record:
    return Record(
        doc_id=file_doc_id(entry.repo, file.path),
        kind="file",
        body=body,
        media_type=file.media_type,
        provenance=Provenance(
            url=url, commit=entry.commit, source_format=SOURCE_FORMAT, fetched_at=now()
        ),
        attributes={"git_blob_sha1": git_blob_sha1(body), "format": file.format},
    )


def non_file_record(
    entry: GithubEntry, file: GithubFile, url: str, record: NonFile, git_bytes: bytes | None
) -> Record:
    """A tree entry that is not the file, stored as what it is (``record.body``, its media
    type); ``git_bytes`` are the bytes git holds for it (a symlink's target, an LFS pointer),
    whose blob SHA-1 is kept beside it as for a file."""
    attributes: dict[str, object] = {"format": file.format, "entry_kind": record.kind}
    if git_bytes is not None:
        attributes["git_blob_sha1"] = git_blob_sha1(git_bytes)
    if record.kind == LFS_POINTER:
        attributes["lfs"] = dict(record.fields)
    if record.kind == SUBMODULE:
        attributes["submodule_commit"] = dict(record.fields)["commit"]
    source_format = TREE_SOURCE_FORMAT if record.kind == SUBMODULE else SOURCE_FORMAT
    return Record(
        doc_id=file_doc_id(entry.repo, file.path),
        kind="file",
        body=record.body,
        canonical_form=record.canonical_form,
        media_type=record.media_type,
        provenance=Provenance(
            url=url, commit=entry.commit, source_format=source_format, fetched_at=now()
        ),
        attributes=attributes,
    )
