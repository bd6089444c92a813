"""The transparency log through the command line: entries appended by ingest, checkpoints
signed with the key `receipts log init` made, proofs checked by the tlog-proof reader, and
every row alteration the issue lists refused by `verify`, `log verify`, `show`, `export`
and `publish`."""

from __future__ import annotations

import json
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import TEST_WAREHOUSE, cli, write_manifest
from warehouse.store import Warehouse
from warehouse.tlog import entries, merkle, note, store
from warehouse.tlog.proof import verify_proof

MANIFEST = """
[corpus]
name = "synth"
namespace = "synth"

[[synthetic]]
name = "a"
count = 12
size = 120
complete = true
"""
CHANGED = MANIFEST.replace("size = 120", "size = 121")
assert CHANGED != MANIFEST


@pytest.fixture
def manifest(tmp_path: Path) -> Path:
    return write_manifest(tmp_path, MANIFEST)


@pytest.fixture
def key(tmp_path: Path, warehouse_path: Path) -> tuple[Path, str]:
    path = tmp_path / "log.key"
    made = cli("log", "init", "--key", path, "--warehouse", warehouse_path)
    assert made.exit_code == 0, made.output
    return path, made.stdout.strip()


def _sql(warehouse_path: Path, statement: str) -> list[tuple[object, ...]]:
    with Warehouse.open(str(warehouse_path)) as wh:
        return wh._connection_for_tests().execute(statement).fetchall()


def test_init_makes_a_private_key_and_prints_its_verifier(
    key: tuple[Path, str], warehouse_path: Path
) -> None:
    path, verifier = key
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    parsed = note.parse_verifier(verifier)
    assert parsed.name.startswith("receipts/")
    again = cli("log", "init", "--key", path, "--warehouse", warehouse_path)
    assert again.exit_code == 1 and "refusing to overwrite" in again.stderr


def test_ingest_logs_each_revision_and_signs_its_checkpoint(
    manifest: Path, warehouse_path: Path, key: tuple[Path, str]
) -> None:
    env = {"RECEIPTS_LOG_KEY": str(key[0])}
    assert cli("ingest", manifest, "--warehouse", warehouse_path, env=env).exit_code == 0
    write_manifest(manifest.parent, CHANGED)
    assert cli("ingest", manifest, "--warehouse", warehouse_path, env=env).exit_code == 0
    rows = _sql(warehouse_path, f"SELECT idx, kind, entry FROM {store.entries_sql()} ORDER BY idx")
    assert [r[0] for r in rows] == list(range(24))
    # a revision's bytes are not stored but rebuilt from its rows (migration 0012); a lake
    # stores them all (DuckLake's flush of inlined rows refuses a NULL one)
    stored = 24 if str(warehouse_path).startswith("ducklake:") else 0
    assert _sql(warehouse_path, "SELECT count(entry) FROM tlog_entries") == [(stored,)]
    parsed = [entries.parse(bytes(r[2])) for r in rows]  # type: ignore[arg-type]
    assert {p.get("revision") for p in parsed[:12]} == {"1"}
    assert {p.get("revision") for p in parsed[12:]} == {"2"}
    cp = json.loads(cli("log", "checkpoint", "--json", "--warehouse", warehouse_path).stdout)
    assert cp["size"] == 24 and cp["signed"] and cp["log_size"] == 24
    ok = cli("log", "verify", "--key", key[1], "--warehouse", warehouse_path)
    assert ok.exit_code == 0, ok.output


def test_without_a_key_checkpoints_are_unsigned_and_say_so(
    manifest: Path, warehouse_path: Path, tmp_path: Path
) -> None:
    run = cli("ingest", manifest, "--warehouse", warehouse_path)
    assert run.exit_code == 0
    assert "checkpoint of 12 entries is unsigned" in run.stderr
    cp = json.loads(cli("log", "checkpoint", "--json", "--warehouse", warehouse_path).stdout)
    assert cp["signed"] is False and cp["size"] == 12
    published = cli("log", "publish", "--out", tmp_path / "pub",
                    "--warehouse", warehouse_path)  # fmt: skip
    assert published.exit_code == 2 and "unsigned" in published.stderr


def test_a_proof_checks_out_with_the_verifier_key(
    manifest: Path, warehouse_path: Path, key: tuple[Path, str], tmp_path: Path
) -> None:
    env = {"RECEIPTS_LOG_KEY": str(key[0])}
    cli("ingest", manifest, "--warehouse", warehouse_path, env=env)
    doc = str(_sql(warehouse_path, "SELECT min(doc_id) FROM revisions")[0][0])
    out = tmp_path / "p.tlog-proof"
    proved = cli("log", "prove", doc, "--out", out, "--warehouse", warehouse_path)
    assert proved.exit_code == 0, proved.output
    [(entry,)] = _sql(
        warehouse_path, f"SELECT entry FROM {store.entries_sql()} WHERE doc_id = '{doc}'"
    )
    verifier = note.parse_verifier(key[1])
    _, head = verify_proof(out.read_bytes(), bytes(entry), [verifier])  # type: ignore[arg-type]
    assert head.size == 12
    with pytest.raises(merkle.ProofError):
        verify_proof(out.read_bytes(), bytes(entry) + b"x", [verifier])  # type: ignore[operator]


def test_publish_writes_only_new_tiles_the_second_time(
    manifest: Path, warehouse_path: Path, key: tuple[Path, str], tmp_path: Path
) -> None:
    env = {"RECEIPTS_LOG_KEY": str(key[0])}
    cli("ingest", manifest, "--warehouse", warehouse_path, env=env)
    out = tmp_path / "pub"
    first = json.loads(cli("log", "publish", "--out", out, "--json",
                           "--warehouse", warehouse_path).stdout)  # fmt: skip
    assert first["size"] == 12 and (out / "checkpoint").exists()
    same = json.loads(cli("log", "publish", "--out", out, "--json",
                          "--warehouse", warehouse_path).stdout)  # fmt: skip
    assert same["previous_size"] == 12 and same["written"] <= 1  # the checkpoint alone


# -- the row alterations the issue lists -----------------------------------------------------
def _doc(warehouse_path: Path) -> str:
    return str(_sql(warehouse_path, "SELECT min(doc_id) FROM revisions")[0][0])


def _earlier(warehouse_path: Path, doc: str) -> None:
    _sql(warehouse_path, "UPDATE revisions SET content_hash = (SELECT content_hash FROM "
         f"revisions WHERE doc_id = '{doc}' AND revision = 1) WHERE doc_id = '{doc}' "
         "AND revision = 2")  # fmt: skip


def _delete_current(warehouse_path: Path, doc: str) -> None:
    _sql(warehouse_path, f"DELETE FROM revisions WHERE doc_id = '{doc}' AND revision = 2")


def _delete_first(warehouse_path: Path, doc: str) -> None:
    _sql(warehouse_path, f"DELETE FROM revisions WHERE doc_id = '{doc}' AND revision = 1")


def _tombstone_flag(warehouse_path: Path, doc: str) -> None:
    _sql(warehouse_path, f"UPDATE revisions SET tombstone = true WHERE doc_id = '{doc}' "
         "AND revision = 2")  # fmt: skip


def _delete_document(warehouse_path: Path, doc: str) -> None:
    _sql(warehouse_path, f"DELETE FROM documents WHERE doc_id = '{doc}'")


def _other_snapshot(warehouse_path: Path, doc: str) -> None:
    _sql(warehouse_path, "UPDATE revisions SET content_hash = (SELECT content_hash FROM "
         f"revisions WHERE doc_id <> '{doc}' AND revision = 2 LIMIT 1) "
         f"WHERE doc_id = '{doc}' AND revision = 2")  # fmt: skip


def _duplicate(warehouse_path: Path, doc: str) -> None:
    _sql(warehouse_path, f"INSERT INTO revisions SELECT * FROM revisions WHERE doc_id = '{doc}' "
         "AND revision = 2")  # fmt: skip


ALTERATIONS: dict[str, Callable[[Path, str], None]] = {
    "pointed at its own earlier snapshot": _earlier,
    "current revision deleted": _delete_current,
    "revision 1 deleted": _delete_first,
    "tombstone flag on a revision with content": _tombstone_flag,
    "documents row deleted": _delete_document,
    "pointed at another document's snapshot": _other_snapshot,
    "row duplicated": _duplicate,
}


# On a lake (the lake subset) three of them: a row's deletion, its rewriting in place and
# one pointed elsewhere are DuckLake's distinct writes; the checks are the same SQL.
CHECKED = (
    sorted(ALTERATIONS)
    if TEST_WAREHOUSE == "duckdb"
    else ["current revision deleted", "pointed at another document's snapshot",
          "tombstone flag on a revision with content"]
)  # fmt: skip


@pytest.mark.parametrize("alteration", CHECKED)
def test_each_row_alteration_is_named_and_refused(
    alteration: str, manifest: Path, warehouse_path: Path, tmp_path: Path
) -> None:
    cli("ingest", manifest, "--warehouse", warehouse_path)
    write_manifest(manifest.parent, CHANGED)
    cli("ingest", manifest, "--warehouse", warehouse_path)
    assert cli("verify", "--warehouse", warehouse_path).exit_code == 0
    doc = _doc(warehouse_path)
    ALTERATIONS[alteration](warehouse_path, doc)

    logged = cli("log", "verify", "--json", "--warehouse", warehouse_path)
    assert logged.exit_code == 1
    report = json.loads(logged.stdout)
    assert report["problems"][0]["doc_id"] == doc, report["problems"]
    verified = cli("verify", "--warehouse", warehouse_path)
    assert verified.exit_code == 1 and doc in verified.output

    if alteration != "revision 1 deleted":  # the current revision is what is served
        shown = cli("show", doc, "--warehouse", warehouse_path)
        assert shown.exit_code != 0 and doc in shown.stderr
    exported = cli("export", "--out", tmp_path / "x", "--warehouse", warehouse_path)
    assert exported.exit_code == 1 and "transparency log" in exported.stderr
    pushed = cli("publish", manifest, "--warehouse", warehouse_path,
                 "--out", tmp_path / "p.ndjson")  # fmt: skip
    assert pushed.exit_code == 1 and "transparency log" in pushed.stderr


def test_an_old_warehouse_gets_its_history_logged_at_migration(
    manifest: Path, warehouse_path: Path
) -> None:
    """A warehouse from before the log (its history written, migration 0009 not applied)
    gets every revision logged, in order, when `migrate` applies 0009. Today's writers need
    the later migrations too, so the history is written first and the log taken away."""
    assert cli("ingest", manifest, "--warehouse", warehouse_path).exit_code == 0
    write_manifest(manifest.parent, CHANGED)
    assert cli("ingest", manifest, "--warehouse", warehouse_path).exit_code == 0
    with Warehouse.open(str(warehouse_path)) as wh:
        con = wh._connection_for_tests()
        for table in ("tlog_entries", "tlog_hashes", "tlog_checkpoints"):
            con.execute(f"DROP TABLE {table}")
        con.execute("DELETE FROM schema_migrations WHERE version = 9")
    assert cli("migrate", "--warehouse", warehouse_path).exit_code == 0
    rows = _sql(warehouse_path, "SELECT revision FROM tlog_entries ORDER BY idx")
    assert [r[0] for r in rows] == [1] * 12 + [2] * 12
    assert cli("log", "verify", "--warehouse", warehouse_path).exit_code == 0


@pytest.mark.parametrize("revision", [1, 2])
def test_a_log_with_stored_entries_migrates_and_checks_both_kinds(
    revision: int, manifest: Path, warehouse_path: Path
) -> None:
    """A log made before migration 0012 stored every entry's bytes; after it, a revision's
    are rebuilt from its rows. Both verify, and a rewritten row is caught in either."""
    assert cli("ingest", manifest, "--warehouse", warehouse_path).exit_code == 0
    with Warehouse.open(str(warehouse_path)) as wh:  # as a version before 0012 left it
        con = wh._connection_for_tests()
        con.execute(f"CREATE TEMP TABLE _texts AS SELECT idx, entry FROM {store.entries_sql()}")
        con.execute(
            "UPDATE tlog_entries SET entry = t.entry FROM _texts t WHERE t.idx = tlog_entries.idx"
        )
        con.execute("ALTER TABLE tlog_entries ALTER COLUMN entry SET NOT NULL")
        con.execute("DELETE FROM schema_migrations WHERE version = 12")
    assert cli("migrate", "--warehouse", warehouse_path).exit_code == 0
    write_manifest(manifest.parent, CHANGED)
    assert cli("ingest", manifest, "--warehouse", warehouse_path).exit_code == 0
    stored = _sql(warehouse_path, "SELECT revision, count(entry), count(*) FROM tlog_entries "
                  "GROUP BY revision ORDER BY revision")  # fmt: skip
    lake = str(warehouse_path).startswith("ducklake:")  # a lake stores every entry
    assert stored == [(1, 12, 12), (2, 12 if lake else 0, 12)]
    assert cli("log", "verify", "--warehouse", warehouse_path).exit_code == 0
    doc = _doc(warehouse_path)
    _sql(warehouse_path, "UPDATE revisions SET source_url = 'https://forged.example/' "
         f"WHERE doc_id = '{doc}' AND revision = {revision}")  # fmt: skip
    logged = cli("log", "verify", "--json", "--warehouse", warehouse_path)
    assert logged.exit_code == 1
    [problem] = json.loads(logged.stdout)["problems"]
    assert problem["doc_id"] == doc and "the row was rewritten" in problem["message"]
    if revision == 2:  # the current revision is what is served
        shown = cli("show", doc, "--warehouse", warehouse_path)
        assert shown.exit_code != 0 and "the row was rewritten" in shown.stderr


def _kept(warehouse_path: Path, tmp_path: Path, name: str = "kept") -> Path:
    kept = tmp_path / name
    shown = cli("log", "checkpoint", "--warehouse", warehouse_path)
    assert shown.exit_code == 0
    kept.write_text(shown.stdout)
    return kept


def test_the_log_extends_a_checkpoint_an_outsider_kept(
    manifest: Path, warehouse_path: Path, key: tuple[Path, str], tmp_path: Path
) -> None:
    env = {"RECEIPTS_LOG_KEY": str(key[0])}
    cli("ingest", manifest, "--warehouse", warehouse_path, env=env)
    kept = _kept(warehouse_path, tmp_path)
    write_manifest(manifest.parent, CHANGED)
    cli("ingest", manifest, "--warehouse", warehouse_path, env=env)
    ok = cli("log", "verify", "--checkpoint", kept, "--key", key[1], "--json",
             "--warehouse", warehouse_path)  # fmt: skip
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.stdout)["kept_checkpoint"] == 12

    # Another log's checkpoint, and one signed by another key, are refused as such.
    other = tmp_path / "other.key"
    other_verifier = cli("log", "init", "--key", other, "--name", "someone.example/log",
                         "--warehouse", warehouse_path).stdout.strip()  # fmt: skip
    refused = cli("log", "verify", "--checkpoint", kept, "--key", other_verifier,
                  "--warehouse", warehouse_path)  # fmt: skip
    assert refused.exit_code == 1 and "refused" in refused.output
    foreign = tmp_path / "foreign"
    foreign.write_text(kept.read_text().replace("receipts/", "elsewhere/", 1))
    refused = cli("log", "verify", "--checkpoint", foreign, "--warehouse", warehouse_path)
    assert refused.exit_code == 1 and "another log" in refused.output


def test_entries_rewritten_under_a_kept_checkpoint_are_caught(
    manifest: Path, warehouse_path: Path, tmp_path: Path
) -> None:
    cli("ingest", manifest, "--warehouse", warehouse_path)
    kept = _kept(warehouse_path, tmp_path)
    doc = _doc(warehouse_path)
    # Rewrite a row, its entry, its leaf and the whole stored tree consistently, and the
    # checkpoints: only a checkpoint kept outside can tell.
    _sql(warehouse_path, "UPDATE revisions SET source_url = 'https://forged.example/' "
         f"WHERE doc_id = '{doc}'")  # fmt: skip
    with Warehouse.open(str(warehouse_path)) as wh:
        from warehouse.tlog.entries_sql import ROW_COLUMNS, revision_entry, rows_with_context

        con = wh._connection_for_tests()
        con.execute(
            "UPDATE tlog_entries SET entry = (SELECT "
            f"{revision_entry(ROW_COLUMNS)} "
            + rows_with_context(where=f"r.doc_id = '{doc}'", docs=f"doc_id = '{doc}'")
            + f") WHERE doc_id = '{doc}'"
        )
        con.execute("DELETE FROM tlog_hashes")
        con.execute("DELETE FROM tlog_checkpoints")
        size = store.size(con)
        con.execute(f"CREATE TEMP VIEW _all AS SELECT idx, entry FROM {store.entries_sql()}")
        store.append_hashes(con, 0, size, source="_all")
    relogged = cli("log", "verify", "--warehouse", warehouse_path)
    assert relogged.exit_code == 0  # the rows and the log agree again...
    caught = cli("log", "verify", "--checkpoint", kept, "--warehouse", warehouse_path)
    assert caught.exit_code == 1  # ...but not with what an outsider kept
    assert "does not extend the kept checkpoint of size 12" in caught.output


def test_a_key_file_open_to_others_leaves_the_run_finished_and_its_checkpoint_unsigned(
    manifest: Path, warehouse_path: Path, key: tuple[Path, str]
) -> None:
    key[0].chmod(0o644)
    run = cli("ingest", manifest, "--warehouse", warehouse_path, "--json",
              env={"RECEIPTS_LOG_KEY": str(key[0])})  # fmt: skip
    assert run.exit_code == 0, run.output
    assert "cannot sign the checkpoint" in run.stderr and "chmod 600" in run.stderr
    assert json.loads(run.stdout)["log_checkpoint"]["signed"] is False


def test_a_log_made_by_hand_keeps_its_entries_and_publishes(
    warehouse_path: Path, tmp_path: Path
) -> None:
    """Entries appended as bytes, with no rows to rebuild them from, are stored."""
    from warehouse.tlog import log as tlog

    data = [b"entry %d\n" % i for i in range(300)]
    with Warehouse.open(str(warehouse_path)) as wh:
        tlog.append_entries(wh, [f"x/y/{i}" for i in range(300)], [1] * 300, data)
        tlog.record_checkpoint(wh, note.Signer("hand.example/log", bytes(range(32))))
        published = tlog.publish(wh, tmp_path / "tiles")
    assert published.size == 300
    bundle = (tmp_path / "tiles" / "tile" / "entries" / "000").read_bytes()
    assert data[0] in bundle and data[255] in bundle


def test_bundles_of_holding_claims_verify_on_every_backend(
    manifest: Path,
    warehouse_path: Path,
    key: tuple[Path, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``verify-claims --bundles`` (past the first bundle, through the writer process that
    creates every file before its bytes come) and ``prove`` read their rows on a DuckDB file
    (its snapshots picked by rowid) and on a lake (by hash); every bundle verifies against
    the key."""
    monkeypatch.setattr("pipelines.proofs.files.INLINE_FILES", 1)
    env = {"RECEIPTS_LOG_KEY": str(key[0])}
    assert cli("ingest", manifest, "--warehouse", warehouse_path, env=env).exit_code == 0
    rows = _sql(warehouse_path, "SELECT r.doc_id, s.body FROM revisions r JOIN snapshots s "
                "USING (content_hash) ORDER BY r.doc_id")  # fmt: skip
    claims = tmp_path / "claims.ndjson"
    claims.write_text(
        "".join(
            json.dumps({"claim_id": f"c{n}", "doc_id": doc, "revision": 1,
                        "quote": json.loads(bytes(body))["title"]}) + "\n"  # type: ignore[arg-type]
            for n, (doc, body) in enumerate(rows)
        )
    )  # fmt: skip
    out = tmp_path / "bundles"
    checked = cli("verify-claims", "--file", claims, "--bundles", out,
                  "--warehouse", warehouse_path, env=env)  # fmt: skip
    assert checked.exit_code == 0, checked.output
    written = sorted(out.iterdir())
    assert [p.name for p in written] == sorted(f"c{n}.receipt.json" for n in range(12))
    proved = tmp_path / "one.receipt.json"
    doc, body = rows[0]
    title = json.loads(bytes(body))["title"]  # type: ignore[arg-type]
    made = cli("prove", doc, title, "--out", proved, "--warehouse", warehouse_path, env=env)
    assert made.exit_code == 0, made.output
    for path in [proved, *written]:
        verified = cli("verify-bundle", path, "--key", key[1])
        assert verified.exit_code == 0, verified.output
