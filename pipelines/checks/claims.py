"""The claims check: every cited quote re-checked against the revision it cites.

A claim is ``{claim_id, doc_id, quote, revision | content_hash}``: an answer engine's
sentence citing a quote from one revision of one document. Each claim gets one status:

- ``holds``: the quote is in the cited revision and in the current one;
- ``stale``: it is in the cited revision, but the document changed since and the current
  revision no longer contains it (``at_revision`` is the revision where it stopped);
- ``misattributed``: it is not in the cited revision but in another (``found_in``);
- ``missing``: no revision contains it;
- ``gone``: it is in the cited revision, but the document was tombstoned upstream, or it
  left the corpus (a complete run of the manifest no longer yields it): what the drift
  report counts as gone;
- ``unseen``: it is in the cited revision, but the latest run that listed the document's
  scope did not find it there, in a listing that is not provably complete (a comment tree
  smaller than its article's ``comments_count``): not gone, not seen either — what the
  drift report calls unseen;
- ``unknown``: the warehouse has no such document, or no such revision or hash of it.

The text rules are those of ``receipts verify-quote`` (:mod:`pipelines.checks.quote`): the
quote and each snapshot are reduced to reader text with its public functions. A snapshot's
reader text (from bytes checked against their hash) and a quote's search strings are
computed once per version of those rules and kept in the warehouse, so a check is two bulk
statements however many claims there are, statuses included (:mod:`warehouse.claims`); the
message that explains a status is written only when a verdict is shown.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import markdown_it

from pipelines.checks import quote as quote_rules
from pipelines.checks.claims_file import BadClaim, Claim, ClaimSet
from pipelines.checks.diffing import is_json_media
from pipelines.checks.quote import (
    WORD_EDGE,
    has_markdown_syntax,
    is_markdown_media,
    is_searchable,
    reader_text,
)
from warehouse import claims as ledger
from warehouse.claims import (
    ClaimColumns,
    ClaimQuery,
    ClaimVerdicts,
    QuoteNeedles,
    ReaderTextRow,
    StatusChange,
)
from warehouse.store import Warehouse

STATUSES = ("holds", "stale", "misattributed", "missing", "gone", "unseen", "unknown")
# Bump when the way reader text is stored changes (not the rules: those are fingerprinted).
# 2: stored and searched as ``bounded`` text, word boundaries marked, so that ``contains``
# matches whole words only, as ``find_quote`` does.
# 3: words marked after their first and last character (:func:`marked`), so that a
# search never starts on a mark.
READER_TEXT_FORMAT = 3
# Reader text never contains a newline (whitespace runs become one space), so JSON string
# fields joined by one cannot produce a match that spans two fields.
FIELD_SEPARATOR = "\n"
# Characters without which the HTML reading has nothing to act on in a quote.
_MARKUP_CHARS = frozenset("<&")
# A word's first character, and the rest of it: ``\w`` is exactly
# :func:`~pipelines.checks.quote.is_word_char` (``str.isalnum`` or ``_``) for every code point
# (tests/claims/test_claims.py checks them all).
_WORD = re.compile(r"(\w)(\w*)")
# Marks after a word's first character and after its last. Neither is ever in reader text
# (both are whitespace, which reader text collapses to one space; WORD_EDGE is removed).
WORD_START = "\x1e"
WORD_END = WORD_EDGE


def marked(text: str) -> str:
    """Reader text with every word marked: :data:`WORD_START` after its first character,
    :data:`WORD_END` after its last. A plain substring search of ``marked(quote)`` in
    ``marked(text)`` is then exactly the whole-word match of ``find_quote``: a quote that
    begins with a word character matches only where a word begins (its first character is
    followed by WORD_START only there), one that ends with one only where a word ends.

    Unlike :func:`pipelines.checks.quote.bounded` (a mark *before* each word), the search
    never starts on a mark: ``contains`` looks for a needle's first character, and the
    mark is the commonest character of a marked text (measured: 8× slower)."""
    parts = _WORD.split(text)  # [other, first, rest, other, first, rest, …, other]
    parts[1::3] = [first + WORD_START for first in parts[1::3]]
    parts[2::3] = [rest + WORD_END for rest in parts[2::3]]
    return "".join(parts)


def _reader_text(text: str, *, markdown: bool = False) -> str:
    """:func:`~pipelines.checks.quote.reader_text`; without ``<`` or ``&`` there is no markup
    to strip nor a reference to decode, so the HTML parser is not run."""
    return reader_text(text, markdown=markdown, markup=not _MARKUP_CHARS.isdisjoint(text))


# -- reader text of snapshots --------------------------------------------------------------
def rules_version() -> str:
    """A fingerprint of the quote rules (their module, the Markdown parser's version and the
    Unicode version of the NFC tables): reader text stored under another one is stale."""
    source = Path(quote_rules.__file__).read_bytes()
    versions = f"\0{READER_TEXT_FORMAT}\0{markdown_it.__version__}\0{unicodedata.unidata_version}"
    return hashlib.sha256(source + versions.encode()).hexdigest()[:16]


def _json_strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _json_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _json_strings(item)


def snapshot_reader_text(content_hash: str, body: bytes, media_type: str) -> ReaderTextRow:
    """What ``find_quote`` searches in a snapshot, as one string: its reader text, or for a
    JSON record the reader text of every string value, one per line; word boundaries
    marked (:func:`marked`), as in the needles of
    :func:`claim_query`."""
    if not is_searchable(media_type):
        return ReaderTextRow(
            content_hash, False, None, f"is {media_type}, not text; its words cannot be checked"
        )
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return ReaderTextRow(content_hash, False, None, f"{media_type} content is not UTF-8")
    if is_json_media(media_type):
        try:
            value = json.loads(text)
        except ValueError:
            pass
        else:
            strings = (marked(_reader_text(s)) for s in _json_strings(value))
            return ReaderTextRow(content_hash, False, FIELD_SEPARATOR.join(strings), None)
    markdown = is_markdown_media(media_type)
    return ReaderTextRow(
        content_hash, markdown, marked(_reader_text(text, markdown=markdown)), None
    )


def fill_reader_texts(warehouse: Warehouse, doc_ids: Iterable[str], rules: str) -> int:
    """Compute and store the reader text of every snapshot of these documents that has none
    under ``rules``; how many were added."""
    added = 0
    for chunk in ledger.unread_snapshots(warehouse, sorted(set(doc_ids)), rules):
        rows = [snapshot_reader_text(s.content_hash, s.body, s.media_type) for s in chunk]
        ledger.store_reader_texts(warehouse, rules, rows)
        added += len(rows)
    return added


def claim_query(claim: Claim) -> ClaimQuery:
    """The claim with its quote as reader text, as ``find_quote`` would search for it in a
    plain and in a Markdown snapshot: read as the snapshot is (HTML markup, Markdown), and
    as literal text copied from the page (the same for both)."""
    quote = claim.quote
    markup = not _MARKUP_CHARS.isdisjoint(quote)
    needle = _reader_text(quote)
    literal = reader_text(quote, markup=False) if markup else needle
    if markup or has_markdown_syntax(quote):
        needle_md = _reader_text(quote, markdown=True)
    else:
        needle_md = needle
    literal_md = literal
    # find_quote refuses a quote with no reader text: it then matches nothing. Every needle
    # is searched as marked text, so only whole words match (as in find_quote).
    done: dict[str, str] = {}  # the four are often one string: mark it once

    def mark(text: str) -> str:
        if text not in done:
            done[text] = marked(text)
        return done[text]

    return ClaimQuery(
        claim.claim_id,
        claim.doc_id,
        claim.revision,
        claim.content_hash,
        mark(needle),
        None if literal == needle else mark(literal),
        mark(needle_md) if needle_md else None,
        None if literal_md == needle_md or not needle_md else mark(literal_md),
    )


def quote_needles(claim: Claim, quote_hash: str | None = None) -> QuoteNeedles:
    """The search strings of a claim's quote (:func:`claim_query`), as the warehouse keeps
    them for every later check."""
    q = claim_query(claim)
    return QuoteNeedles(
        quote_hash or claim.quote_hash, q.needle, q.literal, q.needle_md, q.literal_md
    )


def store_needles(
    warehouse: Warehouse, claims: Sequence[Claim], hashes: Sequence[str], rules: str
) -> int:
    """Compute and store the search strings of every quote among ``claims`` (``hashes``:
    their quote hashes) that has none under ``rules``; how many were added. A quote already
    checked under these rules is not read again."""
    missing = ledger.quotes_without_needles(warehouse, hashes, rules)
    rows: dict[str, QuoteNeedles] = {}
    for claim, quote_hash in zip(claims, hashes, strict=True):
        if quote_hash in missing and quote_hash not in rows:
            rows[quote_hash] = quote_needles(claim, quote_hash)
    ledger.store_needles(warehouse, rules, list(rows.values()))
    return len(rows)


# -- verdicts ------------------------------------------------------------------------------
class ClaimVerdict(NamedTuple):
    """One claim's status as the bulk check decided it (:class:`~warehouse.claims.
    ClaimVerdicts`): which case of its status (``reason``), and the revisions it names."""

    claim: Claim
    status: str
    reason: str | None = None
    cited_revision: int | None = None
    current_revision: int | None = None
    at_revision: int | None = None
    found_in: tuple[int, ...] = ()

    @property
    def holds(self) -> bool:
        return self.status == "holds"

    @property
    def message(self) -> str:
        """What the status means for this claim, in a sentence."""
        return _message(self)

    def as_json(self) -> dict[str, Any]:
        c = self.claim
        return {
            "claim_id": c.claim_id,
            "doc_id": c.doc_id,
            "quote": c.quote,
            "cited": {"revision": c.revision, "content_hash": c.content_hash},
            "status": self.status,
            "cited_revision": self.cited_revision,
            "current_revision": self.current_revision,
            "at_revision": self.at_revision,
            "found_in": list(self.found_in),
            "message": self.message,
        }


def _revisions_phrase(numbers: Iterable[int]) -> str:
    listed = [str(n) for n in numbers]
    noun = "revision" if len(listed) == 1 else "revisions"
    joined = listed[0] if len(listed) == 1 else ", ".join(listed[:-1]) + " and " + listed[-1]
    return f"{noun} {joined}"


# Why the cited revision of a misattributed or missing claim lacks the quote, by reason.
_LACKS = {
    "tombstone": "is a tombstone",
    "unreadable": "cannot be read as text",
    "absent": "does not contain it",
}


def _message(verdict: ClaimVerdict) -> str:
    claim, status, reason, cited, current, at, found = verdict
    doc = claim.doc_id
    if status == "holds" and cited == current:
        return f"the quote is in the cited revision {cited}, the current one of {doc}"
    if status == "holds":
        return f"the quote is in the cited revision {cited} and the current revision of {doc}"
    if status == "stale" and at != current:  # at: the revision after the last that has it
        return (
            f"the quote is in the cited revision {cited}, but {doc} changed: revision "
            f"{at} no longer contains it, nor does the current revision {current}"
        )
    if status == "stale":
        return (
            f"the quote is in the cited revision {cited}, but {doc} changed: "
            f"the current revision {current} no longer contains it"
        )
    if status == "misattributed":
        return (
            f"the quote is in {_revisions_phrase(found)} of {doc}, "
            f"but the cited revision {cited} {_LACKS[str(reason)]}"
        )
    if status == "missing":
        return (
            f"no revision of {doc} contains the quote "
            f"(the cited revision {cited} {_LACKS[str(reason)]})"
        )
    if status == "gone" and reason == "tombstoned":
        return (
            f"the quote is in the cited revision {cited}, but {doc} was tombstoned "
            f"at revision {current}"
        )
    if status == "gone":
        return f"the quote is in the cited revision {cited}, but {doc} has left the corpus"
    if status == "unseen":
        return (
            f"the quote is in the cited revision {cited}, but {doc} was missing from the "
            "latest listing of its scope (not provably complete, so not tombstoned)"
        )
    if reason == "no-document":
        return f"no document {doc} in the warehouse"
    if reason == "no-revision":
        return f"{doc} has no {claim.cites()}; it has revisions 1..{current}"
    return f"hash prefix {claim.content_hash} is ambiguous for {doc}"


# -- a check -------------------------------------------------------------------------------
@dataclass
class ClaimsCheck:
    """One check of a claim set: every verdict, the rows that could not be checked, and the
    claims whose status changed since the previous check of the same set."""

    claim_set: str
    verdicts: list[ClaimVerdict]
    bad: list[BadClaim]
    changed: list[StatusChange]
    check_id: int | None = None
    run_id: int | None = None
    # Why the check was not appended to the ledger (None: it was): ``unchanged`` (it found
    # what check ``check_id`` found), ``read-only`` (the warehouse cannot be written),
    # ``not asked`` or ``no claims``.
    not_recorded: str | None = None

    @property
    def recorded(self) -> bool:
        return self.not_recorded is None

    @property
    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(STATUSES, 0)
        for verdict in self.verdicts:
            counts[verdict.status] += 1
        return counts

    @property
    def all_hold(self) -> bool:
        return all(v.holds for v in self.verdicts)

    @property
    def drift_found(self) -> bool:
        return not self.all_hold

    def as_json(self) -> dict[str, Any]:
        return {
            "claim_set": self.claim_set,
            "check_id": self.check_id,
            "recorded": self.recorded,
            "not_recorded": self.not_recorded,
            "run_id": self.run_id,
            "counts": self.counts,
            "all_hold": self.all_hold,
            "bad_rows": [b.as_json() for b in self.bad],
            "changed": [change_json(c) for c in self.changed],
            "claims": [v.as_json() for v in self.verdicts],
        }


def change_json(change: StatusChange) -> dict[str, Any]:
    return {
        "claim_id": change.claim_id,
        "doc_id": change.doc_id,
        "before": change.before,
        "after": change.after,
        "at_revision": change.at_revision,
        "checked_revision": change.checked_revision,
    }


def _changes(previous: Mapping[str, str], verdicts: list[ClaimVerdict]) -> list[StatusChange]:
    """Claims whose status differs from their previous check (a first check counts unless
    the claim holds): the same rule as :func:`warehouse.claims.changes_after_run`."""
    out = []
    for v in verdicts:
        before = previous.get(v.claim.claim_id)
        if before != v.status and (before is not None or not v.holds):
            out.append(
                StatusChange(
                    v.claim.claim_id,
                    v.claim.doc_id,
                    before,
                    v.status,
                    v.at_revision,
                    v.current_revision,
                )
            )
    return sorted(out, key=lambda c: c.claim_id)


def _verdicts(claims: Sequence[Claim], found: ClaimVerdicts) -> list[ClaimVerdict]:
    assert len(found.status) == len(claims), "one verdict per claim"
    columns = (
        found.status,
        found.reason,
        found.cited,
        found.current,
        found.at_revision,
        found.found_in,
    )
    return list(map(ClaimVerdict, claims, *columns))


def check_claims(
    warehouse: Warehouse,
    claims: ClaimSet,
    *,
    corpus: str | None = None,
    run_id: int | None = None,
    record: bool | None = None,
) -> ClaimsCheck:
    """Classify every claim in bulk and append the check to the ledger: with ``record``
    True always, False never; by default when it follows a run (``run_id``) or when it
    found something other than the set's latest check did (then ``check_id`` is that
    check's). A read-only warehouse is checked all the same and records nothing (the reader
    texts and search strings the check needs are kept for this connection only).

    ``corpus`` decides what "left the corpus" means (without it: every corpus the document
    was in); ``run_id`` is the refresh run the check follows.
    """
    rules = rules_version()
    items = claims.claims
    hashes = [c.quote_hash for c in items]
    columns = ClaimColumns(
        [c.claim_id for c in items],
        [c.doc_id for c in items],
        [c.revision for c in items],
        [c.content_hash for c in items],
        hashes,
    )
    read_only = ledger.is_read_only(warehouse)
    scratch = ledger.scratch_texts if read_only else _no_scratch
    with scratch(warehouse, rules, hashes, columns.doc_id):
        found = ledger.claim_verdicts(warehouse, columns, rules, corpus)
        if found.unread:  # new quotes, new revisions or new rules: strings and texts first
            store_needles(warehouse, items, hashes, rules)
            fill_reader_texts(warehouse, columns.doc_id, rules)
            found = ledger.claim_verdicts(warehouse, columns, rules, corpus, unread_ok=True)
    verdicts = _verdicts(items, found)
    same: int | None = None  # the latest check, when it found what this one did
    if verdicts and record is not True and run_id is None:
        same = ledger.same_as_latest_check(warehouse, claims.name, found)
    not_recorded: str | None = None
    if not verdicts:
        not_recorded = "no claims"
    elif same is not None:
        not_recorded = "unchanged"
    elif read_only:
        not_recorded = "read-only"
    elif record is False:
        not_recorded = "not asked"
    # A check not recorded because it found what the latest did is that check, shown
    # again: its changes are those since the check before it.
    before = same if not_recorded else None
    previous = ledger.latest_statuses(warehouse, claims.name, columns.claim_id, before=before)
    result = ClaimsCheck(claims.name, verdicts, list(claims.bad), _changes(previous, verdicts))
    result.run_id, result.not_recorded, result.check_id = run_id, not_recorded, before
    if not_recorded is None:
        result.check_id = ledger.record_verdicts(warehouse, claims.name, run_id, found)
    return result


@contextmanager
def _no_scratch(*_: object) -> Iterator[None]:
    yield
