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

    python -m bench.tlog --entries 2000000 --rows 200000 --records 200000
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
from pathlib import Path
from typing import Any

from bench.nhtsa_backfill import _fresh, generate, measure, spread

REPO = Path(__file__).resolve().parent.parent

# A process that runs the receipts command line without the log (``--no-log``) or with it.
_CHILD = "bench.tlog"


def _child(argv: list[str]) -> None:
    """``python -m bench.tlog child {log,no-log} RECEIPTS-ARGS``: receipts, with the synthetic
    source registered; with ``no-log`` the log's appends and checkpoints do nothing."""
    mode, *args = argv
    if mode == "no-log":
        from warehouse.tlog import heads, store

        store.append = lambda *a, **k: (0, 0)  # type: ignore[assignment]
        heads.record_head = lambda *a, **k: None  # type: ignore[assignment]
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


def _log_of(entries: int, path: Path) -> Any:
    """A warehouse whose log holds ``entries`` revision-shaped entries (appended in batches as
    a backfill appends them)."""
    from warehouse.store import Warehouse
    from warehouse.tlog import store

    wh = Warehouse.open(str(path))
    con = wh._connection_for_tests()
    batch = 100_000
    for start in range(0, entries, batch):
        end = min(entries, start + batch)
        with wh._transaction():
            store.append(
                con,
                "SELECT 'revision' AS kind, 'bench/doc/' || i AS doc_id, 1 AS revision, "
                "CAST(NULL AS BIGINT) AS push_id, encode('receipts-log-entry v1' || chr(10) "
                "|| 'kind revision' || chr(10) || 'doc_id bench/doc/' || i || chr(10)) "
                "AS entry, i FROM range($s, $e) t(i)",
                "i",
                {"s": start, "e": end},
            )
    return wh


def _prove(wh: Any, entries: int, samples: int = 50) -> dict[str, Any]:
    from warehouse.tlog import merkle, store
    from warehouse.tlog.heads import reader
    from warehouse.tlog.proof import format_proof

    con = wh._connection_for_tests()
    rng = random.Random(1)
    times = []
    for _ in range(samples):
        doc = f"bench/doc/{rng.randrange(entries)}"
        started = time.perf_counter()
        [found] = store.entry_of_revision(con, doc, 1)
        hashes = merkle.prove_record(entries, found.index, reader(con))
        format_proof(found.index, hashes, b"checkpoint\n")
        times.append((time.perf_counter() - started) * 1000)
    return {
        "ms": spread(times),
        "samples": samples,
        "under_50_ms": statistics.median(times) < 50,
    }


def _publish(wh: Any, entries: int, out: Path) -> dict[str, Any]:
    from warehouse.tlog import checkpoint, merkle, note, store, tiles
    from warehouse.tlog.heads import reader

    con = wh._connection_for_tests()
    signer = note.Signer.generate("bench.example/log")

    def signed(size: int) -> bytes:
        root = merkle.tree_hash(size, reader(con))
        return checkpoint.sign(checkpoint.Checkpoint("bench.example/log", size, root), signer)

    def read_entries(start: int, end: int) -> list[bytes]:
        return [e.entry for e in store.read_entries(con, start, end)]

    started = time.perf_counter()
    first = tiles.write_tiles(out, 0, entries, reader(con), read_entries, signed(entries))
    first_seconds = time.perf_counter() - started
    more = entries + entries // 100
    with wh._transaction():
        store.append(
            con,
            "SELECT 'revision' AS kind, 'bench/doc/' || i AS doc_id, 2 AS revision, "
            "CAST(NULL AS BIGINT) AS push_id, encode('receipts-log-entry v1' || chr(10) "
            "|| 'revision 2 of bench/doc/' || i || chr(10)) AS entry, i "
            "FROM range($s, $e) t(i)",
            "i",
            {"s": entries, "e": more},
        )
    started = time.perf_counter()
    second = tiles.write_tiles(out, entries, more, reader(con), read_entries, signed(more))
    return {
        "first": {"entries": entries, "files": len(first), "seconds": round(first_seconds, 2)},
        "second": {
            "entries": more,
            "files": len(second),
            "seconds": round(time.perf_counter() - started, 2),
        },
    }


def run(entries: int, rows: int, records: int, workdir: Path, repeats: int = 3) -> dict[str, Any]:
    workdir.mkdir(parents=True, exist_ok=True)
    zip_path = workdir / f"tlog-complaints-{rows}.zip"
    if not zip_path.exists():
        generate(zip_path, rows)
    backfill = _share(
        "tlog-backfill",
        lambda wh: ["backfill", "nhtsa", "--file", str(zip_path), "--kind", "complaints",
                    "--warehouse", str(wh), "--json"],
        workdir,
        repeats,
    )  # fmt: skip
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
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=REPO / "bench" / "data")
    args = parser.parse_args(argv)
    os.environ.setdefault("PYTHONPATH", str(REPO))
    result = run(args.entries, args.rows, args.records, args.workdir, args.repeats)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
