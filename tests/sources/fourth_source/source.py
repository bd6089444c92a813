"""The ``notes`` source: the notes pinned to a board, served as a JSON array.

Everything a source is, and nothing else: its manifest entry model, how an entry is labelled,
its fetch, its curation and its one endpoint, with its own default base URL and its own
environment variable. No shared module names it; :func:`sources.registry.register` is all
it takes to make ``[[notes]]`` a valid manifest table and an ingestible source.

Documents: ``notes/note/<board>/<id>``. A board's listing is complete: a note taken off the
board becomes a tombstone.
"""

from __future__ import annotations

from collections.abc import Iterable

import orjson
from pydantic import Field

from sources.base import Curated, CurationInput, FetchContext, Source, StrictModel
from sources.http import Endpoint
from warehouse.errors import SourceError
from warehouse.ids import doc_id
from warehouse.records import Listing, Provenance, Record, json_body

NAME = "notes"
# A default that resolves nowhere: only the environment variable leads to an upstream.
ENDPOINT = Endpoint("notes", "https://notes.invalid", "RECEIPTS_TEST_NOTES_URL")


class NotesEntry(StrictModel):
    board: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    base_url: str | None = None


def label(entry: NotesEntry) -> str:
    return f"notes board {entry.board}"


def fetch(entry: NotesEntry, ctx: FetchContext) -> Iterable[Listing]:
    base = ENDPOINT.base_url(entry.base_url)
    client = ctx.http.client(NAME, [base])
    url = f"{base}/boards/{entry.board}/notes"
    _, notes = client.get_json(url)
    if not isinstance(notes, list) or not all(isinstance(n, dict) and "id" in n for n in notes):
        raise SourceError(f"notes: {url} is not a JSON array of notes with ids")
    records = [
        Record(
            doc_id=doc_id(NAME, "note", entry.board, str(note["id"])),
            kind="note",
            **json_body(note),
            provenance=Provenance(url=url, source_format="notes-json"),
        )
        for note in notes
    ]
    yield Listing(scope=f"notes:{entry.board}", records=records, complete=True)


def curate(document: CurationInput, entries: list[NotesEntry]) -> Curated:
    value = orjson.loads(document.body)
    return Curated("note", {"text": value["text"], "board": document.doc_id.split("/")[2]})


SOURCE = Source(
    name=NAME,
    entry_model=NotesEntry,
    label=label,
    fetch=fetch,
    curate=curate,
    endpoints=(ENDPOINT,),
)
