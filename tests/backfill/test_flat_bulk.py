"""The bulk flat-file path agrees with the line-at-a-time rules it stands in for: which lines
it accepts (and with what identity, model year and vehicle verdict), the bytes it builds,
and which documents it decides need not be built again."""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakes.nhtsa import cmpl_row, write_zip
from pipelines.backfill.memory import memory_bytes, plan_memory_limit
from sources.nhtsa.flatfile.layouts import LAYOUTS
from sources.nhtsa.flatfile.lines import checked_table, text_table
from sources.nhtsa.flatfile.rows import RowChecker, VehicleFilter
from sources.nhtsa.flatfile.spec import flat_spec
from sources.nhtsa.parse import PLAIN_KEYS, record_key
from tests.conftest import TEST_WAREHOUSE, LakeLocation, cli
from warehouse.bulk.build_engine import BUILD_DATABASE_MEMORY_LIMIT, BuildEngine
from warehouse.bulk.built import hashed, split_built
from warehouse.bulk.engine import FlatBulk
from warehouse.bulk.linecheck import LineCheck, Verdicts, fields_pattern, is_plain
from warehouse.bulk.spec import Accepted, FlatSpec, Malformed
from warehouse.errors import NhtsaParseError, UsageError
from warehouse.ingest import ingest_records
from warehouse.records import Provenance, Record
from warehouse.runs import start_run
from warehouse.store import Warehouse
from warehouse.value_hashes import sha256_digests, value_sha256

CMPL = LAYOUTS["complaints"]

# Values of the fields that decide a line's verdict, near the edges of every rule.
_KEYS = st.sampled_from(["123", "0042", "", " 7", "12a", "9" * 18, "9" * 19, "-1", "١٢"])
_DATES = st.sampled_from(
    ["", "00000000", "20210512", "20210230", "2021051", "0021051x", " 20210512", "00010101",
     "19690101", "99991231", "20211301", "２０２１０５１２", "20240229", "20230229", "20210431",
     "20210430", "20211231", "20210100", "09991231", "10000101", "20210532"]
)  # fmt: skip
_YEARS = st.sampled_from(["", "2019", "9999", "0000", "19", "2019 ", "20x9", " ", "２０１９"])
_MAKES = st.sampled_from(["HONDA", "honda", " HONDA ", "ACURA", "HONDÁ", "ŠKODA", "", "ß"])
_COUNTS = st.sampled_from([49, 49, 49, 51, 48, 50])


@st.composite
def flat_lines(draw: st.DrawFn) -> str:
    row = cmpl_row(11999000, 1)
    row[1] = draw(_KEYS)
    row[3] = draw(_MAKES)
    row[5] = draw(_YEARS)
    for index in (7, 15, 16, 22, 37):  # FAILDATE, DATEA, LDATE, PURCH_DT, MANUF_DT
        row[index] = draw(_DATES)
    count = draw(_COUNTS)
    row = [*row, "GA", "DRIVER"][:count] if count > 49 else row[:count]
    return "\t".join(row)


def _bulk_check(
    tmp_path: Path, spec: FlatSpec, lines: list[str], kept: str = "key, n, year"
) -> tuple[Verdicts, list[tuple[Any, ...]]]:
    """The bulk check of ``lines`` (one block, from line 1), and the ``kept`` columns of the
    rows it kept, in line order."""
    data = "\n".join(lines).encode("iso-8859-1", errors="replace")
    checked = LineCheck(spec)(checked_table(1, data))
    con = duckdb.connect()
    try:
        con.register("kept_rows", checked.kept)
        return checked, con.execute(f"SELECT {kept} FROM kept_rows ORDER BY number").fetchall()
    finally:
        con.close()


def _bulk_verdicts(
    tmp_path: Path, lines: list[str], wanted: VehicleFilter
) -> dict[int, tuple[str, int | None]]:
    """``line number → (key, year)`` of the wanted rows the bulk check accepts itself."""
    checked, rows = _bulk_check(tmp_path, flat_spec(CMPL, wanted), lines, "number, key, year")
    kept = {int(n): (str(k), y) for n, k, y in rows}
    assert not set(kept) & set(checked.suspects)
    return kept


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines=st.lists(flat_lines(), min_size=1, max_size=25), make=st.sampled_from([None, "HONDA"]))
def test_the_bulk_check_accepts_only_what_the_row_checker_accepts(
    tmp_path_factory: pytest.TempPathFactory, lines: list[str], make: str | None
) -> None:
    """Every line the bulk check keeps, the line-at-a-time checker keeps too, with the same
    identity and model year; every other line is left to that checker."""
    wanted = VehicleFilter(make=make, years=(2000, 2030) if make else None)
    lines = [line for line in lines if line.encode("iso-8859-1", errors="ignore").decode(
        "iso-8859-1") == line]  # fmt: skip
    if not lines:
        return
    kept = _bulk_verdicts(tmp_path_factory.mktemp("bulk"), lines, wanted)
    checker = RowChecker(CMPL, wanted)
    for number, (key, year) in kept.items():
        parts = lines[number - 1].split("\t")
        verdict = checker.check(parts)
        assert verdict == (key, True), lines[number - 1]
        assert checker.year(parts[5])[0] == year


def test_the_bulk_check_vouches_for_plain_lines_itself(tmp_path: Path) -> None:
    """Lines of either layout whose fields are all of the plain shapes (every kind of
    calendar date but 29 February) are judged in bulk: none is left to the caller."""
    days = ["20210131", "20210228", "20210330", "20210430", "20211231", "10000101", "00000000"]
    lines = []
    for number, day in enumerate(days):
        row = cmpl_row(11999000 + number, number, FAILDATE=day, DATEA=day, YEARTXT="9999")
        lines.append("\t".join(row if number % 2 else [*row, "GA", "DRIVER"]))
    lines.append("\t".join(cmpl_row(7, 99, ODINO="007", YEARTXT="", MANUF_DT="")))
    checked, kept = _bulk_check(tmp_path, flat_spec(CMPL, VehicleFilter(make="HONDA")), lines)
    assert (checked.rows, checked.matched, checked.suspects) == (len(lines), len(lines), [])
    keys = [str(11999000 + number) for number in range(len(days))] + ["7"]
    assert kept == [(k, 51 if i % 2 == 0 and i < len(days) else 49, None) for i, k in
                    enumerate(keys)]  # fmt: skip


@pytest.mark.parametrize("kind", sorted(LAYOUTS))
def test_lines_of_every_kind_and_layout_are_vouched_for_in_bulk(kind: str, tmp_path: Path) -> None:
    """A line of each layout of each kind, its identity of the plain shape and every date and
    model year well formed, is judged in bulk, with the identity the line-at-a-time checker
    gives it."""
    identity = {"complaints": "0042", "communications": "11035885", "recalls": "20V999001",
                "investigations": "PE22003"}[kind]  # fmt: skip
    spec = flat_spec(LAYOUTS[kind], VehicleFilter())
    lines = []
    for shape in spec.shapes:
        fields = ["ANY TEXT"] * shape.count
        assert shape.key_index is not None
        fields[shape.key_index] = identity
        for index in shape.date_indexes:
            fields[index] = "20211231"
        if shape.year_index is not None:
            fields[shape.year_index] = "2019"
        lines.append("\t".join(fields))
    checked, keys = _bulk_check(tmp_path, spec, lines, "DISTINCT key")
    assert (checked.rows, checked.matched, checked.suspects) == (len(lines), len(lines), [])
    checker = RowChecker(LAYOUTS[kind], VehicleFilter())
    assert keys == [(checker.check(lines[0].split("\t"))[0],)]


def test_a_leap_day_is_left_to_the_line_at_a_time_checker(tmp_path: Path) -> None:
    lines = ["\t".join(cmpl_row(11999000, 1, FAILDATE=day)) for day in ("20240229", "20230229")]
    assert _bulk_check(tmp_path, flat_spec(CMPL, VehicleFilter()), lines)[0].suspects == [1, 2]
    checker = RowChecker(CMPL, VehicleFilter())
    assert checker.check(lines[0].split("\t")) == ("11999000", True)
    assert isinstance(checker.check(lines[1].split("\t")), str)


class _RecordingJudge:
    """A row judge that records what the engine asks it, and answers as the checker does."""

    def __init__(self, checker: RowChecker) -> None:
        self.checker = checker
        self.judged: list[str] = []

    def judge(self, text: str) -> Accepted | str | None:
        self.judged.append(text)
        return self.checker.judge(text)

    def body(self, lines: Sequence[str]) -> tuple[bytes, str]:
        return self.checker.body(lines)


def test_the_engine_asks_the_judge_it_was_given_about_the_lines_it_cannot_vouch_for(
    tmp_path: Path,
) -> None:
    """The engine holds the source's row judge (any :class:`RowJudge`): it stages the rows
    the judge accepts beside those it accepted itself, and names the lines the judge found
    malformed; it asks about no other line."""
    leap = "\t".join(cmpl_row(11999001, 2, FAILDATE="20240229"))
    lines = ["\t".join(cmpl_row(11999000, 1)), leap, "\t".join(cmpl_row(11999002, 3)[:30])]
    judge = _RecordingJudge(RowChecker(CMPL, VehicleFilter()))
    data = "\n".join(lines).encode("iso-8859-1")
    with Warehouse.open(str(tmp_path / "w.duckdb")) as wh:
        bulk = FlatBulk(wh, flat_spec(CMPL, VehicleFilter()), judge, tmp_path)
        try:
            checked = bulk.check(checked_table(1, data))
            staged = wh._connection_for_tests().execute(
                "SELECT number, key, plain FROM backfill_scratch.rows ORDER BY number"
            )
            rows = staged.fetchall()
        finally:
            bulk.close()
    assert judge.judged == lines[1:]
    assert (checked.rows, checked.matched) == (3, 2)
    expected = "expected 20, 46, 47, 48, 49 or 51 tab-separated fields, found 30"
    assert checked.malformed == [Malformed(3, expected)]
    assert rows == [(1, "11999000", True), (2, "11999001", True)]


@pytest.mark.parametrize(
    ("indexes", "line", "expected"),
    [
        ({"key": 1}, "a\t42\tb", {"key": "42"}),
        ({"key": 1, "year": 5}, "a\t42\tb\tc\td\t2019\te", {"key": "42", "year": "2019"}),
        ({"year": 3, "key": 0}, "7\t\t\t\tx", {"key": "7", "year": ""}),
        ({"make": 2, "key": 1}, "\t\tHONDA", {"key": "", "make": "HONDA"}),
    ],
)
def test_a_fields_pattern_names_the_fields_at_their_indexes(
    indexes: dict[str, int], line: str, expected: dict[str, str]
) -> None:
    found = pc.extract_regex(pa.array([line]), fields_pattern(indexes))
    assert found.to_pylist() == [expected]


@pytest.mark.parametrize("kind", sorted(PLAIN_KEYS))
@given(value=st.text(alphabet="0123456789ABCDEFXYZ-", min_size=1, max_size=42))
def test_an_identity_of_the_plain_shape_is_its_own_key(kind: str, value: str) -> None:
    import re

    pattern, numeric = PLAIN_KEYS[kind]
    if not re.fullmatch(pattern, value):
        return
    field = {
        "complaints": "ODINO",
        "communications": "ID",
        "recalls": "CAMPNO",
        "investigations": "NHTSA ACTION NUMBER",
    }[kind]
    try:
        key = record_key(kind, {field: value})
    except NhtsaParseError:  # pragma: no cover - the property fails below
        key = None
    assert key == (str(int(value)) if numeric else value)


def _backfill(warehouse: Path, path: Path, *more: str) -> dict[str, object]:
    result = cli("backfill", "nhtsa", "--warehouse", warehouse, "--json", "--file", path,
                 "--kind", "complaints", *more)  # fmt: skip
    assert result.exit_code == 0, result.stderr
    return dict(json.loads(result.stdout))


def test_documents_are_built_only_when_their_lines_or_their_stored_bytes_changed(
    tmp_path: Path, warehouse_path: Path
) -> None:
    rows = [cmpl_row(11999300 + i, i + 1) for i in range(5)]
    path = write_zip(tmp_path / "A.zip", "FLAT_CMPL.txt", rows)
    warehouse = warehouse_path
    first = _backfill(warehouse, path)
    assert (first["built"], first["documents"]["new"]) == (5, 5)  # type: ignore[index]
    again = _backfill(warehouse, path)
    assert again["built"] == 0 and again["documents"]["unchanged"] == 5  # type: ignore[index]

    # Another writer gives one document other bytes: the file's wording is built again.
    _other_writer_changes(warehouse, "nhtsa/complaint/11999302")
    third = _backfill(warehouse, path)
    assert third["built"] == 1 and third["documents"]["changed"] == 1  # type: ignore[index]


def _other_writer_changes(warehouse: Path, doc: str) -> None:
    """Another writer gives ``doc`` other bytes (an ingest of the API's record)."""
    with Warehouse.open(str(warehouse)) as wh:
        run = start_run(wh, "ingest", "other", "x").run_id
        other = Record(
            doc_id=doc,
            kind="complaint",
            body=b'{"other":true}',
            provenance=Provenance(url="https://api.nhtsa.gov/x"),
        )
        ingest_records(wh, run, "nhtsa", "api:complaints", [other])


def test_an_identical_rerun_writes_only_checkpoints_without_classifying_a_row(
    tmp_path: Path, warehouse_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every range of an identical re-run is one the plan found unchanged and sighted: on a
    file, and on a lake where no revision of its documents was committed since the plan, it
    commits its checkpoint alone (no range is classified against the revisions)."""
    rows = [cmpl_row(11999700 + i // 2, i + 1) for i in range(9)]
    path = write_zip(tmp_path / "A.zip", "FLAT_CMPL.txt", rows)
    _backfill(warehouse_path, path)
    classified: list[int] = []
    commit_once = FlatBulk._commit_once

    def recording(self: FlatBulk, context: Any, hi: int) -> Any:
        classified.append(hi)
        return commit_once(self, context, hi)

    monkeypatch.setattr(FlatBulk, "_commit_once", recording)
    again = cli("backfill", "nhtsa", "--warehouse", warehouse_path, "--json", "--file", path,
                "--kind", "complaints", "--batch-size", "2", "--rescan")  # fmt: skip
    assert again.exit_code == 0, again.stderr
    report = json.loads(again.stdout)
    assert report["built"] == 0 and report["documents"]["unchanged"] == 5
    assert classified == []
    with Warehouse.open(str(warehouse_path), read_only=True) as wh:
        batches = wh._scalar("SELECT count(*) FROM run_progress WHERE run_id = $r",
                             {"r": report["run_id"]})  # fmt: skip
    assert batches == 3  # 5 documents, 2 a batch: every checkpoint is recorded


def test_on_a_lake_a_revision_committed_after_the_plan_stops_the_run(
    tmp_path: Path, warehouse_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A range the plan found quiet is classified again when another writer committed a
    revision of one of its documents after the plan: the run stops saying so, and the next
    run builds that document again. (A DuckDB file has one writer: where the suite runs on
    files, this test makes a lake on a SQLite catalog of its own.)"""
    if TEST_WAREHOUSE == "duckdb":
        monkeypatch.setenv("RECEIPTS_DATA_PATH", str(tmp_path / "lake-data"))
        warehouse_path = LakeLocation(f"ducklake:sqlite:{tmp_path / 'w.sqlite'}")  # type: ignore[assignment]
    rows = [cmpl_row(11999800 + i, i + 1) for i in range(4)]
    path = write_zip(tmp_path / "A.zip", "FLAT_CMPL.txt", rows)
    _backfill(warehouse_path, path)
    plan = FlatBulk.plan

    def plan_then_another_writer(self: FlatBulk, *args: Any) -> Any:
        planned = plan(self, *args)
        _other_writer_changes(warehouse_path, "nhtsa/complaint/11999803")
        return planned

    monkeypatch.setattr(FlatBulk, "plan", plan_then_another_writer)
    stopped = cli("backfill", "nhtsa", "--warehouse", warehouse_path, "--json", "--file", path,
                  "--kind", "complaints", "--batch-size", "2", "--rescan")  # fmt: skip
    assert stopped.exit_code != 0
    assert "changed in the warehouse while this backfill ran" in stopped.stderr
    monkeypatch.setattr(FlatBulk, "plan", plan)
    again = _backfill(warehouse_path, path)
    assert again["built"] == 1 and again["documents"]["changed"] == 1  # type: ignore[index]


def test_a_backfill_builds_in_a_database_of_its_own_and_closes_it(
    tmp_path: Path, warehouse_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The documents of several rows are grouped in the build engine (not on the warehouse's
    connection), whose spill directory is gone when the backfill ends; documents of one row
    are assembled in Arrow and never reach it."""
    built: list[str] = []
    engines: list[BuildEngine] = []
    run, init = BuildEngine.run, BuildEngine.__init__

    def recording_init(self: BuildEngine, memory_limit: str, spill_parent: Path | None) -> None:
        init(self, memory_limit, tmp_path / "spill")
        engines.append(self)

    def recording_run(self: BuildEngine, sql: str, table: pa.Table, name: str) -> pa.Table:
        out = run(self, sql, table, name)
        built.extend(out.column("doc_id").to_pylist())
        return out

    (tmp_path / "spill").mkdir()
    monkeypatch.setattr(BuildEngine, "__init__", recording_init)
    monkeypatch.setattr(BuildEngine, "run", recording_run)
    rows = [cmpl_row(11999500 + i // 2, i + 1) for i in range(6)]  # 3 documents of 2 rows
    rows.append(cmpl_row(11999509, 7))  # and one of one row
    result = _backfill(warehouse_path, write_zip(tmp_path / "A.zip", "FLAT_CMPL.txt", rows))
    assert result["built"] == 4
    assert sorted(built) == [f"nhtsa/complaint/{11999500 + i}" for i in range(3)]
    assert len(engines) == 1 and engines[0].memory_limit == BUILD_DATABASE_MEMORY_LIMIT
    assert list((tmp_path / "spill").iterdir()) == []  # made at the first build, then removed


def test_without_a_scratch_directory_the_build_spills_beside_the_warehouses_own_spill_files(
    tmp_path: Path, warehouse_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build database spills into ``<file>.tmp``, where DuckDB spills the warehouse's
    buffers (a lake's build spills to the system's temporary directory); a directory the
    build had to make is gone when the backfill ends."""
    spills: list[Path] = []
    run = BuildEngine.run

    def recording_run(self: BuildEngine, sql: str, table: pa.Table, name: str) -> pa.Table:
        setting = "SELECT current_setting('temp_directory') AS d FROM _t"
        spills.append(Path(run(self, setting, pa.table({"x": [1]}), "_t").column("d")[0].as_py()))
        return run(self, sql, table, name)

    monkeypatch.setattr(BuildEngine, "run", recording_run)
    monkeypatch.chdir(tmp_path)  # a lake's warehouse spills to ./.tmp
    rows = [cmpl_row(11999600 + i // 2, i + 1) for i in range(6)]  # grouped in the build engine
    result = _backfill(warehouse_path, write_zip(tmp_path / "A.zip", "FLAT_CMPL.txt", rows))
    assert result["built"] == 3 and spills
    if TEST_WAREHOUSE == "duckdb":
        beside = warehouse_path.absolute().with_name(warehouse_path.name + ".tmp")
        assert {spill.parent for spill in spills} == {beside}
        assert not beside.exists()
    else:
        assert {spill.parent for spill in spills} == {Path(tempfile.gettempdir())}
    assert not any(spill.exists() for spill in spills)


def _memory_limit_of(con: Any) -> str:
    return str(con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0])


def _duckdb_reads(limit: str) -> str:
    """``limit`` as DuckDB reports it back once set."""
    con = duckdb.connect()
    try:
        con.execute(f"SET memory_limit = '{limit}'")
        return _memory_limit_of(con)
    finally:
        con.close()


def test_the_plan_groups_and_joins_with_the_build_databases_allowance_too(
    tmp_path: Path, warehouse_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before the build database opens, the plan's steps may use its allowance as well as
    the warehouse's limit; the plan kept for pass 2 is made, and the commits run, under the
    warehouse's limit alone."""
    limits: dict[str, str] = {}
    step = FlatBulk._plan_step

    def recording_step(self: FlatBulk, table: str, query: str, params: Any) -> None:
        limits[table] = _memory_limit_of(self._con)
        step(self, table, query, params)

    commit = FlatBulk.commit

    def recording_commit(self: FlatBulk, *args: Any) -> Any:
        limits["commit"] = _memory_limit_of(self._con)
        return commit(self, *args)

    monkeypatch.setattr(FlatBulk, "_plan_step", recording_step)
    monkeypatch.setattr(FlatBulk, "commit", recording_commit)
    path = write_zip(tmp_path / "A.zip", "FLAT_CMPL.txt", [cmpl_row(11999900, 1)])
    result = cli("backfill", "nhtsa", "--warehouse", warehouse_path, "--json", "--file", path,
                 "--kind", "complaints", "--memory-limit", "64MB")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    planning = _duckdb_reads(f"{64 * 10**6 + memory_bytes(BUILD_DATABASE_MEMORY_LIMIT)}B")
    assert {t: limits[t] for t in ("plan_fingerprints", "plan_d")} == {
        "plan_fingerprints": planning,
        "plan_d": planning,
    }
    assert limits["docs"] == limits["commit"] == _duckdb_reads("64MB")


def test_the_plan_steps_run_on_the_scratch_database_unless_they_read_the_warehouse(
    tmp_path: Path,
) -> None:
    """The plan's steps that read nothing of the warehouse run on the scratch database's own
    connection (on a lake, one whose statements do not first ask the catalog for its latest
    snapshot); the others on the warehouse's: each step :data:`READS_WAREHOUSE` names cannot
    be bound on the scratch database's connection, and every other one can."""
    from warehouse.bulk import plan_sql

    steps = {table for table, _ in plan_sql.PLAN_STEPS}
    assert plan_sql.READS_WAREHOUSE and plan_sql.READS_WAREHOUSE.issubset(steps)
    assert steps != plan_sql.READS_WAREHOUSE
    with Warehouse.open(str(tmp_path / "w.duckdb")) as wh:
        con = wh._connection_for_tests()
        con.execute(f"ATTACH ':memory:' AS {plan_sql.SCRATCH}")
        con.execute(plan_sql.CREATE_SCRATCH)
        scratch = con.cursor()
        scratch.execute(f"USE {plan_sql.SCRATCH}")
        scratch.execute(plan_sql.GROUP, {"salt": "s", "after": 0})
        scratch.execute(plan_sql.CREATE_MULTI)
        given = {"prefix": "nhtsa:complaint/", "url": "file:A.zip", "lo": 0, "hi": 0}
        for table, query in plan_sql.PLAN_STEPS:
            make = f"CREATE TABLE {plan_sql.SCRATCH}.{table} AS {query}"
            params = {k: v for k, v in given.items() if f"${k}" in query}
            if table in plan_sql.READS_WAREHOUSE:
                with pytest.raises(duckdb.CatalogException):
                    scratch.execute(make, params)
                con.execute(make, params)
            else:
                scratch.execute(make, params)
        scratch.close()


def test_a_memory_limit_is_read_in_duckdbs_units() -> None:
    assert memory_bytes("128MB") == 128 * 10**6 and memory_bytes("2GiB") == 2 << 30
    assert memory_bytes("1.5 GB") == 1_500_000_000
    for limit in ("128MB", "1.5GB", "300KiB"):
        assert _duckdb_reads(f"{memory_bytes(limit)}B") == _duckdb_reads(limit)
    assert plan_memory_limit("64MB", "4MB") == f"{68 * 10**6}B"
    with pytest.raises(UsageError):
        memory_bytes("lots")


def test_a_warehouse_without_fingerprints_builds_once_and_writes_no_revision(
    tmp_path: Path, warehouse_path: Path
) -> None:
    """Revisions written before fingerprints were recorded: the first run builds every
    document (finding each unchanged), records the fingerprints, and the next builds none."""
    path = write_zip(tmp_path / "A.zip", "FLAT_CMPL.txt", [cmpl_row(11999400, 1)])
    warehouse = warehouse_path
    _backfill(warehouse, path)
    with Warehouse.open(str(warehouse)) as wh:
        wh._connection_for_tests().execute("DELETE FROM input_fingerprints")
    second = _backfill(warehouse, path, "--rescan")
    assert second["built"] == 1 and second["documents"]["unchanged"] == 1  # type: ignore[index]
    assert _backfill(warehouse, path)["built"] == 0


def test_arrow_lines_keep_iso_8859_1_text_and_flag_control_characters() -> None:
    data = "ÉTÉ\tx\nplain\ta\x01b\r\n\n".encode("iso-8859-1")
    table = checked_table(5, data)
    assert table["number"].to_pylist() == [5, 6, 7, 8]
    assert table["text"].to_pylist() == ["ÉTÉ\tx", "plain\ta\x01b", "", ""]
    assert [is_plain(text) for text in table["text"].to_pylist()] == [True, False, True, True]
    assert table["h"].type == pa.binary(32)
    raw = [b"\xc9T\xc9\tx", b"plain\ta\x01b", b"", b""]
    assert table["h"].to_pylist() == [hashlib.sha256(line).digest() for line in raw]


def test_arrow_lines_of_an_ascii_block_are_split_in_place_with_line_ends_stripped() -> None:
    data = b"a\tb\r\nc\x7f\r\r\n\n\td"
    table = checked_table(1, data)
    assert table["text"].to_pylist() == ["a\tb", "c\x7f", "", "\td"]
    raw = [b"a\tb", b"c\x7f", b"", b"\td"]
    assert table["h"].to_pylist() == [hashlib.sha256(line).digest() for line in raw]


def test_a_line_with_a_control_character_is_left_to_the_line_at_a_time_checker(
    tmp_path: Path,
) -> None:
    lines = ["\t".join(cmpl_row(11999000 + i, i, CDESCR=text)) for i, text in
             enumerate(["plain", "bell\x07", "del\x7f is printable in JSON"])]  # fmt: skip
    assert _bulk_check(tmp_path, flat_spec(CMPL, VehicleFilter()), lines)[0].suspects == [2]


def test_a_fingerprint_is_the_digest_of_the_salt_and_its_lines_digests_in_hex(
    tmp_path: Path, warehouse_path: Path
) -> None:
    """The recorded fingerprint of a document is the same formula whatever form the lines'
    digests take inside a run: recorded fingerprints of earlier runs keep matching."""
    rows = [cmpl_row(11999400, 1), cmpl_row(11999401, 2), cmpl_row(11999400, 3, CRASH="Y")]
    path = write_zip(tmp_path / "F.zip", "FLAT_CMPL.txt", rows)
    _backfill(warehouse_path, path)
    raw = ["\t".join(row).encode("iso-8859-1") for row in rows]
    salt = flat_spec(CMPL, VehicleFilter()).salt

    def expected(*lines: bytes) -> str:
        text = salt + "".join(hashlib.sha256(line).hexdigest() for line in lines)
        return hashlib.sha256(text.encode()).hexdigest()

    with Warehouse.open(str(warehouse_path)) as wh:
        recorded = dict(
            wh._connection_for_tests()
            .execute("SELECT doc_id, fingerprint FROM input_fingerprints")
            .fetchall()
        )
    assert recorded == {
        "nhtsa/complaint/11999400": expected(raw[0], raw[2]),
        "nhtsa/complaint/11999401": expected(raw[1]),
    }


def test_documents_grouped_in_shares_are_the_documents_grouped_at_once(
    tmp_path: Path, warehouse_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bench.nhtsa_backfill import generate
    from pipelines.backfill.request import BackfillRequest
    from pipelines.backfill.run import run_backfill
    from warehouse import history
    from warehouse.bulk import plan_sql

    path = generate(tmp_path / "GEN.zip", 2_000)
    stored = []
    for rows_per_share in (1_000_000, 150):
        monkeypatch.setattr(plan_sql, "ROWS_PER_SHARE", rows_per_share)
        with Warehouse.open(str(warehouse_path)) as wh:
            wh._connection_for_tests().execute("DELETE FROM input_fingerprints")
            result = run_backfill(wh, BackfillRequest(path=path, kind="complaints", rescan=True))
            assert result.built == result.documents.records  # no fingerprint to skip by
            fingerprints = (
                wh._connection_for_tests()
                .execute(
                    "SELECT doc_id, fingerprint FROM input_fingerprints WHERE run_id = ?",
                    [result.run_id],
                )
                .fetchall()
            )
            assert len(fingerprints) == result.built
            stored.append(
                sorted((r.doc_id, r.content_hash) for r in history.revisions(wh))
                + sorted(fingerprints)
            )
    assert stored[0] == stored[1] and len(stored[0]) > 2_000  # no second revision either


def test_a_new_body_version_builds_every_document_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fingerprints recorded under another shape of the bytes are not trusted."""
    from sources.nhtsa.flatfile import spec as flatfile

    path = write_zip(
        tmp_path / "A.zip", "FLAT_CMPL.txt", [cmpl_row(11999500 + i, i) for i in (1, 2)]
    )
    warehouse = tmp_path / "w.duckdb"
    _backfill(warehouse, path)
    assert _backfill(warehouse, path)["built"] == 0
    monkeypatch.setattr(flatfile, "FLAT_BODY_VERSION", "flat-body-v2")
    again = _backfill(warehouse, path)
    assert again["built"] == 2 and again["documents"]["unchanged"] == 2  # type: ignore[index]


def _snapshot_copies(warehouse: Path) -> dict[str, int]:
    with Warehouse.open(str(warehouse), read_only=True) as wh:
        rows = wh._connection_for_tests().execute(
            "SELECT content_hash, count(*) FROM snapshots GROUP BY content_hash"
        )
        return {str(h): int(n) for h, n in rows.fetchall()}


def test_bytes_stored_before_are_not_stored_again(tmp_path: Path, warehouse_path: Path) -> None:
    """A document whose lines go back to an earlier wording gets that wording's hash again,
    and its bytes stay stored once."""
    first = write_zip(tmp_path / "A.zip", "FLAT_CMPL.txt", [cmpl_row(11999600, 1)])
    second = write_zip(tmp_path / "B.zip", "FLAT_CMPL.txt", [cmpl_row(11999600, 2)])
    _backfill(warehouse_path, first)
    assert _backfill(warehouse_path, second)["documents"]["changed"] == 1  # type: ignore[index]
    assert _backfill(warehouse_path, first)["documents"]["changed"] == 1  # type: ignore[index]
    from warehouse import history

    with Warehouse.open(str(warehouse_path), read_only=True) as wh:
        hashes = [r.content_hash for r in history.revisions(wh)]
    assert len(hashes) == 3 and hashes[0] == hashes[2] != hashes[1]
    assert _snapshot_copies(warehouse_path) == {hashes[0]: 1, hashes[1]: 1}


def test_a_stored_digest_is_looked_up_not_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Which bytes are stored is decided by the hashes themselves: a batch whose digests all
    look stored (as a 64-bit collision would make them) still stores every body it lacks."""
    from warehouse.bulk import commit_sql

    path = write_zip(
        tmp_path / "A.zip", "FLAT_CMPL.txt", [cmpl_row(11999700 + i, i) for i in (1, 2, 3)]
    )
    _backfill(tmp_path / "reference.duckdb", path)
    expected = _snapshot_copies(tmp_path / "reference.duckdb")
    assert len(expected) == 3
    values = ", ".join(f"('{h}')" for h in expected)
    monkeypatch.setattr(
        commit_sql,
        "STORED_DIGESTS",
        "CREATE OR REPLACE TEMP TABLE _flat_stored AS "
        f"SELECT hash(h) AS digest FROM (VALUES {values}) t(h)",
    )
    result = _backfill(tmp_path / "w.duckdb", path)
    assert result["documents"]["new"] == 3  # type: ignore[index]
    assert _snapshot_copies(tmp_path / "w.duckdb") == expected


def test_bytes_stored_by_one_batch_are_not_stored_again_by_a_later_one(
    tmp_path: Path, warehouse_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two documents of one run with the same bytes, committed in two batches: the second
    batch finds the first batch's bytes stored (the digests each batch adds to what the plan
    read) and does not store them again."""
    from warehouse.bulk import engine

    same = b'{"modelYears":[],"rows":[]}'
    hashed = engine.hashed

    def all_alike(table: pa.Table) -> pa.Table:
        bodies = pa.array([same] * len(table), pa.binary())
        return hashed(table.set_column(table.schema.get_field_index("body"), "body", bodies))

    monkeypatch.setattr(engine, "hashed", all_alike)
    rows = [cmpl_row(11999800 + i, i + 1) for i in range(3)]
    path = write_zip(tmp_path / "A.zip", "FLAT_CMPL.txt", rows)
    result = cli("backfill", "nhtsa", "--warehouse", warehouse_path, "--json", "--file", path,
                 "--kind", "complaints", "--batch-size", "1")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["documents"]["new"] == 3
    assert _snapshot_copies(warehouse_path) == {hashlib.sha256(same).hexdigest(): 1}


def test_a_batch_missing_the_bytes_of_a_document_to_build_commits_nothing(
    tmp_path: Path, warehouse_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A document the plan builds whose bytes do not reach its batch stops the backfill
    before that batch commits: the batches before it stay, it and the rest do not."""
    take_built = FlatBulk.take_built
    dropped: list[str] = []

    def losing_one(self: FlatBulk, hi: int) -> pa.Table:
        built = take_built(self, hi)
        if hi >= 3 and not dropped and len(built):
            dropped.append(str(built["doc_id"][0]))
            return built.slice(1)
        return built

    monkeypatch.setattr(FlatBulk, "take_built", losing_one)
    rows = [cmpl_row(11999900 + i, i + 1) for i in range(5)]
    path = write_zip(tmp_path / "A.zip", "FLAT_CMPL.txt", rows)
    result = cli("backfill", "nhtsa", "--warehouse", warehouse_path, "--json", "--file", path,
                 "--kind", "complaints", "--batch-size", "2")  # fmt: skip
    assert result.exit_code == 1
    assert "1 documents ending by line 4 were not built" in result.stderr
    assert "Traceback" not in result.stderr
    assert dropped == ["nhtsa/complaint/11999902"]
    with Warehouse.open(str(warehouse_path), read_only=True) as wh:
        stored = (
            wh._connection_for_tests()
            .execute("SELECT doc_id FROM revisions ORDER BY doc_id")
            .fetchall()
        )
    assert stored == [("nhtsa/complaint/11999900",), ("nhtsa/complaint/11999901",)]


def test_built_bodies_are_hashed_chunk_by_chunk_in_place() -> None:
    """A build's bodies arrive in several chunks (one per branch of its union, at least):
    each is hashed where it is, and the table keeps the chunks it was given."""
    bodies = [b'{"a":1}', b"", b'{"b":"\xc3\xa9"}', b"x" * 3000]
    chunked = pa.chunked_array([pa.array(bodies[:1], pa.binary()),
                                pa.array(bodies[1:3], pa.binary()),
                                pa.array([b"pad", *bodies[3:]], pa.binary()).slice(1)])  # fmt: skip
    table = pa.table(
        {
            "doc_id": [f"d{i}" for i in range(4)],
            "end_line": pa.array(range(4), pa.int64()),
            "body": chunked,
            "source_format": ["f"] * 4,
            "lines": ["1"] * 4,
        }
    )
    result = hashed(table)
    assert result["content_hash"].to_pylist() == [hashlib.sha256(b).hexdigest() for b in bodies]
    assert result["size"].to_pylist() == [len(b) for b in bodies]
    assert result["body"].num_chunks == 3 and result["body"].to_pylist() == bodies


def test_a_commit_passes_on_whole_blocks_and_splits_only_the_one_it_ends_in() -> None:
    def block(*ends: int) -> pa.Table:
        return pa.table({"end_line": pa.array(ends, pa.int64()), "body": [b"x"] * len(ends)})

    before, straddling, after = block(3, 1, 5), block(9, 7, 6, 11), block(14, 12)
    due, later = split_built([before, block(), straddling, after], hi=8)
    assert due[0] is before and later[-1] is after  # passed on as they are: not copied
    assert [t["end_line"].to_pylist() for t in due] == [[3, 1, 5], [7, 6]]
    assert [t["end_line"].to_pylist() for t in later] == [[9, 11], [14, 12]]


# -- a block's lines as Arrow: what each line-at-a-time reading gives ----------------------
_BLOCK_BYTES = st.lists(
    st.sampled_from([b"a", b"7", b"\t", b"\n", b"\r", b"\r\n", b"\xe9", b"\xff", b"\x01",
                     b"\x7f", b'"', b"\\", b" "]),
    max_size=60,
).map(b"".join)  # fmt: skip


def _reference_lines(data: bytes) -> list[bytes]:
    return [line.rstrip(b"\r") for line in data.split(b"\n")]


@given(data=_BLOCK_BYTES)
def test_a_blocks_tables_hold_each_line_as_read_one_at_a_time(data: bytes) -> None:
    """Lines split at ``\\n``, carriage returns before it stripped, decoded from ISO-8859-1;
    each raw line's SHA-256; whether a line holds a control character (but the tab)."""
    raw = _reference_lines(data)
    numbers = list(range(7, 7 + len(raw)))
    texts = [line.decode("iso-8859-1") for line in raw]
    assert text_table(7, data).to_pydict() == {"number": numbers, "text": texts}
    assert checked_table(7, data).to_pydict() == {
        "number": numbers,
        "text": texts,
        "h": [hashlib.sha256(line).digest() for line in raw],
    }
    plain = [all(b >= 0x20 or b == 0x09 for b in line) for line in raw]
    assert [is_plain(text) for text in texts] == plain


def test_value_hashes_read_sliced_and_wide_arrays_in_place() -> None:
    values = [b"", b"a", b"\x00\xff" * 2000, "é".encode()]
    expected = [hashlib.sha256(v).hexdigest() for v in values]
    for kind in (pa.binary(), pa.large_binary()):
        array = pa.array([b"skipped", *values], kind)
        assert value_sha256(array.slice(1)) == expected
    assert value_sha256(pa.array(["", "a", "é"], pa.large_string())) == [
        hashlib.sha256(v.encode()).hexdigest() for v in ("", "a", "é")
    ]
    with pytest.raises(ValueError):
        value_sha256(pa.array([b"a", None]))
    digests = sha256_digests(values)
    assert digests.type == pa.binary(32)
    assert digests.to_pylist() == [bytes.fromhex(h) for h in expected]
