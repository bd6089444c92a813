"""The drift report of the fixture corpus, through the CLI, in every format (golden files).

Set ``UPDATE_GOLDEN=1`` to rewrite the golden files after an intended change, then review
the diff of ``tests/golden/drift.*`` like any other change.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests import corpus_fixture as fixture
from tests.conftest import cli, write_manifest

GOLDEN = Path(__file__).parent.parent / "golden"


@pytest.fixture
def corpus(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> tuple[str, Path]:
    """The fixture warehouse (read only) and its manifest, with the clock at report time."""
    monkeypatch.setenv("RECEIPTS_NOW", fixture.REPORT_TIME)
    return fixture.shared(tmp_path_factory), write_manifest(tmp_path, fixture.MANIFEST)


def _check_golden(name: str, actual: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(actual, encoding="utf-8")
    assert actual == path.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("fmt", "golden"),
    [("text", "drift.txt"), ("json", "drift.json"), ("md", "drift.md"), ("html", "drift.html")],
)
def test_drift_report_matches_golden(corpus: tuple[str, Path], fmt: str, golden: str) -> None:
    warehouse, manifest = corpus
    result = cli("drift", manifest, "--warehouse", warehouse, "--format", fmt)
    assert result.exit_code == 0, result.stderr
    _check_golden(golden, result.stdout)


def test_json_report_says_what_drifted(corpus: tuple[str, Path]) -> None:
    warehouse, manifest = corpus
    report = json.loads(cli("drift", manifest, "--warehouse", warehouse, "--json").stdout)
    assert (report["since"]["run_id"], report["until"]["run_id"]) == (2, 4)
    assert report["counts"] == {
        "forem": {"new": 0, "changed": 0, "unchanged": 2, "gone": 1, "restored": 0},
        "github": {"new": 0, "changed": 1, "unchanged": 1, "gone": 1, "restored": 0},
        "nhtsa": {"new": 1, "changed": 1, "unchanged": 1, "gone": 0, "restored": 1},
    }
    by_doc = {d["doc_id"]: d for d in report["documents"]}
    assert {d: v["outcome"] for d, v in by_doc.items()} == {
        "forem/comment/2a4bc": "gone",
        "github/acme/handbook/docs/policy.md": "changed",
        "github/acme/handbook/docs/old-faq.md": "gone",
        "nhtsa/complaint/11561423": "new",
        "nhtsa/complaint/11561421": "changed",
        "nhtsa/complaint/11561422": "restored",
    }
    record = by_doc["nhtsa/complaint/11561421"]
    assert (record["old"]["revision"], record["new"]["revision"]) == (1, 2)
    assert record["old"]["content_hash"] != record["new"]["content_hash"]
    assert [f["path"] for f in record["diff"]["fields"]] == ["crash", "summary"]
    words = record["diff"]["fields"][1]["words"]
    assert ["-", "highway"] in words and ["+", "interstate"] in words
    text_file = by_doc["github/acme/handbook/docs/policy.md"]
    assert text_file["diff"]["kind"] == "text"
    assert "-Customers may return a vehicle within 30 days." in text_file["diff"]["lines"]
    assert "+Customers may return a vehicle within 14 days." in text_file["diff"]["lines"]
    gone = by_doc["forem/comment/2a4bc"]
    assert gone["new"]["tombstone"] and gone["new"]["tombstone_reason"] == "gone upstream"
    assert not gone["left_corpus"]
    left = by_doc["github/acme/handbook/docs/old-faq.md"]
    assert left["left_corpus"] and not left["new"]["tombstone"]
    assert left["note"] == "left the corpus: no entry of the manifest yields it any more"
    restored = by_doc["nhtsa/complaint/11561422"]
    assert [r["revision"] for r in restored["timeline"]] == [1, 2, 3]
    assert restored["compared_with"] == 1
    assert restored["note"] == "content identical to revision 1"


def test_html_report_is_one_self_contained_file(corpus: tuple[str, Path], tmp_path: Path) -> None:
    warehouse, manifest = corpus
    out = tmp_path / "report.html"
    result = cli("drift", manifest, "--warehouse", warehouse, "--format", "html", "--out", out)
    assert result.exit_code == 0
    assert result.stdout.startswith(f"html drift report written to {out}: new 1, changed 2")
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    # nothing is loaded from elsewhere: no scripts, stylesheets, images, fonts or frames
    assert not re.search(r"<(script|link|img|iframe|object|embed)\b", page, re.I)
    assert not re.search(r"\bsrc=", page)
    # links to the documents' sources are navigation, not loads: only <a> carries an href
    assert not re.search(r"<(?!a\b)[a-z]+\b[^>]*\bhref=\"(?!#)", page)
    assert re.search(r'<a class="source" href="https://', page)
    assert "url(" not in page and "@import" not in page
    # summary first, then one article per drifted document with its timeline
    assert page.index('id="summary"') < page.index('id="documents"')
    assert page.count("<article ") == 6
    assert page.count('<ol class="timeline">') == 6
    assert "<del>highway</del><ins>interstate</ins>" in page
    assert '<span class="del">-Customers may return a vehicle within 30 days.</span>' in page


def test_markup_in_documents_is_escaped_in_html(corpus: tuple[str, Path]) -> None:
    warehouse, manifest = corpus
    page = cli("drift", manifest, "--warehouse", warehouse, "--format", "html").stdout
    assert "<p>Same here" not in page  # a comment's body_html never becomes markup


def test_without_a_manifest_since_a_run_compares_every_document(
    corpus: tuple[str, Path],
) -> None:
    warehouse, _ = corpus
    report = json.loads(cli("drift", "--warehouse", warehouse, "--since", "3", "--json").stdout)
    assert report["corpus"] is None
    assert (report["since"]["run_id"], report["until"]["run_id"]) == (3, 4)
    assert report["counts"]["synthetic"] == {
        "new": 0,
        "changed": 0,
        "unchanged": 1,
        "gone": 0,
        "restored": 0,
    }


def test_fail_on_drift_exits_3_only_when_something_drifted(corpus: tuple[str, Path]) -> None:
    warehouse, manifest = corpus
    drifted = cli("drift", manifest, "--warehouse", warehouse, "--fail-on-drift")
    assert drifted.exit_code == 3
    calm = cli("drift", manifest, "--warehouse", warehouse, "--since", "4", "--fail-on-drift")
    assert calm.exit_code == 0
    assert "No drift: all 8 documents unchanged." in calm.stdout


def test_limit_keeps_counts_complete(corpus: tuple[str, Path]) -> None:
    warehouse, manifest = corpus
    result = cli("drift", manifest, "--warehouse", warehouse, "--limit", "2", "--json")
    report = json.loads(result.stdout)
    assert len(report["documents"]) == 2 and report["omitted"] == 4
    assert report["totals"]["changed"] == 2
    text = cli("drift", manifest, "--warehouse", warehouse, "--limit", "2").stdout
    assert "drifted documents (6)" in text
    assert "… and 4 more drifted documents (raise --limit)" in text


def test_json_flag_and_format_must_agree(corpus: tuple[str, Path]) -> None:
    warehouse, manifest = corpus
    result = cli("drift", manifest, "--warehouse", warehouse, "--json", "--format", "md")
    assert result.exit_code == 2
    assert "--json is --format json" in result.stderr


def test_reading_bodies_in_small_chunks_changes_nothing(
    corpus: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipelines.reports import drift_model

    monkeypatch.setattr(drift_model, "BODY_CHUNK", 2)
    warehouse, manifest = corpus
    result = cli("drift", manifest, "--warehouse", warehouse, "--json")
    assert result.stdout == (GOLDEN / "drift.json").read_text(encoding="utf-8")
