"""A small warehouse with a signed log, for the proof bundle tests: an NHTSA-style JSON
record at two revisions, a GitHub Markdown file at a pinned commit, the log signed with the
key `receipts log init` made."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from tests.conftest import cli
from warehouse.canonical import record_json
from warehouse.ingest import Ingestor
from warehouse.records import Listing, Provenance, Record, json_body
from warehouse.runs import finish_run, start_run
from warehouse.store import Warehouse

COMPLAINT = "nhtsa/complaint/11561420"
NOTES = "github/acme/notes/docs/brakes.md"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
SUMMARY_1 = (
    "While driving at 45\u00a0mph the vehicle\u2019s  automatic emergency braking engaged "
    "with no obstacle ahead. The dealer could not reproduce the fault."
)
SUMMARY_2 = SUMMARY_1 + " A software update was applied on 2026-01-05."
MARKDOWN = "# Brakes\n\nThe pedal went *all the way* down.\n\nCaf\u00e9 owners\u200b reported it.\n"


def complaint(summary: str) -> bytes:
    body, _ = record_json({"odiNumber": 11561420, "summary": summary, "components": "BRAKES"})
    return body


def _ingest(path: str, records: list[Record], env: dict[str, str]) -> None:
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        with Warehouse.open(path) as wh:
            info = start_run(wh, "ingest", "proofs", "hash-of-proofs")
            Ingestor(wh, info.run_id, corpus="proofs").ingest(
                "nhtsa", Listing("proofs:all", iter(records))
            )
            finish_run(wh, info.run_id, "ok", {}, [])
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _record(
    doc_id: str, kind: str, body: bytes, media: str, url: str, commit: str | None
) -> Record:
    provenance = Provenance(url=url, commit=commit, source_format="test")
    record = Record(doc_id=doc_id, kind=kind, body=body, media_type=media, provenance=provenance)
    if media == "application/json":  # stored as a source stores a JSON record
        record = replace(record, **json_body(json.loads(body)))
    return record


@dataclass(frozen=True)
class Signed:
    warehouse: str
    key_file: Path
    verifier: str

    @property
    def env(self) -> dict[str, str]:
        return {"RECEIPTS_LOG_KEY": str(self.key_file)}


def make_signed_warehouse(directory: Path, another_log: bool = False) -> Signed:
    """The warehouse; ``another_log``: one more document first, so its log's tree differs."""
    path = str(directory / "proofs.duckdb")
    Warehouse.open(path).close()
    key_file = directory / "log.key"
    made = cli("log", "init", "--key", key_file, "--warehouse", path)
    assert made.exit_code == 0, made.output
    env = {"RECEIPTS_LOG_KEY": str(key_file)}
    url = "https://api.nhtsa.gov/complaints/odinumber/11561420"
    notes_url = f"https://raw.githubusercontent.com/acme/notes/{COMMIT}/docs/brakes.md"
    first = [
        _record(COMPLAINT, "complaint", complaint(SUMMARY_1), "application/json", url, None),
        _record(NOTES, "file", MARKDOWN.encode(), "text/markdown", notes_url, COMMIT),
    ]
    if another_log:  # a run before: the same documents' entries name other runs
        other = complaint("Another complaint.")
        _ingest(path, [_record("nhtsa/complaint/1", "complaint", other, "application/json",
                               url, None)], env)  # fmt: skip
    _ingest(path, first, env)
    second = [
        _record(COMPLAINT, "complaint", complaint(SUMMARY_2), "application/json", url, None),
        first[1],
    ]
    _ingest(path, second, env)
    return Signed(path, key_file, made.stdout.strip())


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Signed]:
    yield make_signed_warehouse(tmp_path_factory.mktemp("proofs"))


def prove(signed: Signed, out: Path, *args: object) -> tuple[int, str, str]:
    result = cli("prove", *args, "--out", out, "--warehouse", signed.warehouse, env=signed.env)
    return result.exit_code, result.stdout, result.stderr


def load(path: Path) -> dict[str, object]:
    value = json.loads(path.read_text("utf-8"))
    assert isinstance(value, dict)
    return value
