"""The engine: a flat file's rows into documents, in bulk inside DuckDB, generic over a spec.

A backfill opens it with the file's :class:`~warehouse.bulk.spec.FlatSpec` and the source's
row judge (:class:`~warehouse.bulk.spec.RowJudge`), then hands over the file a few MB at a
time as Arrow tables of ``(number, text, h)`` (``h``: the SHA-256 of the raw line, 32
bytes). Work per line runs vectorised here, on every core:

1. **Check** (:meth:`FlatBulk.check`, in Arrow: :mod:`warehouse.bulk.linecheck`). A line is
   accepted when it fully matches its layout's pattern: field count, identity, dates and
   model year of the plain shapes the rules of :class:`FlatSpec` allow, and no control
   character; the vehicle filter is applied to accepted rows. The judge has the last word
   on the lines this cannot vouch for. Wanted rows are kept in a scratch database as
   ``(number, key, h, field count, model year, plain)``: no text.
2. **Plan** (:meth:`FlatBulk.plan`). Rows are grouped into documents: each one's last line
   and the fingerprint of its lines. A document whose fingerprint is the latest recorded
   for it (``input_fingerprints``), and whose current revision still has the content hash
   that fingerprint produced, is unchanged: its bytes are never built.
3. **Build** (:meth:`FlatBulk.build`). The file is read again for the lines of the other
   documents; when a document's last line has been read, its canonical JSON v1 is assembled
   from its rows' fields (keys in code-point order, ``\\`` and ``"`` escaped) and hashed:
   each row's object in Arrow (:mod:`warehouse.bulk.row_json`), the rows of a document of
   several grouped in the build engine's database.
   A document with a control character in a row is built by the judge (JSON escapes those
   as ``\\u00XX``).
4. **Commit** (:meth:`FlatBulk.commit`). Documents are committed in the order of their last
   line, a range of lines per transaction, classified as the ingest engine classifies
   (new, changed, unchanged, restored); the range's end is the checkpoint a resumed run
   starts after. A range whose documents the plan found unchanged and already sighted at
   this file (every range, when the same file is backfilled again) writes only that. A
   commit may run in another thread while the next block is built: the build reads the
   plan's lines on a connection of its own and runs its statement in a database of its
   own (:mod:`warehouse.bulk.build_engine`; :meth:`FlatBulk.take_built` hands a range's
   documents over). On
   a DuckDB file the backfill is the only writer from start to end, so the warehouse's
   state read by the plan still holds and no batch scans the growing tables; on a lake
   each batch is classified inside its transaction, and a document the plan left unbuilt
   whose current revision another writer has since changed stops the run (run it again:
   the new plan builds it). A range the plan found quiet is classified on a lake only when
   the lake's snapshots since the plan's inserted a revision of one of its documents.

The scratch database is attached to the warehouse's connection, so it is bounded by the
warehouse's memory limit: in memory, spilling to the warehouse's temporary directory, or a
DuckDB file in a directory the caller names. The plan's steps (grouping, and the joins with
what the warehouse knows) may be given a larger limit (``plan_memory_limit``): they run
before the build database opens, and the backfill gives them its allowance too. The plan
kept for pass 2 is made under the warehouse's own limit: a pass 2 that follows a plan whose
tables were all made under the larger one faulted in more pages (11.2-11.4 million against
9.5-9.6 million at two million rows). (In memory, its tables are neither compressed
nor checkpointed: 600,000 rows backfilled ~5% faster, and re-run ~15% faster, than with a
file.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from duckdb import DuckDBPyConnection

from warehouse.bulk import commit_sql, plan_sql
from warehouse.bulk.build_engine import BUILD_DATABASE_MEMORY_LIMIT, BuildEngine
from warehouse.bulk.build_sql import BLOCK_LINES, build_sql
from warehouse.bulk.built import (
    BUILT_SCHEMA,
    LINES_SCHEMA,
    hashed,
    judged_documents,
    split_built,
    with_text,
)
from warehouse.bulk.linecheck import LineCheck, judged_rows
from warehouse.bulk.plan_sql import SCRATCH
from warehouse.bulk.row_json import rowed, single_row_documents
from warehouse.bulk.spec import FlatSpec, Malformed, RowJudge
from warehouse.clock import now
from warehouse.conflicts import retrying_conflicts
from warehouse.errors import WarehouseError
from warehouse.ingest import Counts
from warehouse.slices import in_slices
from warehouse.sql_literal import string as literal
from warehouse.store import Warehouse
from warehouse.tlog import store as tlog_store
from warehouse.tlog.transactions import logged_transaction


@dataclass(frozen=True)
class Checked:
    rows: int  # lines checked (not empty, not the header)
    matched: int  # rows accepted (in bulk or by the judge) that the vehicle filter keeps
    malformed: list[Malformed]  # lines the judge found malformed, in order
    field_counts: dict[int, int]  # lines checked by their number of tab-separated fields


@dataclass(frozen=True)
class Plan:
    documents: int
    to_build: int
    rows: int  # rows of the planned documents
    last_needed_line: int  # 0 when nothing is to be built
    boundaries: list[int]  # the last line of each commit's range


@dataclass(frozen=True)
class CommitContext:
    """What every revision of a backfill run carries."""

    run_id: int
    source: str
    scope: str
    url: str
    fetched_at: datetime
    file_sha256: str


class FlatBulk:
    """One backfill's scratch database and its bulk work; see the module docstring."""

    def __init__(
        self,
        warehouse: Warehouse,
        spec: FlatSpec,
        judge: RowJudge,
        scratch: Path | None = None,
        build_memory_limit: str = BUILD_DATABASE_MEMORY_LIMIT,
        plan_memory_limit: str | None = None,
    ) -> None:
        """``judge``: the source's line-at-a-time rules (the last word on the lines the
        bulk check cannot vouch for; the bytes of the documents the bulk build cannot
        assemble). ``scratch``: a directory for the scratch database's file; without one it is kept
        in memory. ``build_memory_limit``: DuckDB's limit for the build statements' own
        database (:mod:`warehouse.bulk.build_engine`), which spills beyond it to ``scratch``, or
        beside the warehouse's own spill files (``<file>.tmp``), or, for a lake, to the
        system's temporary directory. ``plan_memory_limit``: the warehouse's
        limit while :meth:`plan` groups the rows and joins them with what the warehouse
        knows (default: the limit it has); the plan it keeps for pass 2 is made under the
        limit it has."""
        self.warehouse = warehouse
        self.spec = spec
        self._judge = judge
        self._con = warehouse._con
        self._engine = BuildEngine(
            build_memory_limit, scratch if scratch is not None else warehouse.spill_directory
        )
        self._plan_memory_limit = plan_memory_limit
        location = ":memory:" if scratch is None else str(scratch / "backfill.duckdb")
        self._build_sql = build_sql(spec)
        self._line_check = LineCheck(spec)
        self._batch_no = 0
        self._live = warehouse.is_lake
        self._logged = tlog_store.has_log(self._con)  # the log's tables (read once)
        self._planned_at = 0  # on a lake, the snapshot the plan read (or a later one)
        self._con.execute(f"ATTACH {literal(location)} AS {SCRATCH}")
        self._con.execute(plan_sql.CREATE_SCRATCH)
        # Everything that reads and writes only the scratch database runs on a connection
        # of its own whose default catalog is the scratch database: the staging of pass 1,
        # the plan's steps that read nothing of the warehouse, and pass 2's reads of the
        # plan's lines (so that a batch can commit on the warehouse's connection while the
        # next block is built, see :meth:`commit`). On a lake, every statement of a
        # connection whose default is the lake first asks the catalog for its latest
        # snapshot, even one that reads only the scratch database: registering a block,
        # staging it and unregistering it took 8.3 ms there against 1.0 ms here (a
        # PostgreSQL catalog on this machine; a 200,000-row re-run stages 56 blocks), and on
        # a SQLite catalog that read, beside a commit, failed with "database is locked"
        # (the read or the commit: one backfill in six, into a new lake, measured).
        self._scratch_con = self._con.cursor()
        self._scratch_con.execute(f"USE {SCRATCH}")
        self._built: list[pa.Table] = []  # built documents not yet committed
        self._carry = LINES_SCHEMA.empty_table()  # lines of documents still open

    def close(self) -> None:
        """Drop the batch's temporary tables (named in the temporary catalog, which a lost
        lake catalog does not stop) and the scratch database; the scratch cursor and the
        build engine close whatever fails before them."""
        try:
            for table in ("_flat_batch", "_flat_classified", "_flat_stored",
                          "_flat_fresh", "_flat_found", "_flat_to_store"):  # fmt: skip
                self._con.execute(f"DROP TABLE IF EXISTS temp.main.{table}")
        finally:
            self._scratch_con.close()
            self._engine.close()
        self._con.execute(f"DETACH {SCRATCH}")

    @contextmanager
    def _registered(
        self, table: pa.Table, name: str = "_flat_chunk", con: DuckDBPyConnection | None = None
    ) -> Iterator[None]:
        con = self._con if con is None else con
        con.register(name, in_slices(table))
        try:
            yield
        finally:
            con.unregister(name)

    # -- pass 1 --------------------------------------------------------------------------
    def check(
        self,
        chunk: pa.Table,
        skip_line: int = 0,
        keep: Callable[[pa.Table], None] | None = None,
    ) -> Checked:
        """Check the lines of ``chunk`` (``number``, ``text``, ``h``) in bulk (see
        :mod:`warehouse.bulk.linecheck`), and those it cannot vouch for by the judge; keep
        the wanted rows (:meth:`add_checked`, or hand them to ``keep``, which must add them
        in the order it is given them); name the malformed lines."""
        verdicts = self._line_check(chunk, skip_line)
        stage = keep or self.add_checked
        if len(verdicts.kept):
            stage(verdicts.kept)
        matched = verdicts.matched
        malformed: list[Malformed] = []
        if verdicts.suspects:
            judged, malformed = judged_rows(chunk, verdicts.suspects, self._judge)
            if len(judged):
                stage(judged)
                matched += len(judged)
        return Checked(verdicts.rows, matched, malformed, verdicts.field_counts)

    def add_checked(self, rows: pa.Table) -> None:
        """Checked rows that are wanted: ``number, key, h, n, year, plain``."""
        with self._registered(rows, con=self._scratch_con):
            self._scratch_con.execute(plan_sql.STAGE_ROWS)

    # -- planning ------------------------------------------------------------------------
    def plan(self, after_line: int, batch_size: int, url: str) -> Plan:
        """Group the kept rows into documents (those ending after ``after_line``) and decide
        which must be built; the last line of each commit of ``batch_size`` documents."""
        scratch = self._scratch_con
        last_line = int(scratch.execute(plan_sql.LAST_LINE).fetchall()[0][0])
        if self._live:  # what the plan reads is the lake as of this snapshot, or later
            self._planned_at = int(self.warehouse._scalar(commit_sql.LAKE_SNAPSHOT))
        params = {"prefix": self.spec.doc_prefix, "url": url, "last": last_line}
        with self._planning_memory():
            scratch.execute(plan_sql.GROUP, {"salt": self.spec.salt, "after": after_line})
            scratch.execute(plan_sql.CREATE_MULTI)
            multi_rows = int(scratch.execute(plan_sql.MULTI_ROWS).fetchall()[0][0])
            shares = -(-multi_rows // plan_sql.ROWS_PER_SHARE)
            for share in range(shares):
                scratch.execute(
                    plan_sql.GROUP_MULTI, {"salt": self.spec.salt, "shares": shares, "share": share}
                )
            for table, query in plan_sql.PLAN_STEPS[:-1]:
                self._plan_step(table, query, params)
        # The plan itself is kept through pass 2: made under the warehouse's own limit.
        self._plan_step(*plan_sql.PLAN_STEPS[-1], params)
        self._in_line_order("lines", plan_sql.PLAN_LINES, params)
        scratch.execute(f"DROP TABLE {SCRATCH}.rows")  # the plan's lines hold what is needed
        if not self._live:
            self._con.execute(commit_sql.STORED_DIGESTS)
        [(documents, to_build, rows, last_needed)] = scratch.execute(
            plan_sql.PLAN_SUMMARY
        ).fetchall()
        boundaries = [
            int(b) for (b,) in scratch.execute(plan_sql.BOUNDARIES, {"size": batch_size}).fetchall()
        ]
        return Plan(int(documents), int(to_build), int(rows), int(last_needed), boundaries)

    def _planning_memory(self) -> AbstractContextManager[None]:
        if self._plan_memory_limit is None:
            return nullcontext()
        return self.warehouse.memory_limit(self._plan_memory_limit)

    def _plan_step(self, table: str, query: str, params: Mapping[str, object]) -> None:
        """Make the scratch table ``table`` from ``query`` (given the parameters it names;
        a query of a range of lines, ``$lo`` to ``$hi``, is run for each range in turn);
        drop the tables no later step reads. A step that reads the warehouse runs on its
        connection; the others on the scratch database's own."""
        con = self._con if table in plan_sql.READS_WAREHOUSE else self._scratch_con
        if "$lo" in query:
            self._in_line_order(table, query, params, con)
        else:
            con.execute(
                f"CREATE TABLE {SCRATCH}.{table} AS {query}",
                {k: v for k, v in params.items() if f"${k}" in query},
            )
        for done in plan_sql.LAST_READ_BY.get(table, ()):
            self._scratch_con.execute(f"DROP TABLE {SCRATCH}.{done}")

    def _in_line_order(
        self,
        table: str,
        query: str,
        params: Mapping[str, object],
        con: DuckDBPyConnection | None = None,
    ) -> None:
        """Make the scratch table ``table`` from ``query``, which selects the lines ``$lo``
        (exclusive) to ``$hi`` in order: made empty, then filled one range of
        :data:`~warehouse.bulk.plan_sql.ORDERED_LINES` lines after another, each sorted in
        memory bounded by the range, whatever the file's size (on ``con``, by default the
        scratch database's connection)."""
        con = self._scratch_con if con is None else con
        named = {k: v for k, v in params.items() if f"${k}" in query}
        con.execute(f"CREATE TABLE {SCRATCH}.{table} AS {query}", {**named, "lo": 0, "hi": 0})
        lo = 0  # the lines of a document may start before the line a resumed run starts after
        while lo < int(str(params["last"])):
            hi = lo + plan_sql.ORDERED_LINES
            con.execute(f"INSERT INTO {SCRATCH}.{table} {query}", {**named, "lo": lo, "hi": hi})
            lo = hi

    # -- pass 2 --------------------------------------------------------------------------
    def build(self, chunk: pa.Table, first: int, last: int) -> None:
        """Build the documents whose last line is in ``chunk`` (lines ``first``..``last``,
        ``number`` and ``text``): in the build engine, and the ones with a control character
        in a row by the judge."""
        planned = self._scratch_con.sql(BLOCK_LINES, params={"first": first, "last": last})
        lines = with_text(planned.to_arrow_table(), chunk, first)
        if len(self._carry):  # lines of documents still open from earlier blocks
            lines = pa.concat_tables([self._carry, lines])
        self._carry = LINES_SCHEMA.empty_table()
        if not len(lines):
            return
        if pc.max(lines["end_line"]).as_py() > last:
            due = pc.less_equal(lines["end_line"], last)
            self._carry = lines.filter(pc.invert(due))
            lines = lines.filter(due)
        plain = lines["plain_doc"]
        judged = None
        if not pc.all(plain).as_py():
            judged = lines.filter(pc.invert(plain))
            lines = lines.filter(plain)
        if len(lines):
            rows = rowed(lines, self.spec)
            several = pc.greater(rows["doc_rows"], 1)
            if pc.any(several).as_py():
                grouped = self._engine.run(self._build_sql, rows.filter(several), "_flat_rows")
                self._built.append(hashed(grouped))
                rows = rows.filter(pc.invert(several))
            if len(rows):
                self._built.append(hashed(single_row_documents(rows, self.spec)))
        if judged is not None:
            self._built.append(judged_documents(judged, self.spec.doc_prefix, self._judge))

    def leftover_lines(self) -> int:
        """Lines of documents still open (their last line not yet read)."""
        return len(self._carry)

    # -- commits -------------------------------------------------------------------------
    def take_built(self, hi: int) -> pa.Table:
        """The built documents ending by line ``hi``, handed over for :meth:`commit`."""
        due, self._built = split_built(self._built, hi)
        return pa.concat_tables(due) if due else BUILT_SCHEMA.empty_table()

    def commit(
        self, context: CommitContext, lo: int, hi: int, built: pa.Table
    ) -> tuple[Counts, int]:
        """Commit the documents whose last line is in ``(lo, hi]`` (``built``: those of them
        that were built, from :meth:`take_built`) in one transaction, with the checkpoint
        ``<file digest>:<hi>``: their counts and rows.

        It may run in another thread while :meth:`build` builds the next block: each uses a
        connection of its own."""
        if not len(built):
            documents, rows, quiet = self._con.execute(
                commit_sql.QUIET_RANGE, {"lo": lo, "hi": hi}
            ).fetchall()[0]
            if quiet and self._live:
                quiet = not self._changed_since_plan(lo, hi)
            if quiet:
                counts = Counts(records=int(documents), unchanged=int(documents))
                with self.warehouse._transaction():
                    self._insert_progress(context, hi, counts)
                return counts, int(rows)
        with self._registered(built, "_flat_built"):
            if self._live:  # classified inside the commit's transaction
                statement, table = commit_sql.BATCH, "_flat_batch"
            else:
                statement, table = commit_sql.CLASSIFY_PLANNED, "_flat_classified"
            self._con.execute(statement, {"lo": lo, "hi": hi, "prefix": self.spec.doc_prefix})
            missing = int(self.warehouse._scalar(commit_sql.MISSING_BYTES.format(table=table)))
            if missing:
                raise WarehouseError(f"{missing} documents ending by line {hi} were not built")

            def attempt() -> tuple[Counts, int]:
                return self._commit_once(context, hi)

            return retrying_conflicts(self.warehouse, context.scope, attempt)

    def _changed_since_plan(self, lo: int, hi: int) -> bool:
        """On a lake: whether a revision of a document ending in ``(lo, hi]`` was committed
        after the plan read the lake (by another writer)."""
        latest = int(self.warehouse._scalar(commit_sql.LAKE_SNAPSHOT))
        if latest <= self._planned_at:
            return False
        params = {"since": self._planned_at + 1, "until": latest, "lo": lo, "hi": hi,
                  "prefix": self.spec.doc_prefix}  # fmt: skip
        return bool(self.warehouse._scalar(commit_sql.CHANGED_SINCE_PLAN, params))

    def _commit_once(self, context: CommitContext, hi: int) -> tuple[Counts, int]:
        con = self._con
        at = now()
        counts = Counts()
        rows = 0
        base = {"run": context.run_id}
        with logged_transaction(self.warehouse):
            if self._live:
                con.execute(commit_sql.CLASSIFY_LIVE)
            for outcome, n, outcome_rows, stale in con.execute(
                commit_sql.COUNT_OUTCOMES
            ).fetchall():
                if stale:
                    raise WarehouseError(
                        f"{stale} documents of {context.scope} changed in the warehouse while "
                        "this backfill ran (another writer); run the backfill again"
                    )
                setattr(counts, str(outcome), int(n))
                counts.records += int(n)
                rows += int(outcome_rows)
            if counts.new or counts.changed or counts.restored:
                con.execute(commit_sql.INSERT_DOCUMENTS, {**base, "kind": self.spec.kind})
                self._insert_snapshots(base)
                con.execute(
                    commit_sql.INSERT_REVISIONS,
                    {
                        **base,
                        "at": at,
                        "scope": context.scope,
                        "url": context.url,
                        "fetched_at": context.fetched_at,
                        "file_sha256": context.file_sha256,
                    },
                )
                log = {**base, "kind": self.spec.kind, "url": context.url,
                       "fetched_at": context.fetched_at}  # fmt: skip
                # On a DuckDB file the revisions' entries are rebuilt from their rows when
                # read, not stored (see tlog_store.append); a lake stores them.
                tlog_store.append(
                    con,
                    commit_sql.LOG_ENTRIES,
                    commit_sql.LOG_ORDER,
                    log,
                    logged=self._logged,
                    keep_entries=self._live,
                )
            sighting = {**base, "url": context.url, "fetched_at": context.fetched_at}
            con.execute(commit_sql.INSERT_SIGHTINGS, {**sighting, "live": self._live})
            if self.warehouse._scalar(commit_sql.SIGHTINGS_TO_LOOK_UP, {"live": self._live}):
                con.execute(commit_sql.INSERT_LOOKED_UP_SIGHTINGS, {**sighting, "live": self._live})
            con.execute(commit_sql.INSERT_FINGERPRINTS, base)
            self._insert_progress(context, hi, counts, at)
        return counts, rows

    def _insert_progress(
        self, context: CommitContext, hi: int, counts: Counts, at: datetime | None = None
    ) -> None:
        """The batch's row of ``run_progress``: its counts and checkpoint (inside the
        transaction)."""
        self._batch_no += 1
        self._con.execute(
            commit_sql.INSERT_PROGRESS,
            {
                "run": context.run_id,
                "batch": self._batch_no,
                "source": context.source,
                "scope": context.scope,
                "at": now() if at is None else at,
                "records": counts.records,
                "new": counts.new,
                "changed": counts.changed,
                "unchanged": counts.unchanged,
                "restored": counts.restored,
                "checkpoint": f"{context.file_sha256[:16]}:{hi}",
            },
        )

    def _insert_snapshots(self, base: Mapping[str, object]) -> None:
        """Store the bytes of the batch's new hashes, each once (inside the transaction)."""
        con = self._con
        if self._live:
            con.execute(commit_sql.TO_STORE)
            con.execute(commit_sql.INSERT_FORMS)
            con.execute(commit_sql.INSERT_SNAPSHOTS, base)
            return
        con.execute(commit_sql.FRESH)
        maybe_stored = self.warehouse._scalar(commit_sql.MAYBE_STORED)
        con.execute(commit_sql.FOUND if maybe_stored else commit_sql.NONE_FOUND)
        con.execute(commit_sql.INSERT_FRESH_FORMS)
        con.execute(commit_sql.INSERT_FRESH_SNAPSHOTS, base)
        con.execute(commit_sql.KEEP_DIGESTS)
