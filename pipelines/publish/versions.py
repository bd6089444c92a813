"""Content Release versions of the corpus's documents, and what each will do to a push. Pure.

An editor's unpublished work on a document lives beside it: ``drafts.<id>`` (one draft), and
``versions.<releaseId>.<id>`` (one version per Content Release, Scheduled Draft or document
variant). When a release is published, each of its versions replaces the published
document wholesale, or, when the version is marked for unpublishing (``_system.delete``
true), deletes it. Either way what a push wrote is overwritten.

Evidence (checked 2026-12):

- Version ids ``versions.<releaseId>.<publishedId>``; the release is the document
  ``_.releases.<releaseId>`` of ``_type`` ``system.release`` with a top-level ``state``
  (``active``, ``scheduled``, ``scheduling``, ``publishing``, ``published``, ``archiving``,
  ``archived``, ``unarchiving``), ``publishAt`` ("takes precedence over the
  intendedPublishAt, the state should be 'scheduled'"), ``publishedAt``, and ``metadata``
  {``title``, ``description``, ``intendedPublishAt``, ``releaseType``
  (``asap|scheduled|undecided``), ``cardinality`` (``many|one``)} [SRC sanity-io/client
  src/types.ts ``ReleaseDocument``; DOC
  https://www.sanity.io/docs/content-lake/content-release-document-flow].
- A Scheduled Draft is a single-document release: ``metadata.cardinality`` ``one``,
  ``releaseType`` ``scheduled``, ``intendedPublishAt`` the publish time [SRC sanity-io/client
  src/releases/scheduledDraft.ts; DOC https://www.sanity.io/docs/studio/scheduled-drafts,
  Growth plan].
- A version marked to unpublish carries ``_system.delete == true`` [SRC sanity-io/sanity
  packages/sanity/src/core/releases/util/isGoingToUnpublish.ts; the
  ``sanity.action.document.version.unpublish`` action in sanity-io/client src/types.ts].
- Document variants (beta) use the same ``versions.`` prefix with scope ids the server
  makes (the ``variant`` query option, @sanity/client 7.24.0); such a scope has no release
  document we can read, so when it applies is not known.
- Versions are only returned by queries from API version 2025-02-19, with the ``raw``
  perspective [DOC https://www.sanity.io/changelog/676aaa9d-2da6-44fb-abe5-580f28047c10].
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

VERSION_PREFIX = "versions."
RELEASE_PREFIX = "_.releases."
# Release states in which its versions are still to be published.
PENDING_STATES = frozenset({"active", "scheduled", "scheduling", "publishing", "unarchiving"})


@dataclass(frozen=True)
class Version:
    """``versions.<release>.<published>`` as the target has it."""

    id: str
    release: str
    published_id: str
    rev: str | None = None
    unpublish: bool = False


@dataclass(frozen=True)
class Release:
    """``_.releases.<id>``: what the plan needs to say when its versions apply."""

    id: str
    state: str | None = None
    release_type: str | None = None
    title: str | None = None
    intended_publish_at: str | None = None
    publish_at: str | None = None
    cardinality: str | None = None


def split_version_id(document_id: str) -> tuple[str, str] | None:
    """(release id, published id) of a version id, else None."""
    if not document_id.startswith(VERSION_PREFIX):
        return None
    parts = document_id.split(".", 2)
    if len(parts) != 3 or not parts[1] or not parts[2]:
        return None
    return parts[1], parts[2]


def version_from(body: Mapping[str, Any]) -> Version | None:
    """A version from a document (or the projection ``{_id, _rev, "unpublish"}``)."""
    document_id = body.get("_id")
    split = split_version_id(document_id) if isinstance(document_id, str) else None
    if split is None:
        return None
    system = body.get("_system")
    unpublish = body.get("unpublish") is True or (
        isinstance(system, dict) and system.get("delete") is True
    )
    rev = body.get("_rev")
    return Version(
        str(document_id), split[0], split[1], rev if isinstance(rev, str) else None, unpublish
    )


def release_from(body: Mapping[str, Any]) -> Release | None:
    """A release from its ``_.releases.<id>`` document."""
    document_id = body.get("_id")
    if not isinstance(document_id, str) or not document_id.startswith(RELEASE_PREFIX):
        return None
    found = body.get("metadata")
    metadata: Mapping[str, Any] = found if isinstance(found, dict) else {}

    def text(value: Any) -> str | None:
        return value if isinstance(value, str) and value else None

    return Release(
        id=document_id[len(RELEASE_PREFIX) :],
        state=text(body.get("state")),
        release_type=text(metadata.get("releaseType")),
        title=text(metadata.get("title")),
        intended_publish_at=text(metadata.get("intendedPublishAt")),
        publish_at=text(body.get("publishAt")),
        cardinality=text(metadata.get("cardinality")),
    )


def group_versions(versions: Iterable[Version]) -> dict[str, tuple[Version, ...]]:
    """Versions by the published id they are versions of, each sorted by id."""
    out: dict[str, list[Version]] = {}
    for version in versions:
        out.setdefault(version.published_id, []).append(version)
    return {k: tuple(sorted(v, key=lambda x: x.id)) for k, v in sorted(out.items())}


@dataclass(frozen=True)
class Overlay:
    """A version that will put another copy over (or unpublish) a document: ``kind``
    ``release``, ``scheduled draft`` or ``unknown scope``; ``when`` the time it is set to
    apply (None: no time set, or not known); ``pending`` False once its release is
    published or archived."""

    id: str
    version: str
    release: str
    kind: str
    action: str  # replace | unpublish
    when: str | None
    when_text: str
    pending: bool

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "version": self.version,
            "release": self.release,
            "kind": self.kind,
            "action": self.action,
            "when": self.when,
            "when_text": self.when_text,
        }

    def sentence(self, orphan: bool = False) -> str:
        """One line for the plan; ``orphan``: said of a document a prune would delete."""
        if self.action == "unpublish":
            what = "unpublish (delete) it"
        else:
            what = "bring it back" if orphan else "put its own copy over this push"
        return (
            f"{self.id}: {self.kind} {self.release} will {what} {self.when_text} ({self.version})"
        )


def overlay(version: Version, release: Release | None) -> Overlay:
    """What ``version`` will do to its published document, and when."""
    action = "unpublish" if version.unpublish else "replace"
    if release is None:
        return Overlay(
            version.published_id,
            version.id,
            version.release,
            "unknown scope",
            action,
            None,
            "at a time not known (no release document: a document variant, or a release "
            "this token cannot read)",
            True,
        )
    kind = "scheduled draft" if release.cardinality == "one" else "release"
    title = f" {release.title!r}" if release.title and kind == "release" else ""
    pending = release.state is None or release.state in PENDING_STATES
    when = release.publish_at or (
        release.intended_publish_at if release.release_type == "scheduled" else None
    )
    if not pending:
        text = f"no more (the release is {release.state})"
    elif release.publish_at:
        text = f"at {release.publish_at} (scheduled)"
    elif release.release_type == "scheduled" and release.intended_publish_at:
        text = f"at {release.intended_publish_at} (intended; not yet scheduled)"
    elif release.release_type == "asap":
        text = "as soon as it is published (asap; no time set)"
    else:
        text = f"when it is published ({release.release_type or 'undecided'}; no time set)"
    return Overlay(
        version.published_id,
        version.id,
        version.release + title,
        kind,
        action,
        when,
        text,
        pending,
    )


def overlays_of(
    document_id: str,
    versions: Mapping[str, tuple[Version, ...]],
    releases: Mapping[str, Release],
) -> list[Overlay]:
    """The pending overlays of one published document, ordered by version id."""
    out = [overlay(v, releases.get(v.release)) for v in versions.get(document_id, ())]
    return [o for o in out if o.pending]
