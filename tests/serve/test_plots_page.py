"""The plots page: the series of warehouse/series.py drawn by pipelines/serve/plots.py, their
rows as the JSON twin. Runs once both exist."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from pipelines.serve.app import create_app
from tests.serve import served

pytest.importorskip("warehouse.series")
pytest.importorskip("pipelines.serve.plots")


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> str:
    return served.shared(tmp_path_factory)


def test_the_plots_page_embeds_one_svg_per_series(warehouse: str) -> None:
    client = TestClient(create_app(warehouse))
    page = client.get("/plots")
    assert page.status_code == 200, page.text
    assert page.text.count("<svg") == 3
    data = client.get("/plots.json").json()
    assert set(data) == {"revisions_per_day", "documents_by_status", "claims_by_status"}
    days = {row["day"] for row in data["revisions_per_day"]}
    assert "2026-11-01" in days and "2026-11-03" in days
    nhtsa = [r for r in data["revisions_per_day"] if r["series"] == "nhtsa"]
    assert sum(r["count"] for r in nhtsa) >= 6
