"""Finding things: ``ls``, ``search``, ``index`` (the search index) and ``export``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from pipelines import logline
from pipelines.checks import text_search
from pipelines.checks.search_words import WORDS_VERSION, document_hashes
from pipelines.cli.common import emit_json, handle_errors, json_option, quiet, warehouse_option
from pipelines.cli.listing import emit, listing_options, page_options
from pipelines.cli.revisions import POINT_HELP
from pipelines.manifest import load_manifest
from pipelines.progress import steps_for
from pipelines.visible import visible
from warehouse.asof import Point, resolve_point
from warehouse.errors import PointError
from warehouse.explore import EXPORT_FORMATS, export_tables, iter_documents
from warehouse.search_index import build_index
from warehouse.store import Warehouse


def _point(wh: Warehouse, text: str | None, option: str) -> Point | None:
    if text is None:
        return None
    try:
        return resolve_point(wh, text)
    except PointError as exc:
        raise click.BadParameter(str(exc), param_hint=option) from None


def _corpus(manifest_file: Path | None, corpus: str | None) -> str | None:
    if manifest_file is not None and corpus is not None:
        raise click.UsageError("give MANIFEST or --corpus, not both")
    return load_manifest(manifest_file).name if manifest_file is not None else corpus


# -- ls ------------------------------------------------------------------------------------
LS_TEXT = ["doc_id", "revision", "content_hash", "size", "valid_from_run", "valid_from"]
LS_ALL = ["doc_id", "source", "kind", "revision", "content_hash", "tombstone", "size"]
LS_ALL += ["valid_from_run", "valid_from"]
SEARCH_TEXT = ["doc_id", "revision", "hits", "where", "snippet"]
SEARCH_ALL = ["doc_id", "revision", "content_hash", "hits", "where", "snippet"]


@click.command("ls")
@warehouse_option
@click.option("--source", help="Only documents of this source, e.g. nhtsa.")
@click.option("--kind", help="Only documents of this kind, e.g. complaint or comment.")
@click.option("--corpus", help="Only members of this corpus (a manifest's [corpus] name).")
@click.option(
    "--changed-since",
    metavar="RUN|DATE",
    help=f"Only documents whose current revision is newer than this point: {POINT_HELP}.",
)
@page_options
@listing_options
@handle_errors
def ls(
    warehouse: str,
    source: str | None,
    kind: str | None,
    corpus: str | None,
    changed_since: str | None,
    limit: int | None,
    offset: int,
    fmt: str | None,
) -> None:
    """List documents with their current revision, content hash, size and the run that
    made it current (tombstoned documents say so), by doc_id. Rows are printed as they are
    read: a table a page at a time, so `receipts ls | head` answers at once.

    \b
    Examples:
      receipts ls --source nhtsa --kind complaint --limit 20
      receipts ls --corpus cr-v-aeb --changed-since "2 days ago" --csv > changed.csv
    """
    with Warehouse.open(warehouse, read_only=True) as wh:
        since = _point(wh, changed_since, "--changed-since")
        rows = iter_documents(
            wh,
            source=source,
            kind=kind,
            corpus=corpus,
            changed_since=since,
            limit=limit,
            offset=offset,
        )
        listed = (
            {
                **row._asdict(),
                "content_hash": row.content_hash
                if fmt in ("json", "nl", "csv")
                else (row.content_hash or "TOMBSTONE")[:12],
            }
            for row in rows
        )
        emit(listed, LS_TEXT if fmt is None else LS_ALL, fmt, empty="no documents match")


# -- search --------------------------------------------------------------------------------
@click.command("search")
@click.argument("text")
@warehouse_option
@click.option("--source", help="Only documents of this source, e.g. forem.")
@click.option("--corpus", help="Only members of this corpus (a manifest's [corpus] name).")
@click.option(
    "--limit", type=click.IntRange(1), default=50, show_default=True, help="Show at most N hits."
)
@listing_options
@handle_errors
def search(
    warehouse: str,
    text: str,
    source: str | None,
    corpus: str | None,
    limit: int,
    fmt: str | None,
) -> None:
    """Find documents whose current text, as a reader sees it, contains TEXT as whole
    words (ignoring case), best first: ranked by how often it occurs, each hit shown in
    context.

    With a search index (receipts index), only the documents holding every word of TEXT
    are read, and those changed since the index was built are read as they are now; the
    hits are the same as without one, when every document is read (a line on stderr
    says so).

    A document is read as verify-quote reads it: HTML tags, Markdown syntax, entities and
    JSON keys are not text (searching 'p>' finds no HTML paragraph); a JSON record's string
    values are searched one at a time and a hit names its field. Tombstoned documents are
    left out; every body read is checked against its hash.

    \b
    Examples:
      receipts search "no defect found" --source nhtsa
      receipts search "stalled" --corpus cr-v-aeb --limit 10 --json
    """
    with Warehouse.open(warehouse, read_only=True) as wh:
        hits, reading = text_search.best_hits(wh, text, limit, source=source, corpus=corpus)
    if not reading.indexed:
        logline.emit(f"receipts: {reading.note}", event="search.full_scan", level="info")
    rows: list[dict[str, Any]] = [
        {
            "doc_id": hit.doc_id,
            "revision": hit.revision,
            "content_hash": hit.content_hash,
            "hits": hit.hits,
            "where": hit.where,
            "snippet": visible(hit.excerpt),
        }
        for hit in hits
    ]
    emit(
        rows,
        SEARCH_TEXT if fmt is None else SEARCH_ALL,
        fmt,
        empty=f"no document contains {text!r}",
    )


# -- the search index ---------------------------------------------------------------------
@click.command("index")
@warehouse_option
@json_option
@handle_errors
def index(warehouse: str, as_json: bool) -> None:
    """Build the search index: the words of every current document, so that search (here
    and in receipts serve) reads only the documents that hold every word of a phrase.

    The index replaces the previous one, in one transaction. A document revised, removed or
    added after the build is read directly by every search, so an index that is behind
    never hides a hit; it only makes searches slower until the next build. Ingest and
    backfill do not update it: run this after them (a schedule can run it after each
    refresh).

    \b
    Examples:
      receipts index
      receipts index --warehouse lake:catalog.ducklake --json
    """
    progress = steps_for("index: ", quiet=as_json or quiet())
    try:
        with Warehouse.open(warehouse) as wh:
            state = build_index(
                wh,
                document_hashes,
                WORDS_VERSION,
                lambda done, total: progress("documents read", done, total),
            )
    finally:
        progress.close()
    if as_json:
        emit_json({"warehouse": wh.location, **state.as_json()})
        return
    click.echo(
        f"{wh.location}: indexed {state.documents:,} documents, {state.postings:,} words "
        f"in {state.seconds:.1f}s (log entries up to {state.log_size:,})"
    )


# -- export --------------------------------------------------------------------------------
@click.command("export")
@click.argument(
    "manifest_file", metavar="[MANIFEST]", required=False, type=click.Path(path_type=Path)
)
@warehouse_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(EXPORT_FORMATS),
    default="parquet",
    show_default=True,
    help="File format (Parquet keeps bytes as BLOB; CSV and NDJSON as base64).",
)
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(path_type=Path, file_okay=False),
    help="Directory for documents, revisions and snapshots files.",
)
@click.option("--as-of", "as_of", metavar="RUN|DATE", help=f"Export as of: {POINT_HELP}.")
@json_option
@handle_errors
def export(
    manifest_file: Path | None,
    warehouse: str,
    fmt: str,
    out_dir: Path,
    as_of: str | None,
    as_json: bool,
) -> None:
    """Write documents, revisions (with their validity) and the snapshot bytes they cite to
    --out: all of the warehouse, or MANIFEST's corpus; --as-of keeps the revisions written
    by that point (validity as it stood then). Snapshots (in the order they were stored)
    and NDJSON files are written as streams, in bounded memory. Refuses, writing nothing,
    if a snapshot's bytes no longer hash to their address.

    \b
    Examples:
      receipts export manifests/cr-v-aeb.toml --format parquet --out out/export
      receipts export --format csv --out out/then --as-of 2026-11-01
    """
    corpus = _corpus(manifest_file, None)
    with Warehouse.open(warehouse, read_only=True) as wh:
        point = _point(wh, as_of, "--as-of")
        written = export_tables(wh, out_dir, fmt, corpus=corpus, point=point)
    if as_json:
        emit_json(
            {"files": [{"table": e.table, "path": str(e.path), "rows": e.rows} for e in written]}
        )
        return
    for item in written:
        click.echo(f"{item.path}: {item.rows:,} {item.table}")
