"""The benchmark harness runs end to end on tiny inputs (no timing is asserted)."""

from __future__ import annotations

from bench import ingest


def test_ingest_benchmark_measures_real_work() -> None:
    result = ingest.run(count=400, batch_size=100)
    assert result["first_ingest"]["counts"]["new"] == 400
    assert result["identical_reingest"]["counts"]["unchanged"] == 400
    assert result["identical_reingest"]["rows_written"] == {
        "snapshots": 0,
        "revisions": 0,
        "documents": 0,
        "sightings": 0,
    }
    changed = result["one_percent_changed"]
    assert changed["counts"]["changed"] == changed["expected_changed"] > 0
    assert set(result["targets"]) >= {"identical_reingest_writes_nothing"}
