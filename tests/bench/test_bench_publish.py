"""The publish benchmark runs end to end on a small corpus (no timing is asserted)."""

from __future__ import annotations

from bench import publish_plan


def test_publish_benchmark_sends_exactly_what_changed_in_the_fewest_transactions() -> None:
    result = publish_plan.run(docs=3_000, changed_percent=2.0)
    assert result["first_push"]["mutations"] == 3_000
    assert result["identical_push"]["mutations"] == 0
    assert result["identical_push"]["transactions"] == 0
    assert 0 < result["expected_changed"] == result["changed_push"]["mutations"]
    assert result["changed_push"]["transactions"] == 1
    assert all(result["targets"].values()), result["targets"]
