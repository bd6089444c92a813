"""A fixture source for publishing tests: the shapes the real sources will curate (an
article, a comment thread with parent references, a safety record with an array of
components), from fixture snapshots, so curation, references and keys are exercised before
those sources exist.

Register it for a test with ``register(monkeypatch)``; manifests then take ``[[fixture]]``
entries: ``name``, ``revision`` (changes one comment's text), ``drop`` (doc keys the
complete listing leaves out, so they become tombstones) and ``licence``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from pydantic import Field

from pipelines.ingest import run_ingest
from pipelines.manifest import load_manifest
from pipelines.publish.push import PushResult, publish_manifest
from pipelines.publish.targets.base import Target
from sources.base import Curated, CurationInput, FetchContext, Source, StrictModel
from sources.http import HttpFactory
from sources.registry import SOURCES
from warehouse.canonical import canonical_json
from warehouse.ids import doc_id
from warehouse.records import Listing, Provenance, Record
from warehouse.store import Warehouse


class FixtureEntry(StrictModel):
    name: str
    revision: int = 0
    drop: list[str] = Field(default_factory=list)
    licence: str = "CC-BY-4.0"


def snapshots(revision: int) -> dict[str, dict[str, Any]]:
    return {
        "article/101": {
            "id": 101,
            "title": "Ask the record",
            "tags": ["provenance", "sanity"],
            "body_markdown": "Every sentence traced to its source.",
        },
        "comment/2a4b9": {
            "id_code": "2a4b9",
            "article_id": 101,
            "parent": None,
            "body_html": "<p>Nice</p>" if revision == 0 else f"<p>Nice, edited {revision}</p>",
            "user": {"username": "ana"},
        },
        "comment/2a4bc": {
            "id_code": "2a4bc",
            "article_id": 101,
            "parent": "2a4b9",
            "body_html": "<p>[deleted]</p>",
            "user": {},
        },
        "record/24V064000": {
            "nhtsaCampaignNumber": "24V064000",
            "subject": "Air bag inflator",
            "components": [{"name": "AIR BAGS"}, {"name": "SEAT BELTS"}, {"name": "AIR BAGS"}],
        },
    }


def fetch(entry: FixtureEntry, ctx: FetchContext) -> Iterable[Listing]:
    def records() -> Iterator[Record]:
        for key, value in snapshots(entry.revision).items():
            if key in entry.drop:
                continue
            kind, ident = key.split("/")
            yield Record(
                doc_id=doc_id("fixture", kind, ident),
                kind=kind,
                body=canonical_json(value),
                provenance=Provenance(
                    url=f"https://fixture.test/{key}", source_format="fixture-json"
                ),
            )

    yield Listing(scope=f"fixture:{entry.name}", records=records(), complete=True)


def curate(document: CurationInput, entries: list[FixtureEntry]) -> Curated:
    value = orjson.loads(document.body)
    if document.kind == "article":
        return Curated(
            "article",
            {"title": value["title"], "tags": value["tags"], "body": value["body_markdown"]},
        )
    if document.kind == "comment":
        fields: dict[str, Any] = {
            "body": value["body_html"],
            "article": {
                "_type": "reference",
                "_ref": document.sanity_id_of(
                    doc_id("fixture", "article", str(value["article_id"]))
                ),
            },
        }
        if value["user"]:
            fields["author"] = value["user"]["username"]
        if value["parent"]:
            fields["parent"] = {
                "_type": "reference",
                "_ref": document.sanity_id_of(doc_id("fixture", "comment", value["parent"])),
            }
        return Curated("comment", fields)
    licence = entries[0].licence if entries else None
    return Curated(
        "safetyRecord",
        {
            "recordType": "recall",
            "campaignNumber": value["nhtsaCampaignNumber"],
            "subject": value["subject"],
            "components": value["components"],
            "licence": licence,
        },
    )


FIXTURE_SOURCE: Source[FixtureEntry] = Source(
    name="fixture",
    entry_model=FixtureEntry,
    label=lambda entry: f"fixture {entry.name}",
    fetch=fetch,
    curate=curate,
)


def register(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(SOURCES, "fixture", FIXTURE_SOURCE)


def manifest_text(
    *,
    namespace: str = "atlas",
    revision: int = 0,
    drop: Iterable[str] = (),
    synthetic: int = 0,
    licence: str = "CC-BY-4.0",
    publish: str = "",
) -> str:
    text = f'[corpus]\nname = "atlas"\nnamespace = "{namespace}"\n\n'
    text += f'[[fixture]]\nname = "thread"\nrevision = {revision}\nlicence = "{licence}"\n'
    text += f"drop = {orjson.dumps(list(drop)).decode()}\n"
    if synthetic:
        text += (
            f'\n[[synthetic]]\nname = "bulk"\ncount = {synthetic}\nsize = 256\ncomplete = true\n'
        )
    return text + publish


def ingest(tmp: Path, warehouse: Warehouse, text: str, name: str = "atlas.toml") -> Path:
    path = tmp / name
    path.write_text(text)
    result = run_ingest(load_manifest(path), warehouse)
    assert result.status == "ok", result.failures
    return path


def publish(
    path: Path,
    warehouse: Warehouse,
    *,
    target: Target | None = None,
    http: HttpFactory | None = None,
    **options: Any,
) -> PushResult:
    return publish_manifest(load_manifest(path), warehouse, target=target, http=http, **options)
