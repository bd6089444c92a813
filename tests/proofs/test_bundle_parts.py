"""The parts of a bundle written in bulk read as the log writes them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipelines.proofs.bundle import fast_instant
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
