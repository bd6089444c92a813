"""A deterministic synthetic source, for benchmarks and tests: scaffolding, not an upstream.

It is not in the production registry (``sources.registry``): bench and tests register it
with :func:`register`, and ``python -m bench.synthetic_source ARGS`` runs the ``receipts``
command line with it registered (``bench/synthetic-smoke.toml`` is a manifest to try it on).

``[[synthetic]]`` entries generate ``count`` JSON records of about ``size`` bytes each. The
same entry always yields the same bytes; ``changed_percent`` rewrites that share of records
(chosen by a hash of their index) so a re-ingest sees real changes. ``pause_every`` /
``pause_ms`` slow the stream down so a test can kill a run half-way; at each such pause,
``hold_while`` (a path) keeps it paused while that file exists, so a test decides when the
run may go on, however slow the machine; on entering such a hold it touches ``<path>.held``,
so a test knows when the run got there (every batch before the pause committed).

Curated for publishing as ``syntheticRecord`` documents: title, text, tags, the record's
index and variant, and the name of the entry that generated it.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson
from pydantic import Field

from sources import registry
from sources.base import Curated, CurationInput, FetchContext, Source, StrictModel
from warehouse.ids import doc_id
from warehouse.records import Listing, Provenance, Record, json_body


class SyntheticEntry(StrictModel):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    count: int = Field(ge=0, le=50_000_000)
    size: int = Field(default=1024, ge=64, le=1_000_000)
    seed: int = 0
    changed_percent: float = Field(default=0.0, ge=0.0, le=100.0)
    complete: bool = False
    pause_every: int = Field(default=0, ge=0)
    pause_ms: int = Field(default=0, ge=0)
    hold_while: str | None = None


def is_changed(index: int, seed: int, changed_percent: float) -> bool:
    if changed_percent <= 0:
        return False
    h = int.from_bytes(hashlib.blake2b(f"{seed}:{index}".encode(), digest_size=4).digest())
    return (h % 10_000) < changed_percent * 100


def synthetic_record_value(index: int, seed: int, size: int, variant: int = 0) -> dict[str, Any]:
    """The JSON value of record ``index``: deterministic, about ``size`` bytes serialised."""
    unit = hashlib.sha256(f"{seed}:{index}:{variant}".encode()).hexdigest()
    text = (unit * (size // 64 + 1))[: max(0, size - 120)]
    return {
        "id": index,
        "seed": seed,
        "variant": variant,
        "title": f"record {index}",
        "tags": ["synthetic", f"bucket-{index % 16}"],
        "text": text,
    }


def records(entry: SyntheticEntry) -> Iterator[Record]:
    for index in range(entry.count):
        if entry.pause_every and index and index % entry.pause_every == 0:
            time.sleep(entry.pause_ms / 1000)
            if entry.hold_while is not None and Path(entry.hold_while).exists():
                Path(f"{entry.hold_while}.held").touch()
                while Path(entry.hold_while).exists():
                    time.sleep(0.05)
        variant = 1 if is_changed(index, entry.seed, entry.changed_percent) else 0
        value = synthetic_record_value(index, entry.seed, entry.size, variant)
        yield Record(
            doc_id=doc_id("synthetic", "record", f"{entry.name}-{index}"),
            kind="record",
            **json_body(value),
            provenance=Provenance(source_format="synthetic"),
        )


def fetch(entry: SyntheticEntry, ctx: FetchContext) -> Iterable[Listing]:
    yield Listing(scope=f"synthetic:{entry.name}", records=records(entry), complete=entry.complete)


def curate(document: CurationInput, entries: list[SyntheticEntry]) -> Curated:
    value = orjson.loads(document.body)
    key = document.doc_id.split("/", 2)[2]
    entry = next((e for e in entries if key.rsplit("-", 1)[0] == e.name), None)
    fields = {
        "title": value["title"],
        "text": value["text"],
        "tags": value["tags"],
        "recordIndex": value["id"],
        "variant": value["variant"],
        "collection": entry.name if entry is not None else None,
    }
    return Curated("syntheticRecord", {k: v for k, v in fields.items() if v is not None})


SOURCE = Source(
    name="synthetic",
    entry_model=SyntheticEntry,
    label=lambda entry: f"synthetic {entry.name} ({entry.count} records)",
    fetch=fetch,
    curate=curate,
)


def register() -> Source[SyntheticEntry]:
    """Register the synthetic source (``[[synthetic]]`` entries) for this process."""
    registry.register(SOURCE)
    return SOURCE


if __name__ == "__main__":
    from pipelines.cli import main

    register()
    main(prog_name="receipts")
