"""Benchmark: the transparency log (docs/transparency-log.md).

``run(entries, rows, records, workdir)`` measures, in the same run:

- **its share of a first backfill and of a first ingest**: ``receipts backfill nhtsa`` of a
  generated complaints file of ``rows`` rows and ``receipts ingest`` of ``records``
  synthetic records, each into a fresh warehouse, with the log and without it (the same
  command in a process where the log's appends and checkpoints do nothing), alternating,
  ``repeats`` times; the ratio of the medians;
- **proving**: ``log prove``'s work (the entry looked up by doc_id, the proof's O(log n)
  stored hashes read, the proof formed) on a log of ``entries`` entries, median of 50
  documents;
- **publishing**: the log's tiles written to an empty directory, then again after 1% more
  entries: how many files each wrote, and how long it took.

    python -m bench.tlog --entries 2000000 --rows 2000000 --records 200000
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.nhtsa_backfill import _fresh, generate, measure, spread
from warehouse.store import Warehouse
from warehouse.tlog import entries, note
from warehouse.tlog import log as tlog

REPO = Path(__file__).resolve().parent.parent

_SEEN = datetime(2026, 1, 2, tzinfo=UTC)
_SIGNER = note.Signer("bench.example/log", bytes(range(32)))

# A process that runs the receipts command line without the log (``--no-log``) or with it.
_CHILD = "bench.tlog"


class _NoAhead:
    """In a process without the log: an ingest batch's entries are not made."""

    def __init__(self, *args: Any) -> None:
        pass

    def write(self, *args: Any) -> tuple[int, int]:
        return 0, 0

    def __enter__(self) -> _NoAhead:
        return self

    def __exit__(self, *exc: Any) -> None:
        pass


def _child(argv: list[str]) -> None:
    """``python -m bench.tlog child {log,no-log} RECEIPTS-ARGS``: receipts, with the synthetic
    source registered; with ``no-log`` the log's appends and checkpoints do nothing."""
    mode, *args = argv
    if mode == "no-log":
        from warehouse.tlog import heads, store

        store.append = lambda *a, **k: (0, 0)
        import warehouse.ingest

        warehouse.ingest.Ahead = _NoAhead  # type: ignore[attr-defined,misc]
        heads.record_head = lambda *a, **k: None
        import warehouse.runs

        warehouse.runs.record_head = heads.record_head  # type: ignore[attr-defined]
        import warehouse.pushes

        warehouse.pushes.record_head = heads.record_head  # type: ignore[attr-defined]
    from bench import synthetic_source
    from pipelines.cli import main

    synthetic_source.register()
    main(args=args, prog_name="receipts")


def _share(name: str, args_for: Any, workdir: Path, repeats: int) -> dict[str, Any]:
    """Wall seconds of the command ``args_for(warehouse)`` with and without the log."""
    seconds: dict[str, list[float]] = {"log": [], "no-log": []}
    for attempt in range(repeats):
        for mode in ("no-log", "log") if attempt % 2 == 0 else ("log", "no-log"):
            warehouse = workdir / f"{name}-{mode}.duckdb"
            _fresh(warehouse, Path(f"{warehouse}.tmp"))
            measured = measure(
                _CHILD, ["child", mode, *args_for(warehouse)], workdir / f"{name}-{mode}.out"
            )
            seconds[mode].append(measured["seconds"])
    with_log = statistics.median(seconds["log"])
    without = statistics.median(seconds["no-log"])
    return {
        "seconds": {mode: spread(values) for mode, values in seconds.items()},
        "ratio": round(with_log / without, 3),
        "at_most_10_percent": with_log <= without * 1.10,
    }


def _synthetic_manifest(workdir: Path, records: int) -> Path:
    path = workdir / "tlog-synthetic.toml"
    path.write_text(
        f'[corpus]\nname = "tlogbench"\nnamespace = "tlogbench"\n\n'
        f'[[synthetic]]\nname = "bench"\ncount = {records}\nsize = 1024\ncomplete = true\n'
    )
    return path


def _entries(start: int, end: int, revision: int) -> tuple[list[str], list[int], list[bytes]]:
    """Revision-shaped entries of documents ``bench/doc/<i>``."""
    doc_ids = [f"bench/doc/{i}" for i in range(start, end)]
    data = [
        entries.revision_entry(
            doc_id=doc,
            document="record",
            revision=revision,
            content_hash=f"{i:064x}",
            tombstone=False,
            reason=None,
            restores=False,
            source_url=f"https://bench.example/records/{i}",
            source_commit=None,
            seen_at=_SEEN,
            run=revision,
        )
        for i, doc in zip(range(start, end), doc_ids, strict=True)
    ]
    return doc_ids, [revision] * len(doc_ids), data


def _log_of(count: int, path: Path) -> Warehouse:
    """A warehouse whose log holds ``count`` revision entries, appended 100,000 at a time,
    with a signed checkpoint."""
    wh = Warehouse.open(str(path))
    for start in range(0, count, 100_000):
        tlog.append_entries(wh, *_entries(start, min(count, start + 100_000), 1))
    tlog.record_checkpoint(wh, _SIGNER)
    return wh


def _prove(wh: Warehouse, count: int, samples: int = 50) -> dict[str, Any]:
    """``log prove``'s work for random documents: milliseconds each."""
    rng = random.Random(1)
    times = []
    for _ in range(samples):
        doc = f"bench/doc/{rng.randrange(count)}"
        started = time.perf_counter()
        tlog.prove(wh, doc, 1)
        times.append((time.perf_counter() - started) * 1000)
    return {"ms": spread(times), "samples": samples, "under_50_ms": statistics.median(times) < 50}


def _publish(wh: Warehouse, count: int, out: Path) -> dict[str, Any]:
    """Publish the log's tiles, then again after 1% more entries."""
    started = time.perf_counter()
    first = tlog.publish(wh, out)
    first_seconds = time.perf_counter() - started
    more = count + count // 100
    tlog.append_entries(wh, *_entries(count, more, 2))
    tlog.record_checkpoint(wh, _SIGNER)
    started = time.perf_counter()
    second = tlog.publish(wh, out)
    return {
        "first": {
            "entries": first.size,
            "files": len(first.written),
            "seconds": round(first_seconds, 2),
        },
        "second": {
            "entries": second.size,
            "files": len(second.written),
            "seconds": round(time.perf_counter() - started, 2),
        },
    }


def run(entries: int, rows: int, records: int, workdir: Path, repeats: int = 3) -> dict[str, Any]:
    workdir.mkdir(parents=True, exist_ok=True)
    zip_path = workdir / f"FLAT_CMPL-{rows}.zip"  # the backfill benchmark's, when it ran
    if not zip_path.exists():
        generate(zip_path, rows)
    backfill = _share(
        "tlog-backfill",
        lambda wh: [
            "backfill",
            "nhtsa",
            "--file",
            str(zip_path),
            "--kind",
            "complaints",
            "--warehouse",
            str(wh),
            "--json",
        ],
        workdir,
        repeats,
    )
    manifest = _synthetic_manifest(workdir, records)
    ingest = _share(
        "tlog-ingest",
        lambda wh: ["-q", "ingest", str(manifest), "--warehouse", str(wh), "--json"],
        workdir,
        repeats,
    )
    with tempfile.TemporaryDirectory(dir=workdir) as scratch:
        started = time.perf_counter()
        wh = _log_of(entries, Path(scratch) / "log.duckdb")
        built = time.perf_counter() - started
        try:
            prove = _prove(wh, entries)
            publish = _publish(wh, entries, Path(scratch) / "tiles")
        finally:
            wh.close()
    return {
        "backfill_rows": rows,
        "ingest_records": records,
        "backfill": backfill,
        "ingest": ingest,
        "log_entries": entries,
        "log_built_seconds": round(built, 2),
        "prove": prove,
        "publish": publish,
    }


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["child"]:
        _child(argv[1:])
        return
    parser = argparse.ArgumentParser(prog="python -m bench.tlog", description=__doc__)
    parser.add_argument("--entries", type=int, default=2_000_000)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=REPO / "bench" / "data")
    args = parser.parse_args(argv)
    os.environ.setdefault("PYTHONPATH", str(REPO))
    result = run(args.entries, args.rows, args.records, args.workdir, args.repeats)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()


def rows(result: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The rows of ``make bench``'s table."""

    def timed(part: dict[str, Any]) -> str:
        return f"{part['median']:.2f} s ({part['min']:.2f}–{part['max']:.2f}, {part['runs']} runs)"

    out = []
    for name, size in (("backfill", result["backfill_rows"]), ("ingest", result["ingest_records"])):
        part = result[name]
        out.append(
            (
                f"tlog: first {name} of {size:,} with the log (vs without)",
                f"{timed(part['seconds']['log'])} vs {timed(part['seconds']['no-log'])}",
                f"{part['ratio']}× without the log",
            )
        )
    prove = result["prove"]["ms"]
    out.append(
        (
            f"tlog: log prove on a log of {result['log_entries']:,} entries",
            f"{prove['median']:.1f} ms ({prove['min']:.1f}–{prove['max']:.1f}, {prove['runs']})",
            "",
        )
    )
    first, second = result["publish"]["first"], result["publish"]["second"]
    out.append(
        (
            f"tlog: log publish of {first['entries']:,}, then of {second['entries']:,}",
            f"{first['files']:,} files in {first['seconds']} s, then {second['files']:,} "
            f"in {second['seconds']} s",
            "",
        )
    )
    return out
