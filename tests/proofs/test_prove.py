"""`receipts prove` writes a bundle that `receipts verify-bundle` checks step by step; every
bad bundle of the issue is refused with the failing step named, never a traceback."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import jsonschema
import pytest

from pipelines.proofs.verify_receipt import STEPS
from tests.conftest import cli
from tests.proofs.bad_bundles import bad_files
from tests.proofs.conftest import (
    COMMIT,
    COMPLAINT,
    NOTES,
    SUMMARY_1,
    SUMMARY_2,
    Signed,
    _record,
    complaint,
    load,
    make_signed_warehouse,
    prove,
)
from warehouse.ingest import Ingestor
from warehouse.records import Listing
from warehouse.runs import start_run
from warehouse.store import Warehouse

SCHEMA = json.loads((Path(__file__).parents[2] / "docs/proof-bundle.schema.json").read_text())
QUOTE = "the vehicle\u2019s automatic emergency braking engaged"


def verify(path: Path, *args: object) -> tuple[int, dict[str, str]]:
    result = cli("verify-bundle", path, "--json", *args)
    report = json.loads(result.stdout)
    return result.exit_code, {s["step"]: s["status"] for s in report["steps"]}


@pytest.fixture(scope="module")
def other(tmp_path_factory: pytest.TempPathFactory) -> Signed:
    """Another warehouse: another log, another key."""
    return make_signed_warehouse(tmp_path_factory.mktemp("other"), another_log=True)


def test_a_json_quote_proves_and_verifies(signed: Signed, tmp_path: Path) -> None:
    out = tmp_path / "c.receipt.json"
    code, _, stderr = prove(signed, out, COMPLAINT, QUOTE, "--revision", "1")
    assert code == 0, stderr
    bundle = load(out)
    jsonschema.validate(bundle, SCHEMA)
    quote = bundle["quote"]
    assert quote["locator"]["pointer"] == "/summary"  # type: ignore[index]
    start, end = quote["locator"]["start"], quote["locator"]["end"]  # type: ignore[index]
    assert SUMMARY_1[start:end] == quote["exact"]  # type: ignore[index]
    assert quote["exact"] == "the vehicle\u2019s  automatic emergency braking engaged"  # type: ignore[index]
    assert bundle["document"]["revision"] == 1  # type: ignore[index]
    assert bundle["snapshot"]["canonical_form"] == "rfc8785"  # type: ignore[index]
    assert verify(out, "--key", signed.verifier) == (0, dict.fromkeys(STEPS, "ok"))
    text = cli("verify-bundle", out)
    assert text.exit_code == 0 and "the bundle holds" in text.stdout
    assert [line.split()[-1] for line in text.stdout.splitlines()[:6]] == list(STEPS)


def test_a_log_whose_entries_are_not_stored_proves_the_same_bundle(
    tmp_path: Path,
) -> None:
    """A DuckDB file written between migration 0012 and the writers' return to storing every
    entry holds NULL entries: a bundle's entry is rebuilt from the rows, byte for byte the
    one stored, and the bundle verifies."""
    signed = make_signed_warehouse(tmp_path)
    stored, rebuilt = tmp_path / "stored.receipt.json", tmp_path / "rebuilt.receipt.json"
    assert prove(signed, stored, COMPLAINT, QUOTE, "--revision", "1")[0] == 0
    with Warehouse.open(signed.warehouse) as wh:
        wh._connection_for_tests().execute(
            "UPDATE tlog_entries SET entry = NULL WHERE doc_id IS NOT NULL"
        )
    code, _, stderr = prove(signed, rebuilt, COMPLAINT, QUOTE, "--revision", "1")
    assert code == 0, stderr
    assert load(rebuilt)["log"] == load(stored)["log"]
    assert verify(rebuilt, "--key", signed.verifier) == (0, dict.fromkeys(STEPS, "ok"))


def test_a_markdown_quote_carries_its_version_url(signed: Signed, tmp_path: Path) -> None:
    out = tmp_path / "n.receipt.json"
    code, _, stderr = prove(signed, out, NOTES, "The pedal went *all the way* down.")
    assert code == 0, stderr
    bundle = load(out)
    jsonschema.validate(bundle, SCHEMA)
    links = bundle["citation"]["robust_links"]  # type: ignore[index]
    assert links["data-versionurl"] == (
        f"https://github.com/acme/notes/blob/{COMMIT}/docs/brakes.md"
    )
    assert links["data-originalurl"].startswith("https://raw.githubusercontent.com/acme/notes/")
    assert bundle["quote"]["locator"]["pointer"] is None  # type: ignore[index]
    assert bundle["snapshot"]["canonical_form"] == "raw"  # type: ignore[index]
    assert verify(out)[0] == 0


def test_a_quote_that_holds_only_across_markup_is_refused(signed: Signed, tmp_path: Path) -> None:
    out = tmp_path / "m.receipt.json"
    holds = cli("verify-quote", NOTES, "The pedal went all the way down.",
                "--warehouse", signed.warehouse)  # fmt: skip
    assert holds.exit_code == 0  # receipts' reading rules: emphasis is not text
    code, _, stderr = prove(signed, out, NOTES, "The pedal went all the way down.")
    assert code == 1 and "no span of the stored text reads as it" in stderr
    assert not out.exists()


def test_a_quote_the_revision_does_not_hold_is_refused(signed: Signed, tmp_path: Path) -> None:
    out = tmp_path / "r.receipt.json"
    code, _, stderr = prove(signed, out, COMPLAINT, "A software update was applied",
                            "--revision", "1")  # fmt: skip
    assert code == 1 and "does not occur in nhtsa/complaint/11561420 revision 1" in stderr
    assert prove(signed, out, COMPLAINT, "A software update was applied")[0] == 0


def test_without_the_signing_key_prove_says_what_to_run(signed: Signed, tmp_path: Path) -> None:
    result = cli("prove", COMPLAINT, QUOTE, "--out", tmp_path / "x.receipt.json",
                 "--warehouse", signed.warehouse)  # fmt: skip
    assert result.exit_code == 2
    assert "receipts log init" in result.stderr and "RECEIPTS_LOG_KEY" in result.stderr


@pytest.fixture(scope="module")
def good_and_other(
    signed: Signed, other: Signed, tmp_path_factory: pytest.TempPathFactory
) -> tuple[bytes, bytes]:
    directory = tmp_path_factory.mktemp("bundles")
    assert prove(signed, directory / "good.json", COMPLAINT, QUOTE)[0] == 0
    assert prove(other, directory / "other.json", COMPLAINT, QUOTE)[0] == 0
    return (directory / "good.json").read_bytes(), (directory / "other.json").read_bytes()


def test_every_bad_bundle_is_refused_at_its_step(
    good_and_other: tuple[bytes, bytes], tmp_path: Path
) -> None:
    for name, (data, step) in bad_files(*good_and_other).items():
        path = tmp_path / f"{name}.receipt.json"
        path.write_bytes(data)
        result = cli("verify-bundle", path)
        assert result.exit_code == 1, (name, result.output)
        assert f"FAILED   {step}:" in result.stdout, (name, result.stdout)
        assert "Traceback" not in result.output


def test_another_trusted_key_is_named(
    good_and_other: tuple[bytes, bytes], other: Signed, tmp_path: Path
) -> None:
    path = tmp_path / "g.receipt.json"
    path.write_bytes(good_and_other[0])
    result = cli("verify-bundle", path, "--key", other.verifier)
    assert result.exit_code == 1
    assert f"is not the trusted key {other.verifier}" in result.stdout


def test_an_unreadable_file_exits_2(tmp_path: Path) -> None:
    result = cli("verify-bundle", tmp_path / "missing.receipt.json")
    assert result.exit_code == 2 and "cannot read" in result.stderr


def test_verify_claims_writes_a_bundle_per_holding_claim(signed: Signed, tmp_path: Path) -> None:
    claims = _claims(
        tmp_path,
        {"claim_id": "aeb/1", "doc_id": COMPLAINT, "quote": QUOTE, "revision": 1},
        {"claim_id": "update", "doc_id": COMPLAINT, "quote": "software update", "revision": 1},
    )
    out = tmp_path / "bundles"
    result = cli("verify-claims", "--file", claims, "--bundles", out,
                 "--warehouse", signed.warehouse, env=signed.env)  # fmt: skip
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == ["aeb%2F1.receipt.json"]
    bundle = load(out / "aeb%2F1.receipt.json")
    jsonschema.validate(bundle, SCHEMA)
    claim = bundle["claim"]
    assert claim["id"] == "aeb/1" and claim["status"] == "holds"  # type: ignore[index]
    assert [h["status"] for h in claim["history"]] == ["holds"]  # type: ignore[index]
    assert verify(out / "aeb%2F1.receipt.json", "--key", signed.verifier)[0] == 0


def test_verify_claims_past_the_first_bundles_reserves_them_and_leaves_none_refused(
    signed: Signed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past INLINE_FILES holding claims the writer process creates every bundle's file
    before it is built; a holding claim whose quote has no span is refused and its reserved
    file removed, in a new directory and in one that exists."""
    monkeypatch.setattr("pipelines.proofs.files.INLINE_FILES", 1)
    claims = _claims(
        tmp_path,
        {"claim_id": "a", "doc_id": COMPLAINT, "quote": QUOTE, "revision": 1},
        {
            "claim_id": "b",
            "doc_id": NOTES,
            "quote": "The pedal went all the way down.",
            "revision": 1,
        },
        {"claim_id": "c", "doc_id": COMPLAINT, "quote": QUOTE, "revision": 1},
    )
    for out in (tmp_path / "new", tmp_path / "existing"):
        if out.name == "existing":
            out.mkdir()
            (out / "c.receipt.json").write_text('{"truncated')
        result = cli("verify-claims", "--file", claims, "--bundles", out,
                     "--warehouse", signed.warehouse, env=signed.env)  # fmt: skip
        assert result.exit_code == 1, result.output
        assert "no bundle for claim b" in result.stderr
        assert sorted(p.name for p in out.iterdir()) == ["a.receipt.json", "c.receipt.json"]
        for name in ("a", "c"):
            assert verify(out / f"{name}.receipt.json", "--key", signed.verifier)[0] == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["claims.ndjson", "existing", "new"]


def _claims(tmp_path: Path, *rows: dict[str, object]) -> Path:
    """A claims file (NDJSON) of ``rows``."""
    claims = tmp_path / "claims.ndjson"
    claims.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return claims


def _one_claim(tmp_path: Path) -> Path:
    return _claims(tmp_path, {"claim_id": "c", "doc_id": COMPLAINT, "quote": QUOTE, "revision": 1})


def test_verify_claims_replaces_a_bundle_whole(signed: Signed, tmp_path: Path) -> None:
    out = tmp_path / "bundles"
    out.mkdir()
    (out / "c.receipt.json").write_text('{"truncated')
    result = cli("verify-claims", "--file", _one_claim(tmp_path), "--bundles", out,
                 "--warehouse", signed.warehouse, env=signed.env)  # fmt: skip
    assert result.exit_code == 0, result.output
    assert [p.name for p in out.iterdir()] == ["c.receipt.json"]  # no temporary file left
    assert verify(out / "c.receipt.json", "--key", signed.verifier)[0] == 0


def test_a_claim_the_checkpoint_does_not_cover_refuses_every_bundle_before_the_first(
    tmp_path: Path,
) -> None:
    """A revision written after the latest checkpoint (its run never finished) has no proof
    yet: verify-claims names it, and no bundle of the directory is replaced, not even those
    of the claims before it."""
    signed = make_signed_warehouse(tmp_path)
    summary_3 = SUMMARY_2 + " The recall remedy was installed."
    record = _record(COMPLAINT, "complaint", complaint(summary_3), "application/json",
                     "https://api.nhtsa.gov/complaints/odinumber/11561420", None)  # fmt: skip
    with Warehouse.open(signed.warehouse) as wh:  # a run that writes, then stops unfinished
        info = start_run(wh, "ingest", "proofs", "hash-of-proofs")
        Ingestor(wh, info.run_id, corpus="proofs").ingest(
            "nhtsa", Listing("proofs:all", iter([record]))
        )
    claims = _claims(
        tmp_path,
        {"claim_id": "covered", "doc_id": COMPLAINT, "quote": QUOTE, "revision": 1},
        {"claim_id": "uncovered", "doc_id": COMPLAINT, "quote": "recall remedy", "revision": 3},
    )
    out = tmp_path / "bundles"
    out.mkdir()
    (out / "covered.receipt.json").write_text("kept")
    result = cli("verify-claims", "--file", claims, "--bundles", out,
                 "--warehouse", signed.warehouse, env=signed.env)  # fmt: skip
    assert result.exit_code != 0
    assert "revision 3" in result.output and "not yet in a checkpoint" in result.output
    assert [(p.name, p.read_text()) for p in out.iterdir()] == [("covered.receipt.json", "kept")]


def test_a_bundle_cut_short_never_takes_its_name(
    signed: Signed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = os.write

    def half_then_full_disk(fd: int, data: memoryview) -> int:
        if len(data) > 1:
            return real(fd, data[: len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("pipelines.proofs.files.os.write", half_then_full_disk)
    out = tmp_path / "bundles"
    result = cli("verify-claims", "--file", _one_claim(tmp_path), "--bundles", out,
                 "--warehouse", signed.warehouse, env=signed.env)  # fmt: skip
    assert result.exit_code == 2 and "No space left on device" in result.stderr, result.output
    assert list(out.iterdir()) == []  # neither the bundle's name nor a temporary one


def test_verify_claims_bundles_need_the_key_before_checking(signed: Signed, tmp_path: Path) -> None:
    claims = _claims(tmp_path, {"claim_id": "c", "doc_id": COMPLAINT, "quote": QUOTE})
    result = cli("verify-claims", "--file", claims, "--bundles", tmp_path / "b",
                 "--warehouse", signed.warehouse)  # fmt: skip
    assert result.exit_code == 2 and "RECEIPTS_LOG_KEY" in result.stderr
    assert not (tmp_path / "b").exists()


def test_print_verifier_prints_the_file_verify_bundle_runs() -> None:
    from pipelines.proofs import verify_receipt

    printed = cli("verify-bundle", "--print-verifier")
    assert printed.exit_code == 0
    assert printed.stdout == Path(verify_receipt.__file__).read_text("utf-8")
