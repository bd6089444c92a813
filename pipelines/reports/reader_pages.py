"""What a person reads of a document: the upstream's own page for it, and a title and a
summary, from one stored revision (pure).

A revision's ``source_url`` is where its bytes were fetched: an API's JSON for NHTSA and
Forem, a raw file for GitHub. A report links the page a person reads instead:

- GitHub: the file's github.com page at the pinned commit (``web_file_url``, as the curated
  document's ``url`` and a proof bundle's version URL);
- Forem: an article's ``url`` field (its page on the instance); a comment's permalink,
  ``<instance>/<username>/comment/<id_code>`` (a deleted comment has no user, hence none);
- NHTSA: a recall's page, ``https://www.nhtsa.gov/recalls?nhtsaId=<campaign number>``; an
  investigation's or a manufacturer communication's first associated document (a PDF on
  static.nhtsa.gov), when the record lists one. A complaint has no page of its own on
  nhtsa.gov (only its vehicle's list), so it keeps the API URL.

Whatever has no reader page keeps its upstream URL. Only http(s) URLs are returned: a
record's ``url`` field is upstream text.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

import orjson

from sources.github.entry import web_file_url

SUMMARY_CHARS = 280
TITLE_CHARS = 120
NHTSA_RECALL_PAGE = "https://www.nhtsa.gov/recalls?nhtsaId={}"


@dataclass(frozen=True)
class ReaderView:
    """A document as a reader meets it: the page to open (None: only the upstream URL is
    known), a title and a summary (None when the bytes say none)."""

    page: str | None
    title: str | None
    summary: str | None


def _web(url: object) -> str | None:
    return url if isinstance(url, str) and url.lower().startswith(("https://", "http://")) else None


def _record(body: bytes | None) -> dict[str, Any] | None:
    if body is None:
        return None
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


_TAGS = re.compile(r"<[^>]*>")
_SPACE = re.compile(r"\s+")


def _plain(value: object, limit: int, *, markup: bool = False) -> str | None:
    """Upstream text on one line, cut at ``limit``; ``markup``: an HTML fragment, its tags
    dropped and its entities read (the text a reader sees). Anything else is kept as it
    is: the page escapes it."""
    if not isinstance(value, str):
        return None
    text = html.unescape(_TAGS.sub(" ", value)) if markup else value
    text = _SPACE.sub(" ", text).strip()
    if not text:
        return None
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _first(record: dict[str, Any], *keys: str) -> object:
    for key in keys:
        if record.get(key) not in (None, ""):
            return record[key]
    return None


def _nhtsa(kind: str, key: str, body: dict[str, Any] | None) -> ReaderView:
    """A stored NHTSA document: ``{"record": …}``, ``{"records": […]}`` (a complaint listed
    once per component), ``{"rows": […]}`` (flat-file rows) or the bare record."""
    inner: dict[str, Any] = body or {}  # else the record itself, as some stores hold it
    if body is not None:
        for name in ("record", "records", "rows"):
            value = body.get(name)
            value = value[0] if isinstance(value, list) and value else value
            if isinstance(value, dict):
                inner = value
                break
    page = NHTSA_RECALL_PAGE.format(quote(key, safe="")) if kind == "recall" else None
    if kind in ("investigation", "communication") and body is not None:
        documents = body.get("associatedDocuments") or inner.get("associatedDocuments")
        if isinstance(documents, list):
            urls = [_web(d.get("url")) for d in documents if isinstance(d, dict)]
            page = next((url for url in urls if url), None)
    lower = {str(k).lower(): v for k, v in inner.items()}
    title = _first(lower, "subject", "component", "components", "compname", "campno")
    summary = _first(lower, "summary", "complaintsummary", "cdescr", "desc_defect", "consequence")
    return ReaderView(page, _plain(title, TITLE_CHARS), _plain(summary, SUMMARY_CHARS))


def _forem(kind: str, key: str, body: dict[str, Any] | None, fetched: str | None) -> ReaderView:
    if body is None:
        return ReaderView(None, None, None)
    if kind == "article":
        page = _web(body.get("url"))
        return ReaderView(
            page,
            _plain(body.get("title"), TITLE_CHARS),
            _plain(_first(body, "description", "body_markdown"), SUMMARY_CHARS),
        )
    user = body.get("user") if isinstance(body.get("user"), dict) else {}
    username = user.get("username") if isinstance(user, dict) else None
    page = None
    site = urlsplit(fetched or "")
    if isinstance(username, str) and username and site.scheme in ("http", "https"):
        page = f"{site.scheme}://{site.netloc}/{quote(username, safe='')}/comment/{quote(key)}"
    title = f"comment by {username}" if isinstance(username, str) and username else None
    return ReaderView(page, title, _plain(body.get("body_html"), SUMMARY_CHARS, markup=True))


def _github(doc_id: str, commit: str | None, body: bytes | None, media: str) -> ReaderView:
    _, owner, name, path = doc_id.split("/", 3)
    page = web_file_url(f"{owner}/{name}", commit, path) if commit else None
    summary = None
    if body is not None and media.startswith("text/"):
        text = body.decode("utf-8", "replace")
        heading = re.search(r"^#+\s+(.+)$", text, re.MULTILINE)
        paragraphs = [p for p in re.split(r"\n\s*\n", text) if p.strip() and p.lstrip()[0] != "#"]
        title = heading.group(1) if heading else path
        summary = _plain(paragraphs[0], SUMMARY_CHARS) if paragraphs else None
        return ReaderView(page, _plain(title, TITLE_CHARS), summary)
    return ReaderView(page, _plain(path, TITLE_CHARS), None)


def reader_view(
    doc_id: str,
    source_url: str | None,
    source_commit: str | None,
    body: bytes | None = None,
    media_type: str = "",
) -> ReaderView:
    """The reader's page, title and summary of a document from one revision's provenance
    and (when given) its stored bytes; anything unknown or unreadable is None."""
    parts = doc_id.split("/")
    source, kind, key = parts[0], parts[1] if len(parts) > 1 else "", parts[-1]
    try:
        if source == "github" and len(parts) >= 4:
            view = _github(doc_id, source_commit, body, media_type)
        elif source == "nhtsa":
            view = _nhtsa(kind, key, _record(body))
        elif source == "forem":
            view = _forem(kind, key, _record(body), source_url)
        else:
            view = ReaderView(None, None, None)
    except (AttributeError, TypeError, ValueError):  # upstream bytes of an unexpected shape
        view = ReaderView(None, None, None)
    return view
