"""``receipts serve`` on the warehouse of the issue's 2,000,000-row backfill: a document's page
and a search, each timed as a reader's request through the same application the command
serves (Starlette's test client: the app without the socket).

- warehouse: ``receipts backfill nhtsa`` of the generated FLAT_CMPL file of ``rows`` rows
  (``bench.nhtsa_backfill.generate``, the backfill benchmark's file) into a DuckDB file.
- document page: ``GET /documents/<doc_id>`` (and its JSON twin) for ``samples`` documents
  drawn with a fixed seed; each request opens the warehouse read-only, as the server does.
  Baseline: ``receipts show``'s library call for the same documents (open read-only, read
  the current revision's bytes, check them against the log), the least a page of the
  document needs. Target: under 200 ms at the median.
- search index: ``receipts index`` on the warehouse, timed on its own (the backfill does not
  build it), with the index's size (the file's growth) and its counts.
- search: ``GET /search?q=<word>`` for ``searches`` words of the generated narratives, each
  the first page (20 hits in doc_id order) through the index. Target: under 200 ms at the
  median.
"""

from __future__ import annotations

import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.nhtsa_backfill import generate

SEED = 11
TARGET_MS = 200.0
# Words of the generated narratives (bench/nhtsa_backfill.py), searched for as a reader would.
WORDS = ("warning light", "independent mechanic", "stalled", "rear-ended", "hood latch")


def _index(warehouse: Path) -> dict[str, Any]:
    """``receipts index`` on ``warehouse``: its report, wall time and the bytes it added."""
    before = warehouse.stat().st_size
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "index", "--warehouse", str(warehouse), "--json"],
        check=True, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    seconds = time.perf_counter() - started
    report = json.loads(done.stdout)
    return {
        "seconds": round(seconds, 1),
        "documents": report["documents"],
        "postings": report["postings"],
        "added_bytes": warehouse.stat().st_size - before,
    }


def _build(rows: int, workdir: Path) -> Path:
    """The backfilled warehouse (made once per file; a run that finds it complete reuses it)."""
    workdir.mkdir(parents=True, exist_ok=True)
    source = workdir / f"FLAT_CMPL-{rows}.zip"
    if not source.exists():
        generate(source, rows)
    warehouse = workdir / f"bench-serve-{rows}.duckdb"
    done = workdir / f"bench-serve-{rows}.done"
    if not done.exists():
        for stale in (warehouse, Path(f"{warehouse}.wal")):
            stale.unlink(missing_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pipelines.cli", "backfill", "nhtsa", "--file", str(source),
             "--kind", "complaints", "--warehouse", str(warehouse), "--json"],
            check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        done.touch()
    return warehouse


def _sample(warehouse: Path, samples: int) -> list[str]:
    from warehouse.explore import iter_documents
    from warehouse.store import Warehouse

    with Warehouse.open(str(warehouse), read_only=True) as wh:
        ids = [row.doc_id for row in iter_documents(wh)]
    return random.Random(SEED).sample(ids, min(samples, len(ids)))


def _ms(values: list[float]) -> dict[str, Any]:
    ordered = sorted(values)
    return {
        "median_ms": round(statistics.median(ordered) * 1000, 1),
        "min_ms": round(ordered[0] * 1000, 1),
        "max_ms": round(ordered[-1] * 1000, 1),
        "requests": len(ordered),
    }


def run(rows: int, workdir: Path, samples: int = 30, searches: int = 5) -> dict[str, Any]:
    from starlette.testclient import TestClient

    from pipelines.serve.app import create_app
    from warehouse import history
    from warehouse.store import Warehouse

    warehouse = _build(rows, workdir)
    index = _index(warehouse)
    doc_ids = _sample(warehouse, samples)
    times: dict[str, list[float]] = {"show": [], "page": [], "page_json": [], "search": []}
    for doc_id in doc_ids:
        started = time.perf_counter()
        with Warehouse.open(str(warehouse), read_only=True) as wh:
            history.snapshot(wh, doc_id)
        times["show"].append(time.perf_counter() - started)
    with TestClient(create_app(str(warehouse))) as client:
        for doc_id in doc_ids:
            for name, path in (
                ("page", f"/documents/{doc_id}"),
                ("page_json", f"/documents/{doc_id}.json"),
            ):
                started = time.perf_counter()
                response = client.get(path)
                times[name].append(time.perf_counter() - started)
                if response.status_code != 200:
                    raise RuntimeError(f"GET {path}: {response.status_code}")
        for word in WORDS[:searches]:
            started = time.perf_counter()
            response = client.get("/search", params={"q": word})
            times["search"].append(time.perf_counter() - started)
            if response.status_code != 200:
                raise RuntimeError(f"GET /search?q={word}: {response.status_code}")
            if "Read through the search index" not in response.text:
                raise RuntimeError(f"GET /search?q={word} did not read the search index")
    result: dict[str, Any] = {
        "rows": rows,
        "warehouse_bytes": warehouse.stat().st_size,
        "index": index,
        "requests": {name: _ms(values) for name, values in times.items()},
    }
    median = {name: result["requests"][name]["median_ms"] for name in times}
    result["ratios"] = {
        "page_to_show": round(median["page"] / median["show"], 2),
        "page_json_to_show": round(median["page_json"] / median["show"], 2),
    }
    result["targets"] = {
        "document_page_under_200ms": median["page"] < TARGET_MS,
        "search_under_200ms": median["search"] < TARGET_MS,
    }
    return result


def rows(result: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The page and search medians beside ``receipts show``'s library call."""
    requests, ratios = result["requests"], result["ratios"]

    def timed(name: str) -> str:
        part = requests[name]
        return (
            f"{part['median_ms']} ms ({part['min_ms']}–{part['max_ms']}, "
            f"{part['requests']} requests)"
        )

    size = f"{result['rows']:,}-row backfill"
    return [
        (f"serve: receipts show's read of a document ({size})", timed("show"), "1.00×"),
        ("serve: a document's page", timed("page"), f"{ratios['page_to_show']}× show"),
        (
            "serve: a document's JSON twin",
            timed("page_json"),
            f"{ratios['page_json_to_show']}× show",
        ),
        ("serve: a search (first page, through the index)", timed("search"), ""),
        *_index_row(result.get("index")),
    ]


def _index_row(index: dict[str, Any] | None) -> list[tuple[str, str, str]]:
    """The build of the search index (a result recorded before the index has none)."""
    if index is None:
        return []
    return [
        (
            "serve: receipts index (its own command, before the searches)",
            f"{index['seconds']} s, {index['added_bytes'] / 1e6:.0f} MB",
            f"{index['postings']:,} postings of {index['documents']:,} docs",
        )
    ]
