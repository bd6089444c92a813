"""Commands over the revisions a warehouse keeps: ``drift`` (between runs), ``diff``
(between two revisions), ``as-of`` (the corpus at a point) and ``verify-quote`` (a quote
against its revision).

Each one opens the warehouse read-only, asks :mod:`warehouse.drift`, :mod:`warehouse.asof`
or :mod:`warehouse.history`, and hands the answer to a pure renderer or checker. ``drift
--pins`` hands over to the pinned-file drift of :mod:`pipelines.cli.pins`.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from pipelines.checks.diffing import diff_snapshots
from pipelines.checks.quote import RevisionText, check_quote
from pipelines.checks.target_drift import read_target_drift
from pipelines.cli import exits
from pipelines.cli.common import (
    emit_json,
    handle_errors,
    http_factory,
    http_options,
    json_option,
    warehouse_option,
)
from pipelines.cli.hash_option import hash_option
from pipelines.cli.listing import (
    diff_style,
    echo_lines,
    echo_table,
    emit,
    emit_json_listing,
    listing_options,
    page_options,
    text_table,
)
from pipelines.cli.pins import report_pin_drift
from pipelines.manifest import load_manifest
from pipelines.refresh import metadata_fields
from pipelines.reports.corpora import render_corpora
from pipelines.reports.drift_model import DriftReport, build_report
from pipelines.reports.formats import FORMATS, render
from pipelines.reports.wording import field_phrase, size_phrase, to_second
from pipelines.reports.wording import short as short_hash
from pipelines.visible import visible
from sources.registry import SOURCES
from warehouse import history
from warehouse.asof import (
    Point,
    iter_as_of,
    known_corpora,
    known_sources,
    resolve_point,
    utc_iso,
)
from warehouse.clock import now
from warehouse.drift import compare, default_points, refreshed_corpora, snapshot_bodies
from warehouse.errors import NotFound, PointError, QuoteError
from warehouse.hash_prefix import check_hash_prefix
from warehouse.store import Warehouse

POINT_HELP = (
    "a run id (e.g. 3), an ISO-8601 date or date-time (2026-11-01 means 00:00 UTC; "
    "no offset means UTC), a time ago ('2 days ago', '6 hours ago', yesterday), or now"
)


def _point(warehouse: Warehouse, text: str, option: str) -> Point:
    try:
        return resolve_point(warehouse, text)
    except PointError as exc:
        raise click.BadParameter(str(exc), param_hint=option) from None


def _optional_point(warehouse: Warehouse, text: str | None, option: str) -> Point | None:
    return None if text is None else _point(warehouse, text, option)


# -- drift ---------------------------------------------------------------------------------
@click.command("drift")
@click.argument(
    "manifest_file", metavar="[MANIFEST]", required=False, type=click.Path(path_type=Path)
)
@warehouse_option
@click.option("--since", metavar="RUN|DATE", help=f"Compare from this point: {POINT_HELP}.")
@click.option(
    "--until", metavar="RUN|DATE", help="Compare up to this point (default: the newest run)."
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default=None,
    help="Report format: text (default), json, md, or html (one self-contained file).",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write the report to FILE and print a one-line summary instead.",
)
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=1000,
    show_default=True,
    help="List at most N drifted documents; the counts always cover every document.",
)
@click.option(
    "--fail-on-drift",
    is_flag=True,
    help="Exit 3 when any document is new, changed, gone or restored (with --pins: when a "
    "pinned file changed or was deleted at --ref). A change of a source's metadata fields "
    "only (a Forem author's profile) is listed apart and is not drift.",
)
@click.option(
    "--pins",
    "pins_manifest",
    metavar="MANIFEST",
    type=click.Path(path_type=Path),
    help="Instead of the warehouse: compare every pinned GitHub file of MANIFEST with its "
    "bytes at --ref.",
)
@click.option(
    "--ref", metavar="REF", help="With --pins: the branch or tag the pins track (default: main)."
)
@click.option(
    "--target",
    is_flag=True,
    help="With a MANIFEST: also read the publish target (Sanity when SANITY_* are set, else "
    "the NDJSON file) and list documents edited or deleted there since our last push, and "
    "open drafts. Reported only; nothing is written.",
)
@click.option(
    "--target-out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="With --target: the NDJSON file the corpus is published to (default out/<corpus>.ndjson).",
)
@http_options
@json_option
@handle_errors
def drift(
    manifest_file: Path | None,
    warehouse: str,
    since: str | None,
    until: str | None,
    fmt: str | None,
    out: Path | None,
    limit: int,
    fail_on_drift: bool,
    pins_manifest: Path | None,
    ref: str | None,
    target: bool,
    target_out: Path | None,
    record_dir: Path | None,
    replay_dir: Path | None,
    as_json: bool,
) -> None:
    """What drifted between two runs: per source, how many documents are new, changed,
    unchanged, gone or restored, then each drifted document with its old and new revision
    and hash, its timeline of revisions, and what changed (the JSON fields of a record, a
    short unified diff of a text file).

    By default it compares the last two finished runs of MANIFEST's corpus. Without a
    MANIFEST, in a warehouse of several corpora, each corpus's last two finished runs, one
    report per corpus (with --json: {"corpora": [...]}); of one corpus, its last two runs;
    with a single run, everything is new. --since/--until without a
    MANIFEST compare every document between those points. With a MANIFEST a document
    counts only while it is a member of that corpus, and leaving the corpus is "gone".

    With --pins MANIFEST [--ref REF] it reports pinned-file drift against GitHub instead:
    for every pinned file, changed, unchanged or deleted at the ref.

    Exit 0, or 3 with --fail-on-drift when something drifted; 2 for a bad argument.

    \b
    Examples:
      receipts drift manifests/cr-v-aeb.toml --since "7 days ago" --format md --out drift.md
      receipts drift --fail-on-drift      # every corpus's latest changes; exit 3 if any
    """
    if pins_manifest is not None:
        given = [
            name
            for name, value in (
                ("MANIFEST", manifest_file),
                ("--since", since),
                ("--until", until),
                ("--format", fmt),
                ("--out", out),
            )
            if value is not None
        ]
        if given:
            raise click.UsageError(
                f"--pins compares pinned files with GitHub; drop {', '.join(given)}"
            )
        report_pin_drift(
            pins_manifest, ref or "main", fail_on_drift, as_json, record_dir, replay_dir
        )
        return
    if ref is not None:
        raise click.UsageError("--ref goes with --pins")
    if as_json and fmt not in (None, "json"):
        raise click.UsageError("--json is --format json; give one of them")
    fmt = "json" if as_json else (fmt or "text")
    loaded = load_manifest(manifest_file) if manifest_file is not None else None
    corpus = loaded.name if loaded is not None else None
    if target and loaded is None:
        raise click.UsageError("--target needs a MANIFEST (its namespace is what is read)")
    if not target and (record_dir or replay_dir):
        raise click.UsageError("--record and --replay go with --pins or --target")
    with Warehouse.open(warehouse, read_only=True) as wh:
        every = corpus is None and since is None and until is None
        corpora = refreshed_corpora(wh) if every else []
        if len(corpora) > 1:  # every corpus's latest changes, each its own report
            reports = [_drift_report(wh, name, None, None, limit) for name in corpora]
            text = render_corpora(reports, fmt)
        else:
            report = _drift_report(
                wh,
                corpus,
                _optional_point(wh, since, "--since"),
                _optional_point(wh, until, "--until"),
                limit,
            )
            if loaded is not None and target:
                http = http_factory(record_dir, replay_dir)
                try:
                    target_report = read_target_drift(loaded, wh, http=http, out=target_out)
                finally:
                    http.close()
                report = replace(report, target_drift=target_report)
            reports = [report]
            text = render(report, fmt)
    if out is None:
        click.echo(text, nl=False)
    else:
        out.write_text(text, encoding="utf-8")
        totals = {k: sum(r.drift.totals[k] for r in reports) for k in reports[0].drift.totals}
        listed = ", ".join(f"{k} {v:,}" for k, v in totals.items())
        metadata_total = sum(r.drift.metadata_total for r in reports)
        if metadata_total:
            listed += f"; metadata only {metadata_total:,}"
        click.echo(f"{fmt} drift report written to {out}: {listed}")
    found = any(r.found for r in reports)
    sys.exit(exits.for_drift(found, fail_on_drift))


def _drift_report(
    wh: Warehouse, corpus: str | None, since: Point | None, until: Point | None, limit: int
) -> DriftReport:
    """The drift report of ``corpus`` (every document if None) between two points, by
    default its last two finished runs."""
    start, end = default_points(wh, corpus, since, until)
    try:
        result = compare(wh, start, end, corpus=corpus, limit=limit, metadata=metadata_fields())
    except PointError as exc:
        raise click.BadParameter(str(exc), param_hint="--since/--until") from None
    return build_report(wh, result, now())


# -- diff ----------------------------------------------------------------------------------
def _find(
    doc_id: str,
    revisions: list[dict[str, Any]],
    *,
    number: int | None = None,
    hash_prefix: str | None = None,
) -> dict[str, Any]:
    """The revision with this number, or the (newest) one whose hash starts with the prefix."""
    if number is not None:
        chosen = [r for r in revisions if r["revision"] == number]
        what = f"revision {number}"
    else:
        prefix = check_hash_prefix(hash_prefix or "", name="hash prefix")
        chosen = [r for r in revisions if (r["content_hash"] or "").startswith(prefix)]
        what = f"revision with hash {hash_prefix}"
        if len({r["content_hash"] for r in chosen}) > 1:
            raise NotFound(f"hash prefix {hash_prefix!r} is ambiguous for {doc_id}")
    if not chosen:
        raise NotFound(f"{doc_id} has no {what}; it has revisions 1..{len(revisions)}")
    return chosen[-1]


def _pick(doc_id: str, revisions: list[dict[str, Any]], ref: str) -> dict[str, Any]:
    """A revision with content, by number (``2``) or by content-hash prefix (7+ chars)."""
    if ref.isdigit() and len(ref) < 7:
        picked = _find(doc_id, revisions, number=int(ref))
    else:
        picked = _find(doc_id, revisions, hash_prefix=ref)
    if picked["tombstone"]:
        raise NotFound(
            f"{doc_id} revision {picked['revision']} is a tombstone "
            f"({picked['tombstone_reason']}); it has no bytes to compare"
        )
    return picked


def _pair(
    doc_id: str, revisions: list[dict[str, Any]], a: str | None, b: str | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    with_content = [r for r in revisions if not r["tombstone"]]
    if a is None:
        if len(with_content) < 2:
            have = ", ".join(str(r["revision"]) for r in with_content) or "none"
            raise NotFound(
                f"{doc_id} has fewer than two revisions with content (have: {have}); "
                "nothing to compare"
            )
        return with_content[-2], with_content[-1]
    old = _pick(doc_id, revisions, a)
    if b is None:
        if not with_content:
            raise NotFound(f"{doc_id} has no revision with content")
        return old, with_content[-1]
    return old, _pick(doc_id, revisions, b)


def _revision_json(rev: dict[str, Any], media_type: str) -> dict[str, Any]:
    return {
        "revision": rev["revision"],
        "content_hash": rev["content_hash"],
        "media_type": media_type,
        "valid_from_run": rev["valid_from_run"],
        "valid_from": utc_iso(datetime.fromisoformat(rev["valid_from"])),
    }


def _revision_line(rev: dict[str, Any]) -> str:
    return (
        f"revision {rev['revision']}  {rev['content_hash']}  "
        f"(run {rev['valid_from_run']}, {to_second(rev['valid_from'])})"
    )


@click.command("diff")
@click.argument("doc_id")
@click.argument("a", metavar="[A]", required=False)
@click.argument("b", metavar="[B]", required=False)
@warehouse_option
@json_option
@handle_errors
def diff(doc_id: str, a: str | None, b: str | None, warehouse: str, as_json: bool) -> None:
    """What changed in DOC_ID between revisions A and B: the JSON fields of a record, a
    unified diff of a text file.

    A and B are revision numbers or content-hash prefixes (7 or more hex characters).
    Without them: the last two revisions with content; with only A: A against the newest
    revision with content.

    \b
    Examples:
      receipts diff nhtsa/recall/22V999101
      receipts diff nhtsa/recall/22V999101 1 2 --json
    """
    with Warehouse.open(warehouse, read_only=True) as wh:
        revisions = history.history(wh, doc_id)
        old, new = _pair(doc_id, revisions, a, b)
        (old_media, old_body), (new_media, new_body) = history.revision_pair_bodies(
            wh, doc_id, old, new
        )
    result = diff_snapshots(
        old_body,
        old_media,
        new_body,
        new_media,
        old_label=f"revision {old['revision']}",
        new_label=f"revision {new['revision']}",
        max_fields=10_000,
        max_lines=100_000,
        max_bytes=None,
    )
    identical = old["content_hash"] == new["content_hash"]
    old_json, new_json = _revision_json(old, old_media), _revision_json(new, new_media)
    if as_json:
        emit_json(
            {
                "doc_id": doc_id,
                "old": old_json,
                "new": new_json,
                "identical": identical,
                "diff": result.as_json(),
            }
        )
        return
    lines = [doc_id, f"  - {_revision_line(old_json)}", f"  + {_revision_line(new_json)}"]
    if identical:
        lines.append("  identical content")
    elif result.kind == "json":
        lines.extend(f"  {field_phrase(change)}" for change in result.fields)
    elif result.kind == "text":
        lines.extend(f"  {line}" for line in result.lines)
    else:
        lines.append(f"  {size_phrase(result)}")
    # upstream text: its control characters are shown, not obeyed; paged on a terminal
    echo_lines((visible(line) for line in lines), style=diff_style)


# -- as-of ---------------------------------------------------------------------------------
AS_OF_TEXT = ["doc_id", "revision", "content_hash"]
AS_OF_ALL = ["doc_id", "source", "kind", "revision", "content_hash", "valid_from_run"]


@click.command("as-of")
@click.argument("point_text", metavar="RUN|DATE")
@click.option("--source", help="Only documents of this source, e.g. nhtsa.")
@click.option(
    "--corpus",
    metavar="NAME",
    help="Only documents that were members of this corpus (a manifest's name) then.",
)
@warehouse_option
@page_options
@listing_options
@handle_errors
def as_of_command(
    point_text: str,
    source: str | None,
    corpus: str | None,
    warehouse: str,
    limit: int | None,
    offset: int,
    fmt: str | None,
) -> None:
    """The corpus as it stood at RUN (after that run), at DATE, or now: every document
    that had content then, with the revision and content hash it had.

    DATE is ISO-8601: 2026-11-01 means 00:00 UTC that day; a date-time without an offset
    is UTC. Documents that were tombstoned at that point are left out.

    \b
    Examples:
      receipts as-of 3 --corpus cr-v-aeb
      receipts as-of 2026-11-01 --source nhtsa --csv > corpus.csv
    """
    with Warehouse.open(warehouse, read_only=True) as wh:
        point = _point(wh, point_text, "RUN|DATE")
        if source is not None:
            valid = sorted(set(SOURCES) | set(known_sources(wh)))
            if source not in valid:
                raise click.BadParameter(
                    f"unknown source {source!r}; valid: {', '.join(valid)}", param_hint="--source"
                )
        if corpus is not None and corpus not in (corpora := known_corpora(wh)):
            raise click.BadParameter(
                f"no corpus {corpus!r} in the warehouse; known: {', '.join(corpora) or 'none'}",
                param_hint="--corpus",
            )
        listed = iter_as_of(wh, point, source, corpus, limit=limit, offset=offset)
        if fmt in ("json", "nl", "csv"):  # written as read: a corpus can be millions
            documents = (row.as_json() for row in listed)
            if fmt == "json":
                head = {"point": point.as_json(), "source": source, "corpus": corpus}
                emit_json_listing(head, "documents", documents)
            else:
                emit(documents, AS_OF_ALL, fmt)
            return
        table = text_table((row.as_json() for row in listed), AS_OF_TEXT)
    name = f"corpus {corpus}" if corpus else "corpus"
    of = f" ({source})" if source else ""
    noun = "document" if table.rows == 1 else "documents"
    click.echo(f"{name}{of} as of {point.label}: {table.rows:,} {noun}")
    if table.rows:
        echo_table(table)


# -- verify-quote --------------------------------------------------------------------------
def _revision_texts(
    wh: Warehouse, doc_id: str, revisions: list[dict[str, Any]]
) -> list[RevisionText]:
    hashes = [r["content_hash"] for r in revisions if r["content_hash"]]
    bodies = snapshot_bodies(wh, hashes, doc_id)
    out = []
    for r in revisions:
        media_type, body = bodies.get(r["content_hash"], (None, None))
        out.append(
            RevisionText(r["revision"], r["content_hash"], media_type, body, r["tombstone_reason"])
        )
    return out


@click.command("verify-quote")
@click.argument("doc_id")
@click.argument("quote")
@hash_option("The cited content hash, or its start")
@click.option("--revision", type=click.IntRange(1), metavar="N", help="The cited revision number.")
@warehouse_option
@json_option
@handle_errors
def verify_quote(
    doc_id: str,
    quote: str,
    content_hash: str | None,
    revision: int | None,
    warehouse: str,
    as_json: bool,
) -> None:
    """Check that QUOTE occurs in the cited revision of DOC_ID (the current one unless
    --hash or --revision names it), as a reader would see the text: HTML markup, rendered
    Markdown (CommonMark with GFM tables), entities, whitespace, invisible characters and
    canonically equivalent Unicode forms do not matter; every visible character does
    (E=mc2 is not E=mc², a straight quote is not a curly one).

    Exit 0 only when the cited revision contains the quote. Otherwise exit 1 and say which
    revisions, if any, do contain it, e.g. "quote matches revision 1 (hash …), but the cited
    revision 2 does not contain it".

    \b
    Example:
      receipts verify-quote nhtsa/recall/22V999101 "Remedy not yet available." --revision 1
    """
    if revision is not None and content_hash is not None:
        raise click.UsageError("give --hash or --revision, not both")
    with Warehouse.open(warehouse, read_only=True) as wh:
        revisions = history.history(wh, doc_id)
        texts = _revision_texts(wh, doc_id, revisions)
    cited_by, cited = "current", revisions[-1]
    if revision is not None:
        cited_by, cited = "revision", _find(doc_id, revisions, number=revision)
    elif content_hash is not None:
        cited_by, cited = "hash", _find(doc_id, revisions, hash_prefix=content_hash)
    try:
        verdict = check_quote(doc_id, quote, texts, cited["revision"], cited_by)
    except QuoteError as exc:
        raise click.BadParameter(str(exc), param_hint="QUOTE") from None
    if as_json:
        emit_json(verdict.as_json())
    elif verdict.ok:
        click.echo(visible(f"ok: {verdict.message()}"))
        if verdict.cited.excerpt:
            click.echo(visible(f"  {verdict.cited.excerpt}"))
    else:
        click.echo(visible(f"MISMATCH: {verdict.message()}"))
        for r in verdict.containing:
            click.echo(
                visible(f"  revision {r.revision} ({short_hash(r.content_hash)}): {r.excerpt}")
            )
    sys.exit(exits.for_check(verdict.ok))
