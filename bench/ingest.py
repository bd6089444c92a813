"""Ingest throughput against its floor measured in the same run.

The floor (:func:`bench.floor.ingest_floor`) is the least any importer must do: canonical
JSON + SHA-256 of every record and one Arrow insert into DuckDB. Ours is the real engine:
the same records, as Records through ``warehouse.ingest.Ingestor`` (batches, comparison
with current revisions, snapshots, revisions, sightings, run progress, one transaction per
batch).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from bench.floor import ingest_floor
from bench.nhtsa_backfill import spread
from bench.synthetic_source import is_changed, synthetic_record_value
from warehouse.canonical import canonical_json
from warehouse.digests import row_counts
from warehouse.ingest import DEFAULT_BATCH_SIZE, Ingestor
from warehouse.records import Listing, Provenance, Record, json_body
from warehouse.runs import finish_run, start_run
from warehouse.store import Warehouse

SEED = 11
T = TypeVar("T")


def make_values(count: int, changed_percent: float = 0.0) -> list[dict[str, Any]]:
    return [
        synthetic_record_value(i, SEED, 1024, 1 if is_changed(i, SEED, changed_percent) else 0)
        for i in range(count)
    ]


def _records(values: list[dict[str, Any]]) -> Iterator[Record]:
    provenance = Provenance(source_format="synthetic")
    for i, value in enumerate(values):
        yield Record(
            doc_id=f"synthetic/record/bench-{i}",
            kind="record",
            **json_body(value),
            provenance=provenance,
        )


def source_only(values: list[dict[str, Any]]) -> float:
    """The seconds the source takes to produce the records alone, ingesting none: what any
    re-ingest of them pays before the engine does anything."""
    started = time.perf_counter()
    for _ in _records(values):
        pass
    return time.perf_counter() - started


def ours(
    values: list[dict[str, Any]], warehouse: Warehouse, batch_size: int
) -> tuple[float, dict[str, int]]:
    started = time.perf_counter()
    info = start_run(warehouse, "bench", "bench", "bench")
    ingestor = Ingestor(warehouse, info.run_id, batch_size=batch_size)
    counts = ingestor.ingest("synthetic", Listing("synthetic:bench", _records(values)))
    finish_run(warehouse, info.run_id, "ok", {}, [])
    return time.perf_counter() - started, counts.as_dict()


def _filler(listing: int, count: int) -> Iterator[Record]:
    """Small records of another kind: the rest of a warehouse a listing shares."""
    provenance = Provenance(source_format="synthetic")
    for i in range(count):
        yield Record(
            doc_id=f"synthetic/filler/{listing}-{i}",
            kind="filler",
            body=b'{"i":%d,"listing":%d}' % (i, listing),
            provenance=provenance,
        )


def in_a_larger_warehouse(
    values: list[dict[str, Any]], workdir: Path, batch_size: int, repeats: int, times: int = 10
) -> dict[str, Any]:
    """An identical re-ingest of ``values`` in a warehouse of those records alone, then in
    the same warehouse once it holds ``times`` as many documents (other listings' small
    records): what a re-ingest pays for the rest of the warehouse (medians, spreads)."""
    count = len(values)
    alone: list[float] = []
    larger: list[float] = []
    with Warehouse.open(str(workdir / "larger.duckdb")) as wh:
        ours(values, wh, batch_size)
        for _ in range(repeats):
            alone.append(ours(values, wh, batch_size)[0])
        info = start_run(wh, "bench", "filler", "filler")
        ingestor = Ingestor(wh, info.run_id, batch_size=batch_size)
        for listing in range(times - 1):
            ingestor.ingest(
                "synthetic", Listing(f"synthetic:filler-{listing}", _filler(listing, count))
            )
        finish_run(wh, info.run_id, "ok", {}, [])
        documents = table_sizes(wh)["documents"]
        for _ in range(repeats):
            seconds, counts = ours(values, wh, batch_size)
            if counts["unchanged"] != count:
                raise RuntimeError(f"the re-ingest in the larger warehouse counted {counts}")
            larger.append(seconds)
    return {
        "documents": documents,
        "seconds": {"alone": spread(alone), "larger": spread(larger)},
        "ratio": round(statistics.median(larger) / statistics.median(alone), 2),
    }


def _cpu_noted(cpu: list[float], call: Callable[[], T]) -> T:
    """``call()``, with the CPU time it took (this process, every thread) appended to ``cpu``."""
    started = time.process_time()
    try:
        return call()
    finally:
        cpu.append(time.process_time() - started)


def table_sizes(warehouse: Warehouse) -> dict[str, int]:
    return row_counts(warehouse, ("snapshots", "revisions", "documents", "sightings"))


_PEAK_SCRIPT = """
import sys
from bench import synthetic_source
from warehouse.store import Warehouse
from pipelines.ingest import IngestOptions, run_ingest
from pipelines.manifest import parse_manifest
from pathlib import Path
count, batch, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
synthetic_source.register()
text = f'[corpus]\\nname="peak"\\nnamespace="peak"\\n[[synthetic]]\\nname="p"\\ncount={count}\\n'
with Warehouse.open(path) as wh:
    run_ingest(parse_manifest(text, Path("peak.toml")), wh, options=IngestOptions(batch_size=batch))
# VmHWM: this process's own high-water mark (ru_maxrss would include the forking parent).
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")][0]
print(int(hwm.split()[1]))
"""


def peak_rss_mb(count: int, batch_size: int, workdir: Path) -> float:
    """Peak RSS of a whole ingest of ``count`` streamed records, in a fresh process."""
    path = workdir / f"peak-{count}.duckdb"
    out = subprocess.run(
        [sys.executable, "-c", _PEAK_SCRIPT, str(count), str(batch_size), str(path)],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(out.stdout.strip().splitlines()[-1]) / 1024


def run(
    count: int = 200_000, batch_size: int = DEFAULT_BATCH_SIZE, repeats: int = 3
) -> dict[str, Any]:
    """The floor, a first ingest, an identical re-ingest and a 1%-changed ingest, each
    ``repeats`` times (a fresh warehouse each time); medians and spreads."""
    values = make_values(count)
    changed = make_values(count, changed_percent=1.0)
    n_changed = sum(1 for a, b in zip(values, changed, strict=True) if a != b)
    times: dict[str, list[float]] = {
        "floor": [],
        "source": [],
        "first": [],
        "identical": [],
        "changed": [],
    }
    # CPU time of this process (every thread, DuckDB's included) for each measured step.
    cpu: dict[str, list[float]] = {name: [] for name in times}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        for attempt in range(repeats):
            floor_path = workdir / f"floor-{attempt}.duckdb"
            times["floor"].append(
                _cpu_noted(cpu["floor"], partial(ingest_floor, values, floor_path))
            )
            times["source"].append(_cpu_noted(cpu["source"], partial(source_only, values)))
            with Warehouse.open(str(workdir / f"ours-{attempt}.duckdb")) as wh:
                first_s, first = _cpu_noted(cpu["first"], partial(ours, values, wh, batch_size))
                sizes_after_first = table_sizes(wh)
                again_s, again = _cpu_noted(cpu["identical"], partial(ours, values, wh, batch_size))
                writes = {k: v - sizes_after_first[k] for k, v in table_sizes(wh).items()}
                changed_s, changed_counts = _cpu_noted(
                    cpu["changed"], partial(ours, changed, wh, batch_size)
                )
            times["first"].append(first_s)
            times["identical"].append(again_s)
            times["changed"].append(changed_s)
        larger = in_a_larger_warehouse(values, workdir, batch_size, repeats)
        peak_small = peak_rss_mb(count // 4, batch_size, workdir)
        peak_full = peak_rss_mb(count, batch_size, workdir)
    median = {name: statistics.median(values) for name, values in times.items()}
    ratios = {
        "first_to_floor": round(median["first"] / median["floor"], 2),
        "identical_to_first": round(median["identical"] / median["first"], 2),
        "changed_to_first": round(median["changed"] / median["first"], 2),
        # The share of the first ingest that producing the records takes: no re-ingest of
        # the same records through a source can take less.
        "source_to_first": round(median["source"] / median["first"], 2),
    }
    return {
        "records": count,
        "record_bytes": len(canonical_json(values[0])),
        "batch_size": batch_size,
        "seconds": {name: spread(values) for name, values in times.items()},
        "cpu_seconds": {name: spread(values) for name, values in cpu.items()},
        "cores_busy": {
            name: round(statistics.median(cpu[name]) / s, 2) for name, s in median.items() if s
        },
        "records_per_second": {name: round(count / s) for name, s in median.items()},
        "ratios": ratios,
        "counts": {"first": first, "identical": again, "changed": changed_counts},
        "expected_changed": n_changed,
        "identical_rows_written": writes,
        # An identical re-ingest in a warehouse of its records alone and in one ten times as
        # large: what the rest of the warehouse costs it.
        "larger_warehouse": larger,
        "peak_rss_mb": {
            f"{count // 4}_records": round(peak_small, 1),
            f"{count}_records": round(peak_full, 1),
            "ratio": round(peak_full / peak_small, 2),
        },
        "targets": {
            "first_ingest_within_2x_floor": ratios["first_to_floor"] <= 2,
            "identical_reingest_writes_nothing": not any(writes.values()),
            "identical_reingest_at_most_0.3x_first": ratios["identical_to_first"] <= 0.3,
            "one_percent_changed_at_most_0.35x_first": ratios["changed_to_first"] <= 0.35,
            "peak_memory_bounded_by_batch": peak_full < 1.5 * peak_small,
        },
    }


if __name__ == "__main__":
    print(json.dumps(run(int(sys.argv[1]) if len(sys.argv) > 1 else 200_000), indent=2))
