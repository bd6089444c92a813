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
from warehouse.errors import NotFound, UsageError
from warehouse.store import Warehouse
from warehouse.tlog import checkpoint as checkpoints
from warehouse.tlog import merkle, note, store, tiles
from warehouse.tlog.check import check_log
from warehouse.tlog.errors import CheckpointError, NoteError
from warehouse.tlog.heads import ENV_KEY, origin, reader
from warehouse.tlog.keys import make_key_file
from warehouse.tlog.proof import format_proof

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
        log_origin = origin(wh._con)
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


def _latest(wh: Warehouse) -> store.StoredCheckpoint:
    latest = store.latest_checkpoint(wh._con)
    if latest is None:
        raise NotFound(
            "the log has no checkpoint yet: a writing run (ingest, backfill) records one"
        )
    return latest


def _checkpoint_json(cp: store.StoredCheckpoint, log_origin: str, size: int) -> dict[str, Any]:
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
        latest = _latest(wh)
        log_origin, size = origin(wh._con), store.size(wh._con)
    if as_json:
        emit_json(_checkpoint_json(latest, log_origin, size))
        return
    click.echo(latest.note, nl=False)
    if latest.key_name is None:
        notice.warning("log: this checkpoint is unsigned (set %s)", ENV_KEY)


@log.command()
@click.argument("doc_id")
@warehouse_option
@click.option("--revision", type=int, help="The revision's entry (default: the current one).")
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
        con = wh._con
        if revision is None:
            top = con.execute(
                f"SELECT max(revision) FROM {store.ENTRIES} WHERE doc_id = $d", {"d": doc_id}
            ).fetchall()
            if not top or top[0][0] is None:
                raise NotFound(f"{doc_id} has no entry in the log")
            revision = int(top[0][0])
        found = store.entry_of_revision(con, doc_id, revision)
        if not found:
            raise NotFound(f"{doc_id} revision {revision} has no entry in the log")
        latest = _latest(wh)
        index = found[0].index
        if index >= latest.size:
            raise NotFound(
                f"{doc_id} revision {revision} (entry {index}) is not yet in a checkpoint "
                f"(the latest covers {latest.size} entries); the next writing run records one"
            )
        hashes = merkle.prove_record(latest.size, index, reader(con))
    data = format_proof(index, hashes, latest.note.encode())
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


def _outsider_problems(
    wh: Warehouse, kept: bytes, verifier: note.Verifier | None, log_origin: str
) -> tuple[list[str], int | None]:
    """Whether the log extends a checkpoint an outsider kept: its origin, its signature (when
    a key is given), and the tree of its size."""
    try:
        if verifier is not None:
            head = checkpoints.open(kept, [verifier], log_origin)
        else:
            text = kept.decode() if b"\n\n" not in kept else note.parse(kept)[0]
            head = checkpoints.parse(text, log_origin)
    except (NoteError, CheckpointError, UnicodeDecodeError) as exc:
        return [f"the kept checkpoint is refused: {exc}"], None
    size = store.size(wh._con)
    if head.size > size:
        return [
            f"the kept checkpoint has {head.size} entries; the log now holds {size} "
            "(entries were removed)"
        ], head.size
    read = reader(wh._con)
    if merkle.tree_hash(head.size, read) != head.root:
        return [
            f"the log is not consistent with the kept checkpoint of size {head.size}: "
            "its first entries were rewritten"
        ], head.size
    latest = store.latest_checkpoint(wh._con)
    if latest is not None and latest.size >= head.size:
        try:
            proof = merkle.prove_tree(latest.size, head.size, read)
            merkle.check_tree(proof, latest.size, latest.root, head.size, head.root)
        except merkle.ProofError as exc:
            return [f"the latest checkpoint does not extend the kept one: {exc}"], head.size
    return [], head.size


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
    Example:
      receipts log verify --checkpoint kept-checkpoint --key "$(cat verifier.txt)"
    """
    verifier = _verifier(key)
    with Warehouse.open(warehouse, read_only=True) as wh:
        report = check_log(wh)
        problems = [p["message"] for p in report.problems]
        log_origin = origin(wh._con)
        latest = store.latest_checkpoint(wh._con)
        if verifier is not None and latest is not None:
            try:
                checkpoints.open(latest.note.encode(), [verifier], log_origin)
            except (NoteError, CheckpointError) as exc:
                problems.append(f"the latest checkpoint is refused: {exc}")
        kept_size = None
        if kept is not None:
            found, kept_size = _outsider_problems(wh, kept.read_bytes(), verifier, log_origin)
            problems += found
    if as_json:
        emit_json(
            {
                "size": report.size,
                "checkpoints": report.checkpoints,
                "origin": log_origin,
                "latest_checkpoint": None if latest is None else latest.size,
                "kept_checkpoint": kept_size,
                "ok": not problems,
                "problems": report.problems,
                "messages": problems,
            }
        )
    else:
        click.echo(f"log: {report.size:,} entries, {report.checkpoints:,} checkpoints")
        for message in problems:
            click.echo(f"  {message}")
        if not problems:
            click.echo(
                "  the log matches the rows"
                + (
                    f" and extends the kept checkpoint of size {kept_size}"
                    if kept_size is not None
                    else ""
                )
            )
    sys.exit(exits.for_check(not problems))


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
    since the last publish there.

    \b
    Example:
      receipts log publish --out public/log && rsync -a public/log/ host:/srv/log/
    """
    out.mkdir(parents=True, exist_ok=True)
    with Warehouse.open(warehouse, read_only=True) as wh:
        latest = _latest(wh)
        if latest.key_name is None:
            raise UsageError(
                f"the latest checkpoint is unsigned; set {ENV_KEY} (receipts log init) and "
                "run a writing command, then publish"
            )
        old = tiles.published_size(out)
        con = wh._con

        def read_entries(start: int, end: int) -> list[bytes]:
            return [e.entry for e in store.read_entries(con, start, end)]

        written = tiles.write_tiles(
            out,
            min(old, latest.size),
            latest.size,
            reader(con),
            read_entries,
            latest.note.encode(),
        )
    if as_json:
        emit_json(
            {"out": str(out), "size": latest.size, "previous_size": old, "written": len(written)}
        )
    else:
        click.echo(f"published {latest.size:,} entries to {out}: {len(written):,} files written")


COMMANDS = [log]
