"""What the Content Lake refuses, and how a request stays inside it. Pure.

- **Request body**: a mutate request over 4,000,000 bytes (SI units, "1 MB is 1,000,000
  bytes") is refused with "Request body exceeds limit of 4000000 bytes"
  (https://www.sanity.io/docs/content-lake/technical-limits ;
  https://www.sanity.io/answers/migration-api-mutation-error-request-body-exceeds-limit-of-4000000-bytes).
  :data:`MAX_REQUEST_BYTES` is measured on the bytes sent: the compact UTF-8 JSON of
  ``{"mutations": [...], "transactionId": "..."}`` (``sources.http`` sends ``orjson.dumps``).
- **Read-back URLs**: the doc endpoint takes the ids in its path. Sanity's client checks
  existence in batches of 100 ids (sanity-io/client src/data/dataMethods.ts
  ``_documentsExists``) and switches queries to POST at 11,264 characters
  (``getQuerySizeLimit``); the Studio chunks id lists "to stay within the limit of ~11kB per
  chunk" because, with long ids, the limit "enforced by the backend" is reached before 100
  (sanity-io/sanity commit d64aefd). :func:`id_chunks` keeps every read-back URL under
  :data:`MAX_URL_CHARS` and at most 100 ids.
- **A transaction id already used**: it "must be unique in the dataset"
  (https://www.sanity.io/docs/http-mutations); Sanity answers a second use with an error
  saying the transaction already exists. :func:`transaction_id_taken` recognises the answer
  (by its words, the only stable part known) so the push reads back instead of failing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import quote

import httpx

MAX_REQUEST_BYTES = 4_000_000
MAX_URL_CHARS = 11_264
MAX_IDS_PER_READ = 100

# "The transaction ID "x" is already in use", "transaction x already exists", "… has already
# been used"; never a document id that happens to hold the word ("ns.transaction.1").
_TAKEN_RE = re.compile(
    r"(?<![.\w-])transaction\b[^.]*?\b(already exists|already (been )?used|already in use)",
    re.IGNORECASE,
)


def id_chunks(
    ids: Sequence[str], base_url: str, max_url: int = MAX_URL_CHARS
) -> Iterator[list[str]]:
    """``ids`` in consecutive chunks of at most :data:`MAX_IDS_PER_READ` whose URL
    ``<base_url>/<id>,<id>,…`` (ids percent-encoded as they are sent) stays within
    ``max_url`` characters. An id too long to fit even alone travels alone."""
    chunk: list[str] = []
    length = len(base_url) + 1
    for doc_id in ids:
        size = len(quote(doc_id, safe="")) + (1 if chunk else 0)
        if chunk and (length + size > max_url or len(chunk) >= MAX_IDS_PER_READ):
            yield chunk
            chunk, length = [], len(base_url) + 1
            size -= 1
        chunk.append(doc_id)
        length += size
    if chunk:
        yield chunk


def transaction_id_taken(response: httpx.Response) -> bool:
    """True when a refused mutate request says its transaction id is already used (in the
    error's description or an item's; never for a document that already exists)."""
    try:
        body = response.json()
    except ValueError:
        return False
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return False
    texts = [str(error.get("description") or "")]
    raw_items = error.get("items")
    items: list[Any] = raw_items if isinstance(raw_items, list) else []
    for item in items:
        inner = item.get("error") if isinstance(item, dict) else None
        if isinstance(inner, dict):
            if inner.get("type") == "documentAlreadyExistsError":
                return False
            texts.append(str(inner.get("description") or ""))
    return any(_TAKEN_RE.search(text) for text in texts)
