"""Canonical form v2 against v1 on the NHTSA backfill: ``receipts backfill nhtsa`` of the same
generated complaints file by a receipts that writes v1 and by this one, interleaved, each
into a fresh warehouse; then a v1 backfill's warehouse migrated by this one (migration 0010
records every snapshot's form).

Run from a directory outside both trees (a child's ``sys.path`` starts with its working
directory), with this tree on ``PYTHONPATH``, the v1 receipts exported at ``V1``::

    git archive 506b8c4 | tar -x -C /tmp/receipts-v1
    cd /tmp && PYTHONPATH=$REPO $REPO/.venv/bin/python -m bench.canonical_forms_backfill \
        /tmp/receipts-v1 200000 3 /tmp/bench-forms
"""

import json
import runpy
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.nhtsa_backfill import _backfill as backfill_v2
from bench.nhtsa_backfill import _fresh, generate


def main() -> None:
    v1_tree, rows, repeats, work = (
        Path(sys.argv[1]),
        int(sys.argv[2]),
        int(sys.argv[3]),
        Path(sys.argv[4]),
    )
    # the v1 tree's bench module: its children run with PYTHONPATH = the v1 tree
    backfill_v1 = runpy.run_path(str(v1_tree / "bench" / "nhtsa_backfill.py"))["_backfill"]
    work.mkdir(parents=True, exist_ok=True)
    zip_path = work / f"FLAT_CMPL-{rows}.zip"
    if not zip_path.exists():
        generate(zip_path, rows)
    wh = work / "wh.duckdb"
    times: dict[str, list[float]] = {"v1": [], "v2": []}
    for i in range(repeats):
        for name in ("v1", "v2") if i % 2 == 0 else ("v2", "v1"):
            _fresh(wh)
            m = (backfill_v1 if name == "v1" else backfill_v2)(zip_path, wh, work, name)
            times[name].append(m["seconds"])
            print(name, m["seconds"], m["documents"], flush=True)
    # a v1 warehouse, migrated by v2
    _fresh(wh)
    backfill_v1(zip_path, wh, work, "v1-for-migrate")
    t = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "migrate", "--warehouse", str(wh), "--json"],
        capture_output=True,
        text=True,
    )
    migrate_s = time.perf_counter() - t
    print(out.stdout[-300:], out.stderr[-300:])
    _fresh(wh)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(
        json.dumps(
            {
                "rows": rows,
                "seconds": times,
                "median": med,
                "v2_to_v1": round(med["v2"] / med["v1"], 3),
                "migrate_seconds": round(migrate_s, 2),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
