"""``receipts serve`` through the app the command serves (``create_app``, Starlette's test
client) on a warehouse built as users build one (tests/serve/served.py): every page and its
JSON twin, a document's timeline and the diff between its revisions, unknown ids (404),
parameters that cannot be read (400, naming the parameter), hostile upstream text escaped
and marked, the security headers, and a warehouse no request writes to."""

from __future__ import annotations

import hashlib
import html
import re
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from pipelines.serve.app import CONTENT_SECURITY_POLICY, create_app, doc_url
from tests import corpus_fixture as fixture
from tests.serve import served
from warehouse import digests
from warehouse.store import Warehouse

EDITED = "nhtsa/complaint/11561421"
POLICY = "github/acme/handbook/docs/policy.md"
FLAPPING = "nhtsa/complaint/11561422"
NEW = "nhtsa/complaint/11561423"


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> str:
    return served.shared(tmp_path_factory)


@pytest.fixture
def client(warehouse: str) -> Iterator[TestClient]:
    with TestClient(create_app(warehouse)) as test_client:
        yield test_client


def page(client: TestClient, url: str, status: int = 200) -> str:
    response = client.get(url)
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("text/html")
    return response.text


def twin(client: TestClient, url: str, status: int = 200) -> Any:
    response = client.get(url)
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    return response.json()


def main_text(text: str) -> str:
    """The page's <main> as plain text (tags dropped, entities read)."""
    inner = text[text.index("<main>") : text.index("</main>")]
    return html.unescape(re.sub(r"<[^>]+>", " ", inner))


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# -- every page and its JSON twin ----------------------------------------------------------
PAGES = [
    ("/", "/index.json"),
    ("/search?q=stalled", "/search.json?q=stalled"),
    (f"/documents/{EDITED}", f"/documents/{EDITED}.json"),
    (f"/documents/{EDITED}/revisions/1", f"/documents/{EDITED}/revisions/1.json"),
    (f"/documents/{EDITED}/diff?from=1&to=2", f"/documents/{EDITED}/diff.json?from=1&to=2"),
    ("/as-of?point=2", "/as-of.json?point=2"),
    ("/drift?from=2&to=4&corpus=fixture-corpus", "/drift.json?from=2&to=4&corpus=fixture-corpus"),
    ("/claims", "/claims.json"),
    ("/claims/screen-blank", "/claims/screen-blank.json"),
    ("/pushes", "/pushes.json"),
]


@pytest.mark.parametrize(("url", "json_url"), PAGES)
def test_every_page_answers_and_names_its_json_twin(
    client: TestClient, url: str, json_url: str
) -> None:
    text = page(client, url)
    assert f'href="{html.escape(json_url)}"' in text
    assert isinstance(twin(client, json_url), dict)


def test_the_front_page_counts_corpora_and_sources_and_lists_the_runs(client: TestClient) -> None:
    data = twin(client, "/index.json")
    corpora = {c["corpus"]: c["members"] for c in data["corpora"]}
    assert corpora["syn"] == 3 and corpora["hostile"] == 2
    nhtsa = [s for s in data["sources"] if s["source"] == "nhtsa"]
    assert nhtsa == [{"source": "nhtsa", "kind": "complaint", "documents": 4, "tombstoned": 0}]
    assert [r["run_id"] for r in data["runs"]] == [6, 5, 4, 3, 2, 1]
    text = main_text(page(client, "/"))
    assert "fixture-corpus" in text and "Last runs" in text


def test_search_matches_as_the_command_does_and_filters(client: TestClient) -> None:
    data = twin(client, "/search.json?q=stalled")
    assert [h["doc_id"] for h in data["hits"]] == [EDITED]
    assert data["hits"][0]["where"] == "field summary"
    assert twin(client, "/search.json?q=stalled&source=github")["hits"] == []
    assert twin(client, "/search.json?q=stalled&kind=complaint")["hits"][0]["doc_id"] == EDITED
    # changed since run 4: the edit of run 4 is not newer than run 4
    assert twin(client, "/search.json?q=stalled&since=4")["hits"] == []
    assert twin(client, "/search.json?q=stalled&since=2")["hits"][0]["doc_id"] == EDITED
    # whole words: "stall" is no word of the text
    assert twin(client, "/search.json?q=stall")["hits"] == []


def test_a_search_page_goes_on_to_the_next(client: TestClient) -> None:
    data = twin(client, "/search.json?q=the")
    assert data["page"] == 1 and data["page_size"] == 20
    assert len(data["hits"]) <= 20


# -- a document, its timeline and its diffs ------------------------------------------------
def test_a_document_shows_its_current_text_provenance_and_timeline(client: TestClient) -> None:
    data = twin(client, f"/documents/{EDITED}.json")
    assert data["source"] == "nhtsa" and data["kind"] == "complaint"
    assert [(r["revision"], r["valid_from_run"]) for r in data["revisions"]] == [(1, 1), (2, 4)]
    assert data["current"]["revision"] == 2
    assert data["current"]["title"].startswith("While driving on the interstate")
    first = data["revisions"][0]
    assert (
        first["provenance"]["url"]
        == "https://api.nhtsa.gov/complaints/odinumber?odinumber=11561421"
    )
    assert first["log_index"] is not None
    text = page(client, f"/documents/{EDITED}")
    assert f'href="/documents/{EDITED}/revisions/1"' in text
    assert f'href="/documents/{EDITED}/revisions/2"' in text
    assert f'href="/documents/{EDITED}/diff?from=1&amp;to=2"' in text
    assert '<details open class="tree">' in text  # the record as a tree
    assert "api.nhtsa.gov/complaints/odinumber?odinumber=11561421" in html.unescape(text)


def test_a_tombstone_and_its_restoration_are_on_the_timeline(client: TestClient) -> None:
    data = twin(client, f"/documents/{FLAPPING}.json")
    assert [(r["revision"], r["tombstone"]) for r in data["revisions"]] == [
        (1, False),
        (2, True),
        (3, False),
    ]
    revision = page(client, f"/documents/{FLAPPING}/revisions/2")
    assert "tombstone" in main_text(revision) and "gone upstream" in main_text(revision)


def test_a_markdown_document_is_shown_as_text(client: TestClient) -> None:
    data = twin(client, f"/documents/{POLICY}.json")
    assert data["current"]["media_type"] == "text/markdown"
    assert data["current"]["text"] == fixture.POLICY_2
    old = twin(client, f"/documents/{POLICY}/revisions/1.json")
    assert old["text"] == fixture.POLICY_1 and old["content_hash"] == sha(fixture.POLICY_1)
    assert old["provenance"]["commit"] == fixture.COMMIT_1


def test_the_diff_of_a_record_shows_the_right_revisions_and_fields(client: TestClient) -> None:
    data = twin(client, f"/documents/{EDITED}/diff.json?from=1&to=2")
    assert (data["old"]["revision"], data["new"]["revision"]) == (1, 2)
    assert data["diff"]["kind"] == "json"
    fields = {f["path"]: f for f in data["diff"]["fields"]}
    assert fields["crash"]["old"] == "false" and fields["crash"]["new"] == "true"
    assert ["-", "highway"] in fields["summary"]["words"]
    assert ["+", "interstate"] in fields["summary"]["words"]
    text = page(client, f"/documents/{EDITED}/diff?from=1&to=2")
    assert "<del>highway</del><ins>interstate</ins>" in text


def test_the_diff_of_a_text_file_is_side_by_side_and_word_by_word(client: TestClient) -> None:
    data = twin(client, f"/documents/{POLICY}/diff.json")  # the last two revisions
    assert (data["old"]["revision"], data["new"]["revision"]) == (1, 2)
    assert data["diff"]["kind"] == "text"
    assert ["-", "30"] in data["words"] and ["+", "14"] in data["words"]
    text = page(client, f"/documents/{POLICY}/diff?from=1&to=2")
    row = re.search(r'<tr class="changed">.*?</tr>', text, re.S)
    assert row is not None
    assert "within 30 days" in row.group() and "within 14 days" in row.group()


def test_a_diff_with_itself_says_identical(client: TestClient) -> None:
    data = twin(client, f"/documents/{FLAPPING}/diff.json?from=1&to=3")
    assert data["identical"] is True
    assert "Identical content." in page(client, f"/documents/{FLAPPING}/diff?from=1&to=3")


# -- the corpus at a point, drift, claims, pushes ------------------------------------------
def test_as_of_a_run_lists_the_corpus_then_a_page_at_a_time(client: TestClient) -> None:
    data = twin(client, "/as-of.json?point=2&corpus=fixture-corpus")
    ids = [d["doc_id"] for d in data["documents"]]
    assert FLAPPING not in ids  # tombstoned in run 2
    assert NEW not in ids  # new in run 4
    assert EDITED in ids
    assert data["point"]["run_id"] == 2
    by_date = twin(client, "/as-of.json?point=2026-11-01T07:00:00Z&corpus=fixture-corpus")
    assert FLAPPING in [d["doc_id"] for d in by_date["documents"]]
    assert data["next_page"] is None
    assert twin(client, "/as-of.json?point=2&page=2")["documents"] == []


def test_drift_between_two_runs_links_each_document_and_titles_the_new_one(
    client: TestClient,
) -> None:
    data = twin(client, "/drift.json?from=2&to=4&corpus=fixture-corpus")
    assert data["totals"]["new"] == 1 and data["totals"]["changed"] == 2
    new = [d for d in data["documents"] if d["outcome"] == "new"]
    assert [(d["doc_id"], d["title"]) for d in new] == [(NEW, "Brake pedal goes to the floor.")]
    text = page(client, "/drift?from=2&to=4&corpus=fixture-corpus")
    for doc in data["documents"]:
        assert f'href="/documents/{doc["doc_id"]}"' in text
    assert "Brake pedal goes to the floor." in text
    assert f'href="/documents/{EDITED}/diff?from=1&amp;to=2"' in text


def test_the_claims_board_groups_by_status_with_quotes_and_cited_revisions(
    client: TestClient,
) -> None:
    data = twin(client, "/claims.json")
    assert data["counts"] == {"holds": 1, "stale": 1}
    claims = {c["claim_id"]: c for c in data["claims"]}
    assert claims["screen-blank"]["quote"] == served.CLAIMS[0]["quote"]
    assert claims["screen-blank"]["quote_exact"] is True
    assert claims["stalled-highway"]["cited_revision"] == 1
    assert claims["stalled-highway"]["at_revision"] == 2
    stale = twin(client, "/claims.json?status=stale")
    assert [c["claim_id"] for c in stale["claims"]] == ["stalled-highway"]
    text = page(client, "/claims")
    assert "The infotainment screen goes blank at random." in text
    assert f'href="/documents/{EDITED}/revisions/1"' in text
    assert 'href="/claims/screen-blank/bundle.json"' in text
    history = twin(client, "/claims/stalled-highway.json")
    assert [c["status"] for c in history["checks"]] == ["stale"]


def test_a_bundle_needs_a_signed_log(client: TestClient) -> None:
    """The served warehouse's log is unsigned: the bundle is refused with the reason."""
    refused = twin(client, "/claims/screen-blank/bundle.json", 404)
    assert "RECEIPTS_LOG_KEY" in refused["error"]["message"]
    stale = twin(client, "/claims/stalled-highway/bundle.json", 404)
    assert "only a claim that holds" in stale["error"]["message"]


def test_the_push_ledger_shows_plan_receipt_and_unrelated_counts(client: TestClient) -> None:
    data = twin(client, "/pushes.json")
    [push] = data["pushes"]
    assert push["status"] == "ok" and push["plan"]["create"] == 3
    assert push["unrelated_before"] == 0 and push["unrelated_after"] == 0
    text = main_text(page(client, "/pushes"))
    assert "create 3" in text and push["transaction_ids"][0] in text
    assert "0 before, 0 after" in text


# -- 404 and 400 ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "url",
    [
        "/documents/nhtsa/complaint/999",
        "/documents/nhtsa/complaint/999.json",
        f"/documents/{EDITED}/revisions/9",
        f"/documents/{EDITED}/revisions/9.json",
        f"/documents/{EDITED}/diff?from=1&to=9",
        f"/documents/{FLAPPING}/diff.json?from=1&to=2",  # a tombstone has no bytes
        "/claims/no-such-claim",
        "/claims/no-such-claim.json",
        "/no/such/page",
    ],
)
def test_unknown_things_are_404(client: TestClient, url: str) -> None:
    response = client.get(url)
    assert response.status_code == 404
    if url.split("?")[0].endswith(".json"):
        assert response.json()["error"]["type"] == "NotFound"
    else:
        assert "404" in response.text and "Traceback" not in response.text


def test_an_unknown_document_names_the_closest_ones(client: TestClient) -> None:
    data = twin(client, "/documents/nhtsa/complaint/1156142.json", 404)
    assert "did you mean" in data["error"]["message"]


@pytest.mark.parametrize(
    ("url", "parameter"),
    [
        ("/as-of.json?page=0", "page"),
        ("/as-of.json?page=two", "page"),
        ("/as-of.json?point=not-a-date", "point"),
        ("/as-of.json?point=99", "point"),
        ("/search.json?q=x&page=-1", "page"),
        ("/search.json?q=x&since=yesterdayish", "since"),
        ("/search.json?q=%3Cp%3E", "q"),
        ("/drift.json?from=99", "from"),
        ("/drift.json?to=1999-99-99", "to"),
        ("/claims.json?status=bogus", "status"),
        ("/pushes.json?page=1e3", "page"),
        (f"/documents/{EDITED}/revisions/x.json", "revision"),
        (f"/documents/{EDITED}/diff.json?from=a&to=2", "from"),
    ],
)
def test_parameters_that_cannot_be_read_are_400_naming_them(
    client: TestClient, url: str, parameter: str
) -> None:
    data = twin(client, url, 400)
    assert data["error"]["parameter"] == parameter
    text = page(client, url.replace(".json", "", 1), 400)
    assert f"<code>{parameter}</code>" in text and "Traceback" not in text


# -- hostile text, headers, no writes ------------------------------------------------------
def test_hostile_text_is_escaped_and_its_hidden_characters_marked(client: TestClient) -> None:
    for url in (f"/documents/{served.HOSTILE_MD}", f"/documents/{served.HOSTILE_JSON}"):
        text = page(client, url)
        assert "<script>" not in text and "<img" not in text
        assert "&lt;script&gt;" in text
        assert "\u202e" not in text and "\x1b" not in text
        assert '<mark class="hidden-char" title="a hidden character">\\u202e</mark>' in text
        assert "\\x1b" in text
    data = twin(client, f"/documents/{served.HOSTILE_MD}.json")
    assert data["current"]["text"] == served.HOSTILE_TEXT  # JSON keeps the text as it is
    search = page(client, "/search?q=normal")
    assert "\u202e" not in search and "Totally normal" in search


def test_every_response_carries_a_strict_content_security_policy(client: TestClient) -> None:
    for url in ("/", f"/documents/{EDITED}.json", "/nope", "/serve.css", "/as-of?page=0"):
        response = client.get(url)
        assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert response.headers["x-content-type-options"] == "nosniff"
    assert "script-src" not in CONTENT_SECURITY_POLICY  # default-src 'none': no script at all
    assert "default-src 'none'" in CONTENT_SECURITY_POLICY


def test_no_request_writes_to_the_warehouse(client: TestClient, warehouse: str) -> None:
    with Warehouse.open(warehouse, read_only=True) as wh:
        before = digests.table_digests(wh)
    assert "revisions" in before and "claim_checks" in before
    for url, json_url in PAGES:
        client.get(url)
        client.get(json_url)
    client.get("/claims/screen-blank/bundle.json")
    with Warehouse.open(warehouse, read_only=True) as wh:
        assert digests.table_digests(wh) == before


def test_a_writer_holding_the_file_is_a_503_at_once(warehouse: str, tmp_path: Any) -> None:
    import shutil
    import time

    copy = tmp_path / "busy.duckdb"
    shutil.copy(warehouse, copy)
    client = TestClient(create_app(str(copy)))
    with Warehouse.open(str(copy)):  # a writer (ingest, refresh) holds the file
        started = time.monotonic()
        response = client.get("/")
        assert time.monotonic() - started < 5
        assert response.status_code == 503
        assert response.headers["retry-after"] == "5"
        assert "warehouse in use" in response.text and "Traceback" not in response.text
        assert client.get("/index.json").json()["error"]["type"] == "WarehouseBusy"
    assert client.get("/").status_code == 200


def test_document_urls_quote_what_a_path_cannot_hold() -> None:
    assert doc_url("a b/c?d#e") == "/documents/a%20b/c%3Fd%23e"


def test_the_plots_page_calls_the_series_and_embeds_their_charts(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page's side of the plots, with stand-ins for the series and the chart maker (the
    real ones: tests/serve/test_plots_page.py)."""
    import sys
    import types
    from datetime import date

    asked: list[str] = []

    def series_of(name: str) -> Any:
        def read(wh: Warehouse) -> list[tuple[date, str, int]]:
            asked.append(name)
            return [(date(2026, 11, 1), "nhtsa", 3)]

        return read

    series = types.ModuleType("warehouse.series")
    for name in ("revisions_per_day", "documents_by_status", "claims_by_status"):
        setattr(series, name, series_of(name))
    charts = types.ModuleType("pipelines.serve.plots")
    charts.chart_svg = lambda title, rows, stacked=False: (
        f'<svg role="img"><title>{title}</title></svg>'
    )  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "warehouse.series", series)
    monkeypatch.setitem(sys.modules, "pipelines.serve.plots", charts)
    text = page(client, "/plots")
    assert text.count('<svg role="img">') == 3
    assert client.get("/plots").headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    data = twin(client, "/plots.json")
    assert data["claims_by_status"] == [{"day": "2026-11-01", "series": "nhtsa", "count": 3}]
    assert asked.count("revisions_per_day") == 3


def test_the_json_twin_of_a_record_holds_it_as_stored(client: TestClient, warehouse: str) -> None:
    from warehouse.history import snapshot

    data = twin(client, f"/documents/{EDITED}.json")
    with Warehouse.open(warehouse, read_only=True) as wh:
        stored = snapshot(wh, EDITED).body.decode()
    assert data["current"]["text"] == stored


def test_lists_go_a_page_at_a_time_with_links_between_pages(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipelines.serve import pages

    monkeypatch.setattr(pages, "PAGE_SIZE", 3)
    first = twin(client, "/as-of.json?corpus=fixture-corpus")
    second = twin(client, "/as-of.json?corpus=fixture-corpus&page=2")
    assert len(first["documents"]) == 3 and first["next_page"] == 2
    assert {d["doc_id"] for d in first["documents"]}.isdisjoint(
        d["doc_id"] for d in second["documents"]
    )
    text = page(client, "/as-of?corpus=fixture-corpus&page=2")
    assert 'href="?corpus=fixture-corpus&amp;page=1"' in text
    assert 'href="?corpus=fixture-corpus&amp;page=3"' in text
    monkeypatch.setattr(pages, "PAGE_SIZE", 1)
    claims = page(client, "/claims")
    assert 'href="?page=2"' in claims
    drift = twin(client, "/drift.json?from=2&to=4&corpus=fixture-corpus&page=2")
    assert len(drift["documents"]) == 1 and drift["page"] == 2


def test_a_document_gone_upstream_shows_its_tombstone_and_links_its_last_text(
    client: TestClient,
) -> None:
    gone = "forem/comment/2a4bc"
    data = twin(client, f"/documents/{gone}.json")
    assert data["revisions"][-1]["tombstone"] is True
    assert data["current"]["text"] is None and data["current"]["media_type"] is None
    text = main_text(page(client, f"/documents/{gone}"))
    assert "A tombstone: this revision has no bytes." in text
    assert "Its last text: revision 1" in " ".join(text.split())
    assert (
        "Same here, mine stalled twice."
        in twin(client, f"/documents/{gone}/revisions/1.json")["text"]
    )


def test_a_document_whose_id_ends_in_json_keeps_its_page(
    warehouse: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``x.json`` is the JSON twin of document ``x``; when there is no ``x``, it is the page
    of document ``x.json`` itself, whose JSON is at ``x.json.json``."""
    import shutil

    from warehouse.records import Listing, Record

    copy = str(tmp_path / "copy.duckdb")
    shutil.copy(warehouse, copy)
    data_file = Record("github/acme/data/list.json", "file", b'{"title": "A list"}')
    with Warehouse.open(copy) as wh:
        listing = Listing("github:acme/data", [data_file])
        fixture.run_at(wh, monkeypatch, "2026-11-04T06:00:00Z", "data", [listing])
    client = TestClient(create_app(copy))
    text = page(client, "/documents/github/acme/data/list.json")
    assert '<h1 class="doc-id">github/acme/data/list.json</h1>' in text
    assert 'href="/documents/github/acme/data/list.json.json"' in text
    data = twin(client, "/documents/github/acme/data/list.json.json")
    assert data["doc_id"] == "github/acme/data/list.json"
    assert data["current"]["title"] == "A list"
    # and a document ``x`` keeps ``x.json`` as its JSON twin
    assert twin(client, f"/documents/{EDITED}.json")["doc_id"] == EDITED
