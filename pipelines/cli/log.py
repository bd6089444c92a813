"""``receipts log``: the transparency log of every revision and push (docs/transparency-log.md):
make a signing key, show the latest checkpoint, prove an entry, verify the log against the
rows, publish it as static tiles."""

from __future__ import annotations

import base64
import logging
import sys
from pathlib import Path
from typing import Any

import click

from pipelines.cli import exits
from pipelines.cli.common import emit_json, handle_errors, json_option, warehouse_option
from warehouse.errors import UsageError
from warehouse.store import Warehouse
from warehouse.tlog import log as tlog
from warehouse.tlog import note
from warehouse.tlog.errors import NoteError
from warehouse.tlog.heads import ENV_KEY
from warehouse.tlog.keys import make_key_file
from warehouse.tlog.store import StoredCheckpoint

notice = logging.getLogger("receipts.log")


@click.group()
def log() -> None:
    """The transparency log: one entry per revision, tombstone, restoration and push, in a
    Merkle tree whose signed checkpoints outsiders can keep and check.

    \b
    Example:
      receipts log init --key ~/.receipts-log.key   # once; prints the verifier key
      export RECEIPTS_LOG_KEY=~/.receipts-log.key    # runs then sign their checkpoints
      receipts log prove nhtsa/complaint/11561420 --out entry.tlog-proof
      receipts log verify --checkpoint kept-checkpoint --key 'receipts/...+1a2b3c4d+AQ...'
    """


@log.command()
@warehouse_option
@click.option(
    "--key",
    "key_file",
    type=click.Path(path_type=Path, dir_okay=False),
    envvar=ENV_KEY,
    required=True,
    help=f"The key file to make (mode 0600; never overwritten). Env: {ENV_KEY}.",
)
@click.option("--name", help="The key's name (default: the log's origin).")
@json_option
@handle_errors
def init(warehouse: str, key_file: Path, name: str | None, as_json: bool) -> None:
    """Make the Ed25519 key that signs the log's checkpoints and print its verifier key
    (``name+keyhash+base64``), the string outsiders check checkpoints with. Point
    RECEIPTS_LOG_KEY at the file so that runs sign their checkpoints.

    \b
    Example:
      receipts log init --key ~/.receipts-log.key
    """
    with Warehouse.open(warehouse) as wh:
        log_origin = tlog.origin(wh)
    signer = make_key_file(key_file, name or log_origin)
    verifier = str(signer.verifier)
    if as_json:
        emit_json(
            {
                "key_file": str(key_file),
                "name": signer.name,
                "verifier": verifier,
                "origin": log_origin,
            }
        )
        return
    click.echo(verifier)
    notice.info("log: key written to %s (mode 0600); set %s=%s", key_file, ENV_KEY, key_file)


def _checkpoint_json(cp: StoredCheckpoint, log_origin: str, size: int) -> dict[str, Any]:
    return {
        "origin": log_origin,
        "size": cp.size,
        "root": base64.b64encode(cp.root).decode(),
        "signed": cp.key_name is not None,
        "key_name": cp.key_name,
        "run_id": cp.run_id,
        "recorded_at": cp.recorded_at.isoformat(),
        "log_size": size,
        "note": cp.note,
    }


@log.command(name="checkpoint")
@warehouse_option
@json_option
@handle_errors
def checkpoint_command(warehouse: str, as_json: bool) -> None:
    """Print the latest checkpoint: the signed note (or, unsigned, its text), as outsiders
    keep it.

    \b
    Example:
      receipts log checkpoint > kept-checkpoint
    """
    with Warehouse.open(warehouse, read_only=True) as wh:
        latest = tlog.latest_checkpoint(wh)
        log_origin, size = tlog.origin(wh), tlog.size(wh)
    if as_json:
        emit_json(_checkpoint_json(latest, log_origin, size))
        return
    click.echo(latest.note, nl=False)
    if latest.key_name is None:
        notice.warning("log: this checkpoint is unsigned (set %s)", ENV_KEY)


@log.command()
@click.argument("doc_id")
@warehouse_option
@click.option(
    "--revision", type=click.IntRange(1), help="The revision's entry (default: the current one)."
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write the proof to this file (default: stdout).",
)
@handle_errors
def prove(warehouse: str, doc_id: str, revision: int | None, out: Path | None) -> None:
    """Print the inclusion proof of DOC_ID's revision (its current one by default) against
    the latest checkpoint, as a C2SP tlog-proof: the entry's index, the proof hashes, the
    signed checkpoint. O(log n) reads.

    \b
    Example:
      receipts log prove nhtsa/complaint/11561420 --revision 2 --out c.tlog-proof
    """
    with Warehouse.open(warehouse, read_only=True) as wh:
        data = tlog.prove(wh, doc_id, revision).data
    if out is None:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        out.write_bytes(data)


def _verifier(text: str | None) -> note.Verifier | None:
    if text is None:
        return None
    try:
        return note.parse_verifier(text)
    except NoteError as exc:
        raise UsageError(f"--key: {exc}") from None


@log.command(name="verify")
@warehouse_option
@click.option(
    "--checkpoint",
    "kept",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="An older checkpoint kept outside: check the log is consistent with it.",
)
@click.option("--key", help="The verifier key (name+keyhash+base64) checkpoints must be signed by.")
@json_option
@handle_errors
def verify_command(warehouse: str, kept: Path | None, key: str | None, as_json: bool) -> None:
    """Rebuild the log from the warehouse's rows and check it: every entry against its row,
    the stored tree against the entries, the latest checkpoint against the tree (and its
    signature, with --key), and that the log extends a checkpoint kept outside
    (--checkpoint). Exit 1 naming the first bad entry.

    \b
    Examples:
      receipts log verify
      receipts log verify --json
    """
    verifier = _verifier(key)
    kept_bytes = None if kept is None else kept.read_bytes()
    with Warehouse.open(warehouse, read_only=True) as wh:
        result = tlog.verify(wh, kept_bytes, verifier)
    if as_json:
        emit_json(
            {
                "size": result.size,
                "checkpoints": result.checkpoints,
                "origin": result.origin,
                "latest_checkpoint": result.latest_size,
                "kept_checkpoint": result.kept_size,
                "ok": result.ok,
                "problems": result.problems,
                "refusals": result.refusals,
            }
        )
    else:
        click.echo(f"log: {result.size:,} entries, {result.checkpoints:,} checkpoints")
        for message in result.messages:
            click.echo(f"  {message}")
        if result.ok:
            kept_line = ""
            if result.kept_size is not None:
                kept_line = f" and extends the kept checkpoint of size {result.kept_size}"
            click.echo(f"  the log matches the rows{kept_line}")
    sys.exit(exits.for_check(result.ok))


@log.command()
@warehouse_option
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    required=True,
    help="The directory of the static log (tiles, entry bundles, checkpoint).",
)
@json_option
@handle_errors
def publish(warehouse: str, out: Path, as_json: bool) -> None:
    """Write the log up to its latest (signed) checkpoint as C2SP tlog-tiles static files
    into --out, with entry bundles and the checkpoint: only the tiles that are new or grew
    since the last publish there. Copy the directory to any static host or bucket.

    \b
    Example:
      receipts log publish --out public/log
    """
    with Warehouse.open(warehouse, read_only=True) as wh:
        published = tlog.publish(wh, out)
    if as_json:
        emit_json(
            {
                "out": str(out),
                "size": published.size,
                "previous_size": published.previous_size,
                "written": len(published.written),
            }
        )
    else:
        click.echo(
            f"published {published.size:,} entries to {out}: "
            f"{len(published.written):,} files written"
        )
