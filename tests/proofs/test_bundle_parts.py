"""The parts of a bundle written in bulk read as the log writes them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipelines.proofs.bundle import (
    BulkEncoder,
    ClaimCheck,
    build_bundle,
    bundle_bytes,
    claim_json,
    fast_instant,
)
from pipelines.proofs.locate import Location
from warehouse.claims import claim_histories, status_histories
from warehouse.proof_rows import ProofRow
from warehouse.store import Warehouse
from warehouse.tlog.entries import instant

ZONES = st.sampled_from(
    [UTC, timezone(timedelta(hours=5, minutes=30)), timezone(-timedelta(hours=8))]
)


@given(
    st.datetimes(min_value=datetime(1001, 1, 2), max_value=datetime(9998, 12, 30), timezones=ZONES)
)
def test_a_bundles_instant_is_the_logs(value: datetime) -> None:
    assert fast_instant(value) == instant(value)


def test_an_instant_without_a_zone_is_refused() -> None:
    with pytest.raises(ValueError, match="time zone"):
        fast_instant(datetime(2026, 1, 5, 12, 0))


TEXT = st.text(st.characters(codec="utf-8"), max_size=40)


@given(
    body=st.binary(max_size=300),
    words=st.lists(TEXT, min_size=6, max_size=6),
    proof=st.text(st.characters(codec="utf-8"), max_size=200),
    checkpoint=st.text(st.characters(codec="utf-8"), max_size=200),
    history=st.lists(st.tuples(st.integers(1, 10**6), st.datetimes(timezones=ZONES)), max_size=3),
)
def test_a_bundle_encoded_in_bulk_has_the_bytes_of_one_built_alone(
    body: bytes,
    words: list[str],
    proof: str,
    checkpoint: str,
    history: list[tuple[int, datetime]],
) -> None:
    quote, exact, prefix, suffix, url, key = words
    row = ProofRow(
        "nhtsa/complaint/1", 3, "ab" * 32, "record", "nhtsa", "application/json", body, url,
        None, "2026-01-05T12:00:00.000000Z", 7, b"entry\n" + url.encode(), None,
    )  # fmt: skip
    location = Location("/summary", 1, 5, exact, prefix, suffix)
    checks = [ClaimCheck(n, "holds", at, 3, "ab" * 32) for n, at in history]
    claim = claim_json("claim-1", "holds", checks)
    alone = build_bundle(row, quote, location, (proof + checkpoint).encode(), key, claim)
    bulk = BulkEncoder(checkpoint, key).encode(row, quote, location, proof.encode(), claim)
    assert bulk == bundle_bytes(alone)


def test_the_status_histories_bundles_read_are_the_claims_histories(tmp_path: Path) -> None:
    """``status_histories`` (the instants written by DuckDB) lists each claim's checks as
    ``claim_histories`` does, each instant as ``fast_instant`` writes it: a zero fraction,
    a moment before 1970 and one in another zone included."""
    at = [
        datetime(2026, 1, 5, 12, 0, tzinfo=UTC),
        datetime(1969, 7, 20, 20, 17, 40, 1, tzinfo=UTC),
        datetime(2026, 3, 29, 1, 30, 0, 999999, tzinfo=timezone(timedelta(hours=5, minutes=30))),
    ]
    with Warehouse.open(str(tmp_path / "w.duckdb")) as wh:
        for n, (claim, moment) in enumerate(zip(["a", "b", "a"], at, strict=True)):
            wh._connection_for_tests().execute(
                "INSERT INTO claim_checks (check_id, claim_set, recorded_at, claim_id, doc_id, "
                "quote_hash, cited_revision, cited_hash, status) VALUES (?, 's', ?, ?, 'd', "
                "'q', ?, ?, ?)",
                [
                    n + 1,
                    moment,
                    claim,
                    n or None,
                    "ab" * 32 if n else None,
                    ["holds", "stale"][n % 2],
                ],
            )
        expected = {
            claim: [
                (h.check_id, h.status, fast_instant(h.recorded_at), h.cited_revision, h.cited_hash)
                for h in history
            ]
            for claim, history in claim_histories(wh, ["a", "b", "c"]).items()
        }
        assert status_histories(wh, ["a", "b", "c"]) == expected
        assert [c[2] for c in expected["a"]] == [
            "2026-01-05T12:00:00.000000Z",
            "2026-03-28T20:00:00.999999Z",
        ]
