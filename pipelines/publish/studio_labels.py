"""What an editor reads in the Studio: field titles, descriptions and list previews.

``studio`` infers each field's type from the curated documents; this module holds what
inference cannot know: a title a person would write ("ODI number", not "Odi number"), a
one-line description where the name alone is not enough, which fields are paragraphs
(Sanity's ``text``, a multi-line input, whatever the length of the values seen so far), and
a ``preview`` per document kind.

Sanity's list preview has a title and a subtitle; without a ``preview`` the Studio guesses
from a field named ``title`` (and shows nothing when there is none), and a ``prepare``
function may combine the selected values [DOC https://www.sanity.io/docs/previews-list-views].
A ``select`` path may go through a reference (``article.title``) and index an array
(``modelYears.0``): the Studio splits it on dots [SRC sanity-io/sanity
src/core/preview/utils/getPreviewPaths.ts].

Entries are keyed by the *source's* kind of document (``nhtsa``, ``github``,
``forem/article``, ``forem/comment``: the head of ``provenance.docId``) and the source's field
names, so a manifest's renames (``[publish.types]``, ``[publish.fields.<type>]``) keep them.
Pure data and lookups.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

# (title, description or None); "" as description means none.
Label = tuple[str, str]

_COMMON: dict[str, Label] = {
    "authorityDomains": (
        "Authority domains",
        "The topics the corpus treats this document as an authority on (from its manifest).",
    ),
    "authorityRank": (
        "Authority rank",
        "Higher wins when sources disagree on a topic (from the corpus manifest).",
    ),
    "license": ("License", ""),
    "provenance": (
        "Provenance",
        "Where and when the pipeline captured the upstream bytes this document was built from.",
    ),
}

_PROVENANCE: dict[str, Label] = {
    "docId": ("Warehouse document ID", "The id of the upstream record in the receipts warehouse."),
    "revision": ("Revision", "The warehouse revision this document was built from."),
    "contentHash": ("Content SHA-256", "SHA-256 of the upstream bytes of that revision."),
    "sourceUrl": ("Source URL", "Where the upstream bytes were fetched."),
    "sourceCommit": ("Source commit", "The Git commit the bytes were read at."),
    "capturedAt": ("Captured at", "When the bytes of this revision were first captured."),
    "firstSeenRun": ("First seen in run", ""),
    "lastVerifiedRun": ("Captured in run", "The run that captured this revision's bytes."),
    "logIndex": ("Log entry", "This revision's entry in the warehouse's transparency log."),
    "logTreeSize": (
        "Log checkpoint size",
        "The checkpoint to ask for the entry's inclusion proof against (receipts log prove).",
    ),
    "logOrigin": (
        "Log origin",
        "The transparency log's name, where its tiles and checkpoints are published.",
    ),
    "ownedFields": ("Fields the pipeline owns", "Edits to these are reported as target drift."),
    "curatedHash": ("Curated SHA-256", "SHA-256 of everything the pipeline owns in the document."),
}

_BY_SOURCE: dict[str, dict[str, Label]] = {
    "nhtsa": {
        "recordType": (
            "Record type",
            "recall, complaint, investigation or communication (a manufacturer's bulletin).",
        ),
        "campaignNumber": ("Recall campaign number", "NHTSA's number for the recall."),
        "odiNumber": ("ODI number", "NHTSA Office of Defects Investigation complaint number."),
        "actionNumber": ("Investigation number", "PE, EA, DP, RQ or AQ, then the number."),
        "nhtsaId": ("NHTSA ID", "NHTSA's id of the manufacturer communication."),
        "manufacturerCommunicationNumber": (
            "Bulletin number",
            "The manufacturer's own number for the communication.",
        ),
        "manufacturer": ("Manufacturer", ""),
        "make": ("Make", ""),
        "model": ("Model", ""),
        "modelYears": ("Model years", ""),
        "components": ("Components", "NHTSA's component names, as filed."),
        "subject": ("Subject", ""),
        "summary": ("Summary", ""),
        "consequence": ("Consequence", "What the defect can lead to."),
        "remedy": ("Remedy", ""),
        "notes": ("Notes", ""),
        "potentialUnitsAffected": ("Potential units affected", ""),
        "parkIt": ("Park it", "NHTSA advises owners not to drive the vehicle."),
        "parkOutSide": ("Park outside", "NHTSA advises parking outside, away from buildings."),
        "overTheAirUpdate": ("Over-the-air remedy", "The remedy is an over-the-air update."),
        "reportReceivedDate": ("Report received", "When NHTSA received the recall report."),
        "dateOfIncident": ("Date of incident", ""),
        "dateFiled": ("Date filed", ""),
        "crash": ("Crash", ""),
        "fire": ("Fire", ""),
        "injuries": ("Injuries", ""),
        "deaths": ("Deaths", ""),
        "investigationType": ("Investigation type", ""),
        "status": ("Status", "open or closed"),
        "dateOpened": ("Opened", ""),
        "dateClosed": ("Closed", ""),
        "recalls": ("Recalls", "Campaign numbers of the recalls the investigation led to."),
        "communicationDate": ("Communication date", "The date on the manufacturer's document."),
        "dateReceived": ("Received by NHTSA", ""),
        "pdfUrls": ("Documents (PDF)", "NHTSA's copies of the associated documents."),
        "sourceFormat": ("Source format", "The NHTSA API answer or flat file it was read from."),
    },
    "github": {
        "repo": ("Repository", ""),
        "path": ("Path", "The file's path in the repository."),
        "commit": ("Commit", "The commit the file was read at (pinned in the manifest)."),
        "url": ("File on GitHub", ""),
        "rawUrl": ("Raw file URL", ""),
        "format": ("Format", ""),
        "gitBlobSha1": ("Git blob SHA-1", "Git's object id of the file's bytes."),
        "sha256": ("SHA-256", "SHA-256 of the file's bytes."),
        "size": ("Size (bytes)", ""),
        "kind": ("Kind", "What the file is to the corpus (from the manifest)."),
        "lifecycleStatus": ("Lifecycle status", ""),
        "versionScope": ("Version scope", "The versions the file speaks for."),
        "text": ("Text", "The file's text as it was at the commit."),
    },
    "forem/article": {
        "articleId": ("Article ID", "dev.to's numeric id of the article."),
        "title": ("Title", ""),
        "description": ("Description", ""),
        "url": ("URL", ""),
        "canonicalUrl": ("Canonical URL", ""),
        "authorUsername": ("Author", "The author's dev.to username."),
        "publishedAt": ("Published", ""),
        "editedAt": ("Edited", ""),
        "tags": ("Tags", ""),
        "bodyHtml": ("Body (HTML)", "As dev.to renders it."),
        "bodyMarkdown": ("Body (Markdown)", "As the author wrote it."),
    },
    "forem/comment": {
        "idCode": ("Comment ID", "dev.to's id code of the comment."),
        "article": ("Article", "The article the comment is on."),
        "parent": ("Reply to", "The comment this one answers."),
        "depth": ("Depth", "0 for a top-level comment."),
        "authorUsername": ("Author", "The commenter's dev.to username."),
        "createdAt": ("Posted", ""),
        "bodyHtml": ("Body (HTML)", "As dev.to renders it."),
        "state": ("State", "present, deleted or hidden on dev.to."),
    },
}

# Paragraphs: a multi-line ``text`` input even when every value seen so far is short.
_PARAGRAPHS: dict[str, frozenset[str]] = {
    "nhtsa": frozenset({"summary", "consequence", "remedy", "notes"}),
    "github": frozenset({"text"}),
    "forem/article": frozenset({"description", "bodyHtml", "bodyMarkdown"}),
    "forem/comment": frozenset({"bodyHtml"}),
}

# -- previews -------------------------------------------------------------------------------
# Each prepare() returns a non-blank title: the warehouse document id when nothing else is set.
_HELPERS = """const plain = (value: unknown, max = 80): string => {
      const text = String(value ?? '')
        .replace(/<[^>]*>/g, ' ')
        .replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"')
        .replace(/&#39;/g, "'").replace(/&amp;/g, '&')
        .replace(/\\s+/g, ' ')
        .trim()
      return text.length > max ? text.slice(0, max - 1).trimEnd() + '…' : text
    }
    const join = (parts: unknown[], sep: string): string =>
      parts.filter((part) => part !== undefined && part !== null && part !== '').join(sep)"""


@dataclass(frozen=True)
class Preview:
    """A ``preview``: ``select`` (name → source field path) and the body of ``prepare``."""

    select: dict[str, str]
    body: str


_PREVIEWS: dict[str, Preview] = {
    "nhtsa": Preview(
        {
            "recordType": "recordType",
            "campaignNumber": "campaignNumber",
            "odiNumber": "odiNumber",
            "actionNumber": "actionNumber",
            "bulletin": "manufacturerCommunicationNumber",
            "nhtsaId": "nhtsaId",
            "subject": "subject",
            "summary": "summary",
            "make": "make",
            "model": "model",
            "firstYear": "modelYears.0",
            "reported": "reportReceivedDate",
            "filed": "dateFiled",
            "opened": "dateOpened",
            "dated": "communicationDate",
        },
        """const kinds: Record<string, string> = {
      recall: 'Recall', complaint: 'Complaint', investigation: 'Investigation',
      communication: 'Bulletin',
    }
    const kind = kinds[String(v.recordType)] ?? plain(v.recordType)
    const number = v.campaignNumber ?? v.odiNumber ?? v.actionNumber ?? v.bulletin ?? v.nhtsaId
    const head = join([kind, number], ' ')
    return {
      title: join([head, plain(v.subject ?? v.summary, 70)], ': ') || plain(v.docId),
      subtitle: join(
        [join([v.make, v.model], ' '), v.reported ?? v.filed ?? v.opened ?? v.dated],
        ' · ',
      ),
    }""",
    ),
    "github": Preview(
        {"path": "path", "repo": "repo", "commit": "commit", "kind": "kind"},
        """const commit = v.commit ? String(v.commit).slice(0, 12) : undefined
    return {
      title: plain(v.path, 120) || plain(v.docId),
      subtitle: join([join([v.repo, commit], ' @ '), v.kind], ' · '),
    }""",
    ),
    "forem/article": Preview(
        {"title": "title", "author": "authorUsername", "publishedAt": "publishedAt"},
        """return {
      title: plain(v.title, 120) || plain(v.docId),
      subtitle: join(
        [v.author ? '@' + v.author : '', String(v.publishedAt ?? '').slice(0, 10)],
        ' · ',
      ),
    }""",
    ),
    "forem/comment": Preview(
        {
            "body": "bodyHtml",
            "state": "state",
            "author": "authorUsername",
            "createdAt": "createdAt",
            "article": "article.title",
        },
        """const body = plain(v.body)
    const state = v.state && v.state !== 'present' ? '(' + v.state + ')' : ''
    return {
      title: join([state, body], ' ') || plain(v.docId),
      subtitle: join(
        [v.author ? '@' + v.author : '', v.article ? 'on ' + plain(v.article, 60) : ''],
        ' ',
      ),
    }""",
    ),
}

_FALLBACK = Preview({}, "return {title: plain(v.docId)}")


def source_key(doc_id: str) -> str:
    """The kind of upstream document a curated one comes from, by its warehouse id."""
    head, _, rest = doc_id.partition("/")
    if head == "forem":
        return f"forem/{rest.partition('/')[0]}"
    return head


def label(source: str | None, field: str, *, nested_in: str | None = None) -> Label | None:
    """The curated (title, description) of a source field, or None."""
    if nested_in == "provenance":
        return _PROVENANCE.get(field)
    if nested_in is not None:
        return None
    return _BY_SOURCE.get(source or "", {}).get(field) or _COMMON.get(field)


def is_paragraph(source: str | None, field: str) -> bool:
    return field in _PARAGRAPHS.get(source or "", frozenset())


def preview(source: str | None, final_name: Mapping[str, str], fields: set[str]) -> Preview:
    """The preview of a type, its paths renamed to the type's field names
    (``final_name``: source field → field) and kept only where the field exists."""
    spec = _PREVIEWS.get(source or "", _FALLBACK)
    select: dict[str, str] = {}
    for key, path in spec.select.items():
        head, dot, tail = path.partition(".")
        head = final_name.get(head, head)
        if head in fields:
            select[key] = head + dot + tail
    select["docId"] = "provenance.docId"
    return Preview(select, spec.body)


def prepare_source(spec: Preview) -> str:
    """The TypeScript ``prepare`` method of a preview."""
    return f"prepare(v: Record<string, any>) {{\n    {_HELPERS}\n    {spec.body}\n  }}"
