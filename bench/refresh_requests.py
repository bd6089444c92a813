"""HTTP requests made by a refresh of an unchanged corpus, for each demo corpus.

Each corpus is refreshed twice from the demo's day-2 recording into a fresh warehouse (the
hyphae manifest first re-pinned from that recording, as the demo does): the first refresh is
the baseline (everything is new), the second meets an unchanged upstream and must add no
revision. Requests are counted by the HTTP layer itself (``RunResult.http_requests``, the
sum of every client's ``requests_made``); publishing to NDJSON makes none. A pinned GitHub
file already stored at its commit needs none; the other sources cannot know their upstream
is unchanged without asking.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from demo.run import CORPORA, DAYS, Corpus, Layout, environment
from pipelines import USER_AGENT
from pipelines.ingest import RunResult
from pipelines.manifest import load_manifest
from pipelines.refresh import refresh_manifest
from sources.github.pins import RefResolver, pin_manifest
from sources.github.source import GithubClients
from sources.http import HttpFactory
from warehouse.store import Warehouse


def _refresh(manifest: Path, warehouse: Warehouse, session: Path, out: Path) -> RunResult:
    """One ``receipts refresh`` (to an NDJSON file: publishing makes no HTTP request)."""
    http = HttpFactory(user_agent=USER_AGENT, replay_dir=session)
    try:
        return refresh_manifest(load_manifest(manifest), warehouse, http=http, out=out).ingest
    finally:
        http.close()


def _pin(manifest: Path, session: Path) -> None:
    http = HttpFactory(user_agent=USER_AGENT, replay_dir=session)
    try:
        pin_manifest(manifest, "main", RefResolver(GithubClients(http)))
    finally:
        http.close()


def corpus_requests(corpus: Corpus, layout: Layout, workdir: Path) -> dict[str, Any]:
    session = layout.session(corpus, DAYS[-1])
    manifest = workdir / f"{corpus.name}.toml"
    shutil.copyfile(layout.manifests / f"{corpus.name}.toml", manifest)
    if corpus.pinned:
        _pin(manifest, session)
    with Warehouse.open(str(workdir / f"{corpus.name}.duckdb")) as wh:
        out = workdir / f"{corpus.name}.ndjson"
        first = _refresh(manifest, wh, session, out)
        second = _refresh(manifest, wh, session, out)
    documents = sum(c.get("unchanged", 0) for c in second.counts.values())
    written = sum(
        c.get(k, 0) for c in second.counts.values() for k in ("new", "changed", "gone", "restored")
    )
    return {
        "documents": documents,
        "first_refresh_requests": first.http_requests,
        "second_refresh_requests": second.http_requests,
        "ratio_to_first_refresh": round(second.http_requests / max(first.http_requests, 1), 3),
        "second_refresh_revisions": written,
        "status": [first.status, second.status],
    }


def run(layout: Layout | None = None) -> dict[str, Any]:
    layout = layout or Layout()
    with environment({}), tempfile.TemporaryDirectory() as tmp:
        corpora = {c.name: corpus_requests(c, layout, Path(tmp)) for c in CORPORA}
    pinned = [corpora[c.name] for c in CORPORA if c.pinned]
    return {
        "session": DAYS[-1].name,
        "corpora": corpora,
        "targets": {
            "pinned_files_make_no_request": all(p["second_refresh_requests"] == 0 for p in pinned),
            "unchanged_refresh_writes_no_revision": all(
                c["second_refresh_revisions"] == 0 for c in corpora.values()
            ),
        },
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=2))
