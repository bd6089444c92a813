"""Every error receipts raises on purpose, in one tree.

It sits in the bottom layer (``warehouse``) so that every layer above can raise from it
without importing upwards. Each class is a sentence a user can act on; the command line
turns them into one line on stderr and an exit code (``pipelines/cli/exits.py``). Anything
raised that is *not* a ``ReceiptsError`` is a bug: the command line says "internal error",
shows the traceback only with ``--debug``, and the run ledger records it as such.

    ReceiptsError
    ├── UsageError                   the command or the manifest asks for the impossible (2)
    │   ├── ManifestError            a manifest is missing, unreadable or invalid
    │   ├── NamespaceTaken           another corpus publishes the namespace to the target
    │   ├── QueryRefused             ``receipts query`` was given anything but one SELECT
    │   ├── QueryFailed              DuckDB refused an ad-hoc query (a typo, no such table)
    │   ├── SettingsError            a setting (variable, config or secrets file) is bad
    │   ├── BadParameter             a web request's parameter cannot be read (``serve``: 400)
    │   └── NotAWarehouse            the file named as the warehouse is something else
    ├── UpstreamError                an upstream did not give what an entry needs
    │   ├── HttpError                an HTTP exchange gave no usable response
    │   │   ├── TransientHttpError   worth retrying: the network failed, or "slow down"
    │   │   │   └── CorruptBody      a compressed body that does not decompress
    │   │   └── TerminalHttpError    not worth retrying: the server said no
    │   │       ├── BodyTooLarge
    │   │       ├── HostNotAllowed
    │   │       ├── RetryBudgetExhausted
    │   │       ├── RateLimited      GitHub's limit resets too far ahead to wait for
    │   │       └── NotRecorded      a replayed session has no recording of the request
    │   ├── SourceError              an entry could not be fetched, or its bytes were refused
    │   │   ├── NotFoundUpstream
    │   │   ├── FileRefused
    │   │   └── PinError
    │   │       └── ManifestNotPinnable
    │   └── ParseError               a body or file does not have the documented shape
    │       ├── NhtsaParseError
    │       ├── FlatFileError
    │       └── TreeError
    ├── IntegrityError               a value cannot be stored faithfully
    │   ├── CanonicalFormError       no canonical JSON form (NaN, a huge integer, …)
    │   ├── IdentityError            no identity can be formed from the given parts
    │   ├── SnapshotCorrupted        stored bytes no longer hash to their address
    │   ├── LogMismatch              rows disagree with their transparency-log entries
    │   └── LogEntryError            bytes that are not a log entry of a known version
    ├── WarehouseError               the warehouse could not carry out an operation
    │   ├── WarehouseBusy            another process holds it
    │   ├── WarehouseDamaged         the file is truncated or fails its checksums
    │   ├── DataFileDamaged          a lake's data file is missing, truncated or altered
    │   ├── CatalogLost              a lake's PostgreSQL catalog went away mid-command
    │   ├── SchemaError              a schema this version does not understand
    │   ├── NotFound                 no such document, revision or run
    │   ├── PointError               a RUN|DATE argument is malformed or names no run
    │   ├── MassRetireRefused        a run would retire more than half of a scope
    │   ├── LogDamaged               the log's stored tree lacks a hash it should hold
    │   ├── OutOfMemory              a statement needed more memory than DuckDB's limit
    │   └── ObjectStoreError         an s3:// data path refused a request or is unreachable
    ├── PublishError                 nothing (more) was published; the message says why
    │   ├── CurationError
    │   ├── NamespaceViolation       a mutation would write outside the namespace
    │   ├── MassPruneRefused
    │   ├── TargetError              the target refused or failed a request
    │   │   └── CommitUncertain      a transaction was sent; whether it committed is unknown
    │   │       └── MutationRateLimited  …and answered 429
    │   └── RevisionConflict         a document's ``_rev`` was not the one expected
    ├── QuoteError                   a quote cannot be checked
    ├── BundleRefused                no proof bundle for a quote (not held, or no span)
    ├── BackfillError                a backfill could not be carried out
    └── LogError                     the transparency log's formats refused something
        ├── ProofError               a proof that does not hold
        ├── NoteError                a signed note that cannot be trusted
        │   ├── MalformedNote        not a signed note at all
        │   ├── UnknownKey           no signature by a known key
        │   └── BadSignature         a known key's signature does not verify
        ├── CheckpointError          a checkpoint refused
        │   ├── MalformedCheckpoint
        │   └── OtherOrigin          a checkpoint of another log
        ├── TileError                a tile or entry bundle that cannot be read or written
        └── KeyFileError             a key file that cannot be made or trusted

Classes that callers also treat as ``ValueError`` (pydantic validators, parsers) inherit
from it too.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from warehouse.timestamps import duration


class ReceiptsError(Exception):
    """A known failure with a message for the user, and a ``hint``: the next step to try,
    when there is an obvious one."""

    hint: str | None = None


# -- usage ---------------------------------------------------------------------------------
class UsageError(ReceiptsError):
    """The command line or the manifest asks for something that cannot be done."""


class ManifestError(UsageError):
    """A manifest is missing, unreadable or invalid."""


class BadParameter(UsageError):
    """A web request's query or path parameter that cannot be read (``receipts serve``
    answers 400 naming it)."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}")
        self.name = name
        self.message = message


class SettingsError(UsageError):
    """An environment variable, or a key of the config or secrets file, has a value it does
    not accept (``warehouse/settings.py``); the message names it and what it accepts."""


class NotAWarehouse(UsageError):
    """The file named as the warehouse exists but is not a DuckDB database (a README, a
    manifest): nothing is written beside it."""

    def __init__(self, location: str, what: str = "not a DuckDB database file") -> None:
        super().__init__(
            f"{location} is not a receipts warehouse ({what}); point --warehouse at a "
            "warehouse, or at a path where none exists yet to create one"
        )


class NamespaceTaken(UsageError):
    """Another corpus of the same warehouse already publishes this namespace to this
    target; publishing would plan, prune and count its documents as ours."""


# -- upstreams -----------------------------------------------------------------------------
class QueryRefused(UsageError):
    """The statement is not a single SELECT; nothing was run."""

    hint = (
        "receipts query answers questions and changes nothing: give one SELECT "
        "(receipts schema lists the tables)"
    )


class QueryFailed(UsageError):
    """DuckDB refused an ad-hoc query (a typo, an unknown table or column)."""

    hint = "receipts schema lists every table and column"


class UpstreamError(ReceiptsError):
    """An upstream did not give what an entry needs."""


class HttpError(UpstreamError):
    """An HTTP exchange did not give a usable response."""

    def __init__(self, message: str, url: str, status: int | None = None) -> None:
        super().__init__(message)
        self.url = url
        self.status = status


class TransientHttpError(HttpError):
    """Worth retrying: the network failed, or the server asked us to slow down."""

    hint = "offline or behind a proxy? `--replay DIR` serves a session recorded with `--record`"

    def __init__(
        self, message: str, url: str, status: int | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message, url, status)
        self.retry_after = retry_after


class CorruptBody(TransientHttpError):
    """A body that does not decode as its Content-Encoding says (gzip with bad bytes, say):
    a proxy or a server mangled it on the way, worth another attempt."""

    hint = (
        "the upstream (or a proxy on the way) sent a compressed body that does not "
        "decompress; try again later, or from another network"
    )


class TerminalHttpError(HttpError):
    """Not worth retrying: the server said no, or the response is unusable."""


class BodyTooLarge(TerminalHttpError):
    """The body is over the configured cap."""


class HostNotAllowed(TerminalHttpError):
    """A request or redirect would leave the allowed hosts."""


class RetryBudgetExhausted(TerminalHttpError):
    """A transient failure persisted through every allowed attempt."""

    hint = TransientHttpError.hint


class RateLimited(TerminalHttpError):
    """GitHub's rate limit is exhausted and resets too far ahead to wait for."""


class NotRecorded(TerminalHttpError):
    """A replayed session has no recording of this request."""

    def __init__(self, method: str, url: str, directory: Path) -> None:
        super().__init__(f"not in the recorded session {directory}: {method} {url}", url)
        self.method = method


class SourceError(UpstreamError):
    """An entry could not be fetched; the message says why and what to do."""


class NotFoundUpstream(SourceError):
    """The upstream answered 404 (an unpublished, deleted or mistyped item)."""


class FileRefused(SourceError):
    """A file's bytes were not stored: missing upstream, wrong digest, not text, too large."""


class PinError(SourceError):
    """A ref could not be resolved."""


class ManifestNotPinnable(PinError):
    """The manifest cannot be read, has no such entries, or would stay invalid."""


class ParseError(UpstreamError, ValueError):
    """A body or file does not have the shape its upstream documents."""


class NhtsaParseError(ParseError):
    """A value does not have the shape NHTSA documents for it."""


class FlatFileError(ParseError):
    """The file cannot be read as a flat file (not a zip we understand, no data member)."""


class TreeError(ParseError):
    """A comment tree or record does not have the shape the Forem v1 API documents."""


# -- integrity -----------------------------------------------------------------------------
class IntegrityError(ReceiptsError, ValueError):
    """A value cannot be stored faithfully."""


class CanonicalFormError(IntegrityError):
    """A value has no canonical JSON form under the current policy."""


class IdentityError(IntegrityError):
    """An identity cannot be formed from the given parts."""


class SnapshotCorrupted(IntegrityError):
    """A snapshot's stored bytes no longer hash to the address they are stored under; they
    are not served, quoted or published."""

    def __init__(
        self,
        location: str,
        content_hash: str,
        actual: str,
        doc_id: str | None = None,
        revision: int | None = None,
    ) -> None:
        what = "a snapshot" if doc_id is None else doc_id
        if doc_id is not None and revision is not None:
            what += f" revision {revision}"
        super().__init__(
            f"{what} is corrupted in {location}: recorded hash {content_hash}, stored bytes "
            f"hash to {actual}; refusing to use them (run `receipts verify`, restore the "
            "warehouse from a backup)"
        )
        self.content_hash = content_hash
        self.actual = actual
        self.doc_id = doc_id
        self.revision = revision


class LogMismatch(IntegrityError):
    """Rows that disagree with their entries in the transparency log
    (``warehouse/tlog/check.py``); ``problems`` names each, the first bad entry first."""

    def __init__(self, problems: Sequence[dict[str, Any]]) -> None:
        self.problems = list(problems)
        first = self.problems[0]["message"]
        more = f" (and {len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
        super().__init__(
            f"the transparency log disagrees with the warehouse's rows: {first}{more}; "
            "refusing to serve it (run `receipts log verify`)"
        )


class LogEntryError(IntegrityError):
    """Bytes that are not a transparency-log entry of a known version and kind."""


# -- warehouse -----------------------------------------------------------------------------
class WarehouseError(ReceiptsError):
    """A warehouse operation could not be carried out."""


class LogDamaged(WarehouseError):
    """The transparency log's stored tree lacks a hash it should hold."""


class WarehouseBusy(WarehouseError):
    """Another process holds the warehouse (a writer; or, for a writer, readers)."""

    # What would let readers work during a write: a DuckLake warehouse.
    LAKE_HINT = (
        "a DuckDB file allows no reader during a write; a DuckLake warehouse does "
        "(--warehouse ducklake:sqlite:CATALOG.sqlite --data-path DIR)"
    )

    def __init__(
        self,
        location: str,
        run_id: int | None,
        pid: int | None,
        *,
        running_for: float | None = None,
        readers: bool = False,
        reading: bool = False,
        waited: float | None = None,
        holder: str | None = None,
    ) -> None:
        self.location = location
        self.run_id = run_id
        self.pid = pid
        self.running_for = running_for
        self.readers = readers
        self.reading = reading
        self.waited = waited
        self.holder = holder
        message = f"{self._who()}: {location}"
        if waited is not None and waited > 0:
            message += f"; gave up after waiting {human_duration(waited)}"
        if reading:
            message += f"; {self.LAKE_HINT}"
        elif readers:
            message += "; wait for the readers to finish (or set RECEIPTS_LOCK_WAIT longer)"
        else:
            message += "; wait for it to finish, or point --warehouse elsewhere"
        super().__init__(message)

    def _who(self) -> str:
        if self.readers:
            return "warehouse in use by readers"
        if self.holder is not None:
            who = self.holder
        else:
            who = f"run {self.run_id}" if self.run_id is not None else "another process"
        details = []
        if self.pid is not None:
            details.append(f"pid {self.pid}")
        if self.running_for is not None:
            details.append(f"running for {human_duration(self.running_for)}")
        return f"warehouse in use by {who}" + (f" ({', '.join(details)})" if details else "")

    def waiting_line(self) -> str:
        """The one line a process prints while it waits for the holder."""
        return f"{self._who()}: {self.location}"


def human_duration(value: float) -> str:
    """`1h02m`, `3m05s`, `12s`: how long, for a person (whole seconds elapsed), written as
    every span is (:func:`warehouse.timestamps.duration`)."""
    return duration(max(0, int(value))) or "0s"


class WarehouseDamaged(WarehouseError):
    """The warehouse file is truncated, overwritten or fails DuckDB's block checksums."""

    def __init__(self, location: str, detail: str) -> None:
        super().__init__(
            f"warehouse file {location} is damaged ({detail}); restore it from a backup, "
            "then run `receipts verify` on it"
        )
        self.location = location
        self.detail = detail


class DataFileDamaged(WarehouseError):
    """A data file a DuckLake catalog lists is missing from its data path, or is not the
    Parquet file it wrote (truncated, overwritten, altered). The catalog is intact: the data
    path was damaged behind its back."""

    def __init__(self, path: str, table: str | None, detail: str) -> None:
        what = f"table {table}'s data file" if table else "a data file"
        super().__init__(f"{what} {path} is {detail}: the lake's data path was damaged")
        self.hint = (
            "restore the file (or the data path) from a backup, then run `receipts verify`; "
            "receipts never deletes or rewrites a data file outside `receipts maintain`"
        )
        self.path = path
        self.table = table


class CatalogLost(WarehouseError):
    """The lake's PostgreSQL catalog stopped answering mid-command (the server stopped or
    restarted, the connection was cut). What committed before stays; what was under way
    was not committed."""

    def __init__(self, location: str, detail: str) -> None:
        super().__init__(f"lost the connection to the lake's catalog {location}: {detail}")
        self.hint = (
            "what committed before stays, nothing half-done does; once the PostgreSQL server "
            "answers again (`pg_isready`), run the same command again: it completes the work"
        )
        self.location = location


class SchemaError(WarehouseError):
    """The database schema is not one this version of receipts understands."""


class NotFound(WarehouseError):
    """A document, revision or run does not exist in the warehouse."""


class PointError(WarehouseError):
    """A RUN|DATE argument is malformed or names no run."""


class MassRetireRefused(WarehouseError):
    """A run would retire more than half of a scope (or of a corpus) at once."""

    def __init__(self, scope: str, gone: int, total: int) -> None:
        super().__init__(
            f"refusing to retire {gone} of {total} documents of {scope} in one run "
            "(more than half); if that is really intended, re-run with --allow-mass-retire"
        )
        self.scope = scope
        self.gone = gone
        self.total = total


# -- publishing ----------------------------------------------------------------------------
class PublishError(ReceiptsError):
    """Nothing (more) was published; the message says why."""


class OutOfMemory(WarehouseError):
    """DuckDB needed more memory for a statement than its limit allows, and could not spill
    the rest to disk. Not a bug of the data: the work is larger than the limit."""

    def __init__(
        self, detail: str, variable: str, default: str, *, hint: str | None = None
    ) -> None:
        """``hint``: the setting that governs the statement, when ``variable`` does not (a
        backfill's, say)."""
        super().__init__(f"the warehouse's database ran out of memory under its limit: {detail}")
        # Each of DuckDB's threads holds buffers of its own: a copy of 30,000 records of
        # 10 KB under an 80MB limit ran out of memory with 2 threads and passed with 1.
        self.hint = hint or (
            f"give it more: {variable}=2GB (the default is {default}), or use one thread: "
            "RECEIPTS_DUCKDB_THREADS=1; a backfill also takes --memory-limit"
        )


class ObjectStoreError(WarehouseError):
    """The object storage of a lake's data path refused a request (credentials, bucket) or
    could not be reached; what a run committed stays, and re-running it completes it."""


class CurationError(PublishError):
    """A document could not be curated; nothing is published until it can."""


class NamespaceViolation(PublishError):
    """A mutation would write outside the corpus's namespace; nothing was sent."""


class MassPruneRefused(PublishError):
    """``--prune`` would delete more than half of the namespace's documents."""


class TargetError(PublishError):
    """The target refused or could not carry out a request; the message says why."""


class CommitUncertain(TargetError):
    """A transaction was sent and the answer was lost (a timeout, a dropped connection, a
    5xx after the body went out): it may or may not have committed. Never resend it; find
    out from the target's documents."""


class MutationRateLimited(CommitUncertain):
    """A transaction was answered 429. Sanity's own client never resends a mutation, even
    then: find out from the documents, like any other unknown outcome."""


class RevisionConflict(PublishError):
    """A transaction was refused because a document's ``_rev`` was not the one expected.
    Nothing of the transaction was applied."""

    def __init__(self, message: str, ids: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.ids = list(ids)


# -- audits and backfills ------------------------------------------------------------------
class QuoteError(ReceiptsError, ValueError):
    """The quote cannot be checked (it is empty once reduced to reader text)."""


class BundleRefused(ReceiptsError):
    """No proof bundle for a quote: it does not occur in the revision, or no span of the
    stored text reads as it under the bundle's normalisation (exit 1)."""


class BackfillError(ReceiptsError):
    """A backfill could not be carried out; the message says why."""


# -- the transparency log's formats (warehouse/tlog/) ------------------------------------------
class LogError(ReceiptsError):
    """The transparency log refused something; the message says what and why."""


class ProofError(LogError, ValueError):
    """A proof that does not hold: it does not lead to the hash it claims, or is malformed.
    ``step`` names the check that failed when a whole proof file was checked: ``format``,
    ``checkpoint``, ``signature`` or ``inclusion``."""

    def __init__(self, message: str, step: str | None = None) -> None:
        super().__init__(message)
        self.step = step


class NoteError(LogError, ValueError):
    """A signed note that cannot be trusted."""


class MalformedNote(NoteError):
    """The bytes are not a signed note (C2SP signed-note's format)."""


class UnknownKey(NoteError):
    """No signature on the note is by a key the reader trusts."""

    hint = "compare the note's signature line with the verifier key you were given"


class BadSignature(NoteError):
    """A trusted key's signature does not verify: the text was altered after signing."""


class CheckpointError(LogError, ValueError):
    """A checkpoint refused."""


class MalformedCheckpoint(CheckpointError):
    """The note's text is not a C2SP checkpoint body."""


class OtherOrigin(CheckpointError):
    """A checkpoint of another log: its origin line is not the one expected."""


class TileError(LogError, ValueError):
    """A tile or an entry bundle that cannot be read, or an entry that cannot be bundled."""


class KeyFileError(LogError):
    """A key file that cannot be made, or cannot be trusted."""
