"""``drift`` without a manifest reports every corpus's latest changes (each corpus's last
two finished runs), not only those of the corpus refreshed last; in every format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from tests import corpus_fixture as fixture
from tests.conftest import cli


@pytest.fixture
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> str:
    # run 1, 2, 4: fixture-corpus; run 3: other-corpus (its only run).
    return fixture.shared(tmp_path_factory)


def test_every_corpus_is_reported_with_its_own_last_two_runs(warehouse: str) -> None:
    result = cli("drift", "--warehouse", warehouse, "--json")
    assert result.exit_code == 0, result.output
    reports = {r["corpus"]: r for r in json.loads(result.stdout)["corpora"]}
    assert set(reports) == {fixture.CORPUS, fixture.OTHER_CORPUS}
    main, other = reports[fixture.CORPUS], reports[fixture.OTHER_CORPUS]
    assert (main["since"]["run"]["run_id"], main["until"]["run"]["run_id"]) == (2, 4)
    assert main["totals"] == {"new": 1, "changed": 2, "unchanged": 4, "gone": 2, "restored": 1}
    # other-corpus's latest (and only) run added its document: before, drift compared runs
    # 3 and 4 of any corpus and showed only fixture-corpus's changes.
    assert other["until"]["run"]["run_id"] == 3
    assert [d["doc_id"] for d in other["documents"]] == ["synthetic/record/other-1"]


def test_the_text_markdown_and_html_reports_hold_every_corpus(warehouse: str) -> None:
    text = cli("drift", "--warehouse", warehouse).stdout
    assert f"Drift report: corpus {fixture.CORPUS}" in text
    assert f"Drift report: corpus {fixture.OTHER_CORPUS}" in text
    assert "synthetic/record/other-1" in text
    md = cli("drift", "--warehouse", warehouse, "--format", "md").stdout
    assert md.count("synthetic/record/other-1") >= 1 and fixture.OTHER_CORPUS in md
    MarkdownIt("commonmark").render(md)
    html = cli("drift", "--warehouse", warehouse, "--format", "html").stdout
    assert html.count("<html") == 1 and html.count("</html>") == 1
    assert "synthetic/record/other-1" in html and "nhtsa/complaint/11561423" in html


def test_fail_on_drift_and_out_count_every_corpus(warehouse: str, tmp_path: Path) -> None:
    out = tmp_path / "drift.txt"
    result = cli("drift", "--warehouse", warehouse, "--out", out, "--fail-on-drift")
    assert result.exit_code == 3
    assert "new 2, changed 2" in result.stdout  # one new in each corpus
    assert "synthetic/record/other-1" in out.read_text(encoding="utf-8")


def test_since_without_a_manifest_still_compares_every_document(warehouse: str) -> None:
    report = json.loads(cli("drift", "--warehouse", warehouse, "--since", "1", "--json").stdout)
    assert report["corpus"] is None and report["since"]["run"]["run_id"] == 1
