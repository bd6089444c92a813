"""A revision cited by a content-hash prefix needs 7 hex digits, wherever it is cited."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import cli, write_manifest
from warehouse.hash_prefix import MIN_HASH_PREFIX

MANIFEST = """
[corpus]
name = "h"
namespace = "h"

[[synthetic]]
name = "a"
count = 2
size = 100
"""
DOC = "synthetic/record/a-1"


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    folder = tmp_path_factory.mktemp("hash")
    path = folder / "w.duckdb"
    assert cli("ingest", write_manifest(folder, MANIFEST), "--warehouse", path).exit_code == 0
    [row] = json.loads(cli("history", DOC, "--warehouse", path, "--json").stdout)["revisions"]
    return path, str(row["content_hash"])


def _commands(doc_hash: str, prefix: str) -> list[list[str]]:
    return [
        ["show", DOC, "--hash", prefix],
        ["verify-quote", DOC, "record 1", "--hash", prefix],
        ["diff", DOC, prefix, doc_hash],
    ]


def test_the_minimum_is_seven() -> None:
    assert MIN_HASH_PREFIX == 7


@pytest.mark.parametrize("length", [3, 6])
def test_a_short_prefix_is_refused_everywhere(warehouse: tuple[Path, str], length: int) -> None:
    path, doc_hash = warehouse
    for args in _commands(doc_hash, doc_hash[:length]):
        result = cli(*args, "--warehouse", path)
        assert result.exit_code == 2, (args, result.output)
        assert f"shorter than {MIN_HASH_PREFIX} hex digits" in result.stderr, args


def test_seven_digits_are_enough(warehouse: tuple[Path, str]) -> None:
    path, doc_hash = warehouse
    show, quote, _ = _commands(doc_hash, doc_hash[:MIN_HASH_PREFIX])
    assert cli(*show, "--warehouse", path).exit_code == 0
    assert cli(*quote, "--warehouse", path).exit_code == 0


def test_a_claims_file_with_a_short_hash_reports_that_claim(
    warehouse: tuple[Path, str], tmp_path: Path
) -> None:
    path, doc_hash = warehouse
    claims = tmp_path / "claims.jsonl"
    claims.write_text(
        json.dumps(
            {"claim_id": "c1", "doc_id": DOC, "quote": "record 1", "content_hash": doc_hash[:6]}
        )
        + "\n"
    )
    result = cli("verify-claims", "--file", claims, "--warehouse", path)
    assert result.exit_code != 0
    assert f"at least {MIN_HASH_PREFIX} digits" in result.output
