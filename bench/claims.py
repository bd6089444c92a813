"""The claims check against a plain scan of the revisions' text, measured in the same run.

A warehouse of ``revisions`` revisions (documents of ``REVISIONS_PER_DOC`` revisions each,
records of ~``TEXT_WORDS`` words whose sentences change from one revision to the next) and
``claims`` claims quoting a sentence of a random revision of a random document, cited as
that revision or another: a mix of holds, stale and misattributed claims.

- baseline: one DuckDB scan of the text of *every* revision in the warehouse — each
  revision joined to its snapshot, the bytes decoded as UTF-8 and searched for one
  substring (``warehouse.claims.scan_revision_text``). It is the cost of reading the
  corpus's text once, whatever the claims; the check reads less (only the claimed
  documents' revisions, ~⅓ of them at 1 claim per 10 revisions) but searches each for its
  own quote, decides every claim's status (in SQL), appends the check to the ledger, and
  adds the claims' Python work (each quote's hash, a verdict object per claim, the
  changes since the previous check); a verdict's message is written when it is shown, so
  not here;
- first check: reader text computed in Python for the claimed documents' snapshots (their
  bytes checked against their hash), and each quote's search strings, both stored, then
  the check (work a rules change, new revisions or new quotes make, not every check);
- repeat check: what every later refresh does, the reader texts and search strings already
  stored. The target is on this one: within 3× of the baseline.

Each repeat check is timed right after a baseline scan; the figures are medians of
``repeats`` such pairs, with their spread. Full size:
``run(revisions=1_000_000, claims=100_000)``.
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pipelines.checks.claims import check_claims
from pipelines.checks.claims_file import Claim, ClaimSet
from warehouse.canonical import canonical_json
from warehouse.claims import scan_revision_text
from warehouse.ingest import Ingestor
from warehouse.records import Listing, Provenance, Record
from warehouse.runs import finish_run, start_run
from warehouse.store import Warehouse

SEED = 17
REVISIONS_PER_DOC = 4
TEXT_WORDS = 120
SENTENCE_WORDS = 12
TARGET_RATIO = 3.0
_WORDS = [
    "brake", "pedal", "engine", "stalled", "dealer", "warning", "highway", "recall", "airbag",
    "steering", "sensor", "camera", "speed", "driver", "battery", "software", "update", "door",
    "window", "noise", "light", "failed", "replaced", "inspection", "mileage", "report",
]  # fmt: skip


def _sentences(doc: int, revision: int) -> list[str]:
    """A document's sentences at a revision: each revision rewrites one more sentence."""
    sentences = []
    for s in range(TEXT_WORDS // SENTENCE_WORDS):
        version = revision if s < revision else 0
        rng = random.Random(f"{SEED}-{doc}-{s}-{version}")
        words = [rng.choice(_WORDS) for _ in range(SENTENCE_WORDS)]
        sentences.append(" ".join(words).capitalize() + f" ({doc}.{s}.{version}).")
    return sentences


def _records(docs: int, revision: int) -> Iterator[Record]:
    provenance = Provenance(source_format="bench")
    for doc in range(docs):
        value = {"id": doc, "summary": " ".join(_sentences(doc, revision)), "revision": revision}
        yield Record(
            f"bench/claim-doc/{doc}",
            "record",
            canonical_json(value),
            "application/json",
            provenance,
        )


def build(warehouse: Warehouse, docs: int) -> None:
    for revision in range(REVISIONS_PER_DOC):
        info = start_run(warehouse, "bench", "bench-claims", "bench")
        Ingestor(warehouse, info.run_id, batch_size=20_000).ingest(
            "bench", Listing("bench:claims", _records(docs, revision))
        )
        finish_run(warehouse, info.run_id, "ok", {}, [])


def make_claims(docs: int, count: int) -> ClaimSet:
    rng = random.Random(SEED)
    claims = []
    for n in range(count):
        doc = rng.randrange(docs)
        quoted = rng.randrange(REVISIONS_PER_DOC)
        cited = quoted if rng.random() < 0.8 else rng.randrange(REVISIONS_PER_DOC)
        sentence = rng.choice(_sentences(doc, quoted)[: REVISIONS_PER_DOC + 1])
        claims.append(Claim(f"claim-{n}", f"bench/claim-doc/{doc}", sentence, revision=cited + 1))
    return ClaimSet("bench-claims", claims)


def _spread(values: list[float]) -> dict[str, float]:
    return {
        "median": round(statistics.median(values), 3),
        "min": round(min(values), 3),
        "max": round(max(values), 3),
        "runs": len(values),
    }


def run(revisions: int = 100_000, claims: int = 10_000, repeats: int = 3) -> dict[str, Any]:
    docs = max(1, revisions // REVISIONS_PER_DOC)
    claim_set = make_claims(docs, claims)
    baselines: list[float] = []
    steadies: list[float] = []
    with tempfile.TemporaryDirectory() as tmp, Warehouse.open(str(Path(tmp) / "c.duckdb")) as wh:
        started = time.perf_counter()
        build(wh, docs)
        build_s = time.perf_counter() - started

        started = time.perf_counter()
        scan_revision_text(wh, "no sentence says this")
        first_baseline_s = time.perf_counter() - started

        started = time.perf_counter()
        first = check_claims(wh, claim_set)
        first_s = time.perf_counter() - started

        for _ in range(repeats):
            started = time.perf_counter()
            scan_revision_text(wh, "no sentence says this")
            baselines.append(time.perf_counter() - started)

            started = time.perf_counter()
            steady = check_claims(wh, claim_set)
            steadies.append(time.perf_counter() - started)
    ratios = [s / b for s, b in zip(steadies, baselines, strict=True)]
    ratio = statistics.median(ratios)
    return {
        "revisions": docs * REVISIONS_PER_DOC,
        "documents": docs,
        "claims": claims,
        "build_seconds": round(build_s, 2),
        "baseline_seconds": round(statistics.median(baselines), 3),
        "first_check_seconds": round(first_s, 3),
        "steady_check_seconds": round(statistics.median(steadies), 3),
        "first_ratio_to_baseline": round(first_s / first_baseline_s, 2),
        "steady_ratio_to_baseline": round(ratio, 2),
        "seconds": {"baseline": _spread(baselines), "steady": _spread(steadies)},
        "steady_ratios": _spread(ratios),
        "counts": steady.counts,
        "first_counts": first.counts,
        "targets": {f"steady_check_within_{TARGET_RATIO:g}x_of_a_scan": ratio <= TARGET_RATIO},
    }
