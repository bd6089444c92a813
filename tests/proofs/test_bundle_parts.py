"""The parts of a bundle written in bulk read as the log writes them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

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
from warehouse.proof_rows import ProofRow
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
        None, datetime(2026, 1, 5, 12, 0, tzinfo=UTC), 7, b"entry\n" + url.encode(), None,
    )  # fmt: skip
    location = Location("/summary", 1, 5, exact, prefix, suffix)
    checks = [ClaimCheck(n, "holds", at, 3, "ab" * 32) for n, at in history]
    claim = claim_json("claim-1", "holds", checks)
    alone = build_bundle(row, quote, location, (proof + checkpoint).encode(), key, claim)
    bulk = BulkEncoder(checkpoint, key).encode(row, quote, location, proof.encode(), claim)
    assert bulk == bundle_bytes(alone)
