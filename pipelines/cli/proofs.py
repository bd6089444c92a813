"""``receipts prove`` and ``receipts verify-bundle``: proof bundles (docs/proof-bundles.md)
written from the warehouse, and checked with the single-file verifier (the same file
``--print-verifier`` prints)."""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path

import click

from pipelines.cli.common import emit_json, handle_errors, json_option, warehouse_option
from pipelines.cli.hash_option import hash_option
from warehouse.store import Warehouse

VERIFIER_FILE = "verify_receipt.py"


@click.command("prove")
@click.argument("doc_id")
@click.argument("quote")
@click.option("--revision", type=click.IntRange(1), metavar="N", help="The cited revision number.")
@hash_option("The cited content hash, or its start")
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    required=True,
    help="The bundle file to write (by convention *.receipt.json).",
)
@click.option(
    "--html",
    "html",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Also write the proof page: one HTML file that checks the bundle in the reader's "
    "browser (Web Crypto) and shows the quote in its document.",
)
@warehouse_option
@json_option
@handle_errors
def prove(
    doc_id: str,
    quote: str,
    revision: int | None,
    content_hash: str | None,
    out: Path,
    html: Path | None,
    warehouse: str,
    as_json: bool,
) -> None:
    """Write the proof bundle of QUOTE in DOC_ID's revision (the current one unless
    --revision or --hash names it): one JSON file anyone can check offline with
    `receipts verify-bundle` or the single-file verifier. It holds the snapshot's bytes, the
    quote's location (a JSON Pointer and code-point offsets) with its context, the upstream
    URL, capture time and Robust Links attributes, and the revision's log entry with its
    inclusion proof and the latest signed checkpoint. With --html, also the proof page
    (docs/proof-page.md): open it in a browser to see each step checked.

    The log's key must be set (RECEIPTS_LOG_KEY, made by `receipts log init`) and the latest
    checkpoint signed with it. Exit 1 when the revision does not hold the quote, or holds it
    only across markup (no span of the stored text reads as the quote).

    \b
    Example:
      receipts prove nhtsa/complaint/11561420 "the brakes failed" --out c.receipt.json
      receipts prove nhtsa/complaint/11561420 "stalled" --out s.receipt.json --html s.html
    """
    from pipelines.proofs.bundle import bundle_bytes
    from pipelines.proofs.make import prove as make_bundle

    if revision is not None and content_hash is not None:
        raise click.UsageError("give --hash or --revision, not both")
    with Warehouse.open(warehouse, read_only=True) as wh:
        bundle = make_bundle(wh, doc_id, quote, revision, content_hash)
    from pipelines.proofs.files import write_all

    write_all(out.parent, [(out.name, bundle_bytes(bundle))])  # whole or not at all
    if html is not None:
        from pipelines.proofs_html import render_bundle_html

        write_all(html.parent, [(html.name, render_bundle_html(bundle).encode("utf-8"))])
    document, located = bundle["document"], bundle["quote"]["locator"]
    if as_json:
        emit_json(
            {
                "out": str(out),
                "html": None if html is None else str(html),
                "doc_id": document["doc_id"],
                "revision": document["revision"],
                "content_hash": bundle["snapshot"]["content_hash"],
                "locator": located,
                "verifier_key": bundle["log"]["verifier_key"],
            }
        )
        return
    where = located["pointer"] if located["pointer"] is not None else "the text"
    click.echo(
        f"wrote {out}: {document['doc_id']} revision {document['revision']}, "
        f"{where} [{located['start']}:{located['end']}]"
        + ("" if html is None else f"; the proof page: {html}")
    )


def verifier_source() -> str:
    """The text of the single-file verifier, as the installed package holds it."""
    return resources.files("pipelines.proofs").joinpath(VERIFIER_FILE).read_text("utf-8")


@click.command("verify-bundle")
@click.argument("file", required=False, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--key", help="The verifier key (name+keyhash+base64) you trust for the log.")
@click.option(
    "--print-verifier",
    is_flag=True,
    help="Print the single-file verifier (Python, standard library and cryptography only).",
)
@json_option
@handle_errors
def verify_bundle(file: Path | None, key: str | None, print_verifier: bool, as_json: bool) -> None:
    """Check a proof bundle, every step named: format, snapshot (bytes and hash), quote (its
    location and words), entry (the log entry names this revision), inclusion (the proof
    leads to the checkpoint's root) and checkpoint (signed by the bundle's verifier key,
    which must be --key when given). Needs no warehouse.

    Exit 0 when every step holds, 1 when one fails, 2 when the file cannot be read.
    --print-verifier prints the verifier this command runs, to keep and run as
    `python verify_receipt.py FILE [--key K] [--json]` where receipts is not installed.

    \b
    Examples:
      receipts verify-bundle c.receipt.json --key 'receipts/1a2b+1a2b3c4d+AQ...'
      receipts verify-bundle --print-verifier > verify_receipt.py
    """
    if print_verifier:
        if file is not None:
            raise click.UsageError("--print-verifier takes no FILE")
        click.echo(verifier_source(), nl=False)
        return
    if file is None:
        raise click.UsageError("give the bundle FILE to check (or --print-verifier)")
    from pipelines.proofs import verify_receipt

    argv = [str(file), *(["--key", key] if key is not None else [])]
    argv += ["--json"] if as_json else []
    sys.exit(verify_receipt.main(argv))
