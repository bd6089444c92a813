"""``receipts verify-claims`` and ``receipts claims history`` on the fixture corpus: every
status through the command line, bad rows, the ledger, and the bulk matcher's equivalence
with ``verify-quote``'s ``check_quote``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.checks.claims import (
    WORD_END,
    WORD_START,
    check_claims,
    claim_query,
    marked,
    quote_needles,
    rules_version,
    snapshot_reader_text,
    store_needles,
)
from pipelines.checks.claims_file import Claim, ClaimSet
from pipelines.checks.quote import RevisionText, check_quote, find_words, is_word_char, reader_text
from tests import corpus_fixture as fixture
from tests.conftest import cli
from tests.tampering import forge_snapshot
from warehouse import claims as ledger
from warehouse.ingest import Ingestor
from warehouse.records import Listing
from warehouse.runs import finish_run, start_run
from warehouse.store import Warehouse

STALLED_DOC = "nhtsa/complaint/11561421"
POLICY_DOC = "github/acme/handbook/docs/policy.md"

# claim_id → (claim, expected status, expected at_revision, expected found_in)
CLAIMS: dict[str, tuple[dict[str, Any], str, int | None, list[int]]] = {
    "holds": (
        {"doc_id": "nhtsa/complaint/11561420", "quote": "The infotainment screen goes blank"},
        "holds",
        None,
        [1],
    ),
    "holds-through-html": (
        {
            "doc_id": "forem/comment/2a4b9",
            # as a reader sees it: &#39; is a straight apostrophe, &mdash; and &ldquo; are not
            "quote": "I'd never buy this model again — the dealer said “no defect found”",
        },
        "holds",
        None,
        [1],
    ),
    "holds-after-restoration": (
        {"doc_id": "nhtsa/complaint/11561422", "quote": "Rear hatch opens by itself"},
        "holds",
        None,
        [1, 3],
    ),
    "stale": (
        {"doc_id": STALLED_DOC, "quote": "While driving on the highway at 65 mph"},
        "stale",
        2,
        [1],
    ),
    "stale-markdown": (
        {"doc_id": POLICY_DOC, "quote": "return a vehicle within 30 days"},
        "stale",
        2,
        [1],
    ),
    "misattributed": (
        {"doc_id": STALLED_DOC, "quote": "While driving on the highway at 65 mph", "revision": 2},
        "misattributed",
        1,
        [1],
    ),
    "missing": ({"doc_id": STALLED_DOC, "quote": "the brakes failed"}, "missing", None, []),
    "gone": ({"doc_id": "forem/comment/2a4bc", "quote": "mine stalled twice"}, "gone", 2, [1]),
    # left the corpus: gone, as the drift report counts it (it used to be "unseen")
    "left-corpus": (
        {"doc_id": "github/acme/handbook/docs/old-faq.md", "quote": "Ask the dealer."},
        "gone",
        None,
        [1],
    ),
    "unknown-document": (
        {"doc_id": "nhtsa/complaint/999", "quote": "anything"},
        "unknown",
        None,
        [],
    ),
    "unknown-revision": (
        {"doc_id": STALLED_DOC, "quote": "While driving", "revision": 7},
        "unknown",
        None,
        [],
    ),
}


@pytest.fixture
def warehouse(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A private copy of the fixture warehouse: checks write to the ledger."""
    copy = tmp_path / "claims.duckdb"
    shutil.copyfile(fixture.shared(tmp_path_factory), copy)
    return str(copy)


def claims_file(directory: Path, rows: list[dict[str, Any] | str], name: str = "c.ndjson") -> Path:
    path = directory / name
    lines = [row if isinstance(row, str) else json.dumps(row) for row in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def all_claims() -> list[dict[str, Any]]:
    return [{"claim_id": cid, "revision": 1, **claim} for cid, (claim, *_) in CLAIMS.items()]


def verify(path: Path, warehouse: str, *args: str) -> tuple[int, dict[str, Any]]:
    result = cli("verify-claims", "--file", path, "--warehouse", warehouse, "--json", *args)
    return result.exit_code, json.loads(result.stdout)


def test_every_status_through_the_cli(tmp_path: Path, warehouse: str) -> None:
    code, report = verify(claims_file(tmp_path, all_claims()), warehouse)
    assert code == 0
    got = {c["claim_id"]: c for c in report["claims"]}
    for claim_id, (_, status, at_revision, found_in) in CLAIMS.items():
        assert got[claim_id]["status"] == status, got[claim_id]
        assert got[claim_id]["at_revision"] == at_revision, got[claim_id]
        assert got[claim_id]["found_in"] == found_in, got[claim_id]
    assert report["counts"] == {
        "holds": 3,
        "stale": 2,
        "misattributed": 1,
        "missing": 1,
        "gone": 2,
        "unseen": 0,
        "unknown": 2,
    }
    assert got["stale"]["message"].endswith("the current revision 2 no longer contains it")
    assert "is in revision 1" in got["misattributed"]["message"]


def test_fail_on_drift_exits_3_and_all_holding_exits_0(tmp_path: Path, warehouse: str) -> None:
    path = claims_file(tmp_path, all_claims())
    assert verify(path, warehouse, "--fail-on-drift")[0] == 3
    holding = [c for c in all_claims() if CLAIMS[c["claim_id"]][1] == "holds"]
    code, report = verify(claims_file(tmp_path, holding, "h.ndjson"), warehouse, "--fail-on-drift")
    assert code == 0 and report["all_hold"]


def test_a_hash_prefix_cites_a_revision(tmp_path: Path, warehouse: str) -> None:
    history = json.loads(cli("history", STALLED_DOC, "--warehouse", warehouse, "--json").stdout)
    second = history["revisions"][1]["content_hash"]
    rows: list[dict[str, Any] | str] = [
        {
            "claim_id": "a",
            "doc_id": STALLED_DOC,
            "quote": "on the interstate",
            "content_hash": second[:10],
        },
        {"claim_id": "b", "doc_id": STALLED_DOC, "quote": "on the highway", "content_hash": second},
        {"claim_id": "c", "doc_id": STALLED_DOC, "quote": "x", "content_hash": "abcdef0123"},
    ]
    _, report = verify(claims_file(tmp_path, rows), warehouse)
    assert [c["status"] for c in report["claims"]] == ["holds", "misattributed", "unknown"]
    assert report["claims"][0]["cited_revision"] == 2


def test_bad_rows_are_reported_and_the_rest_checked(tmp_path: Path, warehouse: str) -> None:
    rows: list[dict[str, Any] | str] = [
        {"claim_id": "ok", "doc_id": STALLED_DOC, "quote": "the vehicle stalled", "revision": 1},
        "{not json",
        {"claim_id": "no-doc", "quote": "q", "revision": 1},
        {"claim_id": "no-cite", "doc_id": STALLED_DOC, "quote": "q"},
        {"claim_id": "bad-rev", "doc_id": STALLED_DOC, "quote": "q", "revision": "two"},
        {"claim_id": "empty", "doc_id": STALLED_DOC, "quote": "<p> </p>", "revision": 1},
        {"claim_id": "ok", "doc_id": STALLED_DOC, "quote": "again", "revision": 1},
        "[1, 2]",
    ]
    code, report = verify(claims_file(tmp_path, rows), warehouse)
    assert code == 1
    assert [c["claim_id"] for c in report["claims"]] == ["ok"]
    assert [(b["origin"], b["claim_id"]) for b in report["bad_rows"]] == [
        ("line 2", None),
        ("line 3", "no-doc"),
        ("line 4", "no-cite"),
        ("line 5", "bad-rev"),
        ("line 6", "empty"),
        ("line 7", "ok"),
        ("line 8", None),
    ]
    assert "repeats the one at line 1" in report["bad_rows"][5]["problem"]
    text = cli("verify-claims", "--file", tmp_path / "c.ndjson", "--warehouse", warehouse)
    assert "BAD ROW        line 4: cites no revision" in text.stdout


def test_a_csv_claims_file(tmp_path: Path, warehouse: str) -> None:
    path = tmp_path / "claims.csv"
    path.write_text(
        "claim_id,doc_id,quote,revision,content_hash\n"
        f'k1,{STALLED_DOC},"While driving on the highway, at 65 mph",1,\n'
        f'k2,{STALLED_DOC},"the ""no defect found"" line",1,\n'
        f"k3,{STALLED_DOC},,1,\n",
        encoding="utf-8",
    )
    code, report = verify(path, warehouse)
    assert code == 1
    assert [(c["claim_id"], c["status"]) for c in report["claims"]] == [
        ("k1", "missing"),
        ("k2", "missing"),
    ]
    assert report["bad_rows"][0]["origin"] == "line 4"


@pytest.mark.parametrize("fmt", ["text", "md", "html"])
def test_every_format_lists_what_does_not_hold(tmp_path: Path, warehouse: str, fmt: str) -> None:
    path = claims_file(tmp_path, all_claims())
    result = cli("verify-claims", "--file", path, "--warehouse", warehouse, "--format", fmt)
    assert result.exit_code == 0
    assert "11 claims checked: 3 holds, 2 stale, 1 misattributed" in result.stdout
    assert "misattributed" in result.stdout and "forem/comment/2a4bc" in result.stdout


def test_usage_errors(tmp_path: Path, warehouse: str) -> None:
    assert cli("verify-claims", "--warehouse", warehouse).exit_code == 2
    missing = cli("verify-claims", "--file", tmp_path / "nope.ndjson", "--warehouse", warehouse)
    assert missing.exit_code == 2 and "no such claims file" in missing.stderr


# -- the ledger ----------------------------------------------------------------------------
def test_the_ledger_shows_when_a_citation_stopped_holding(
    tmp_path: Path, warehouse: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    claim = {"claim_id": "q1", "doc_id": POLICY_DOC, "quote": "within 14 days", "revision": 2}
    path = claims_file(tmp_path, [claim])
    _, first = verify(path, warehouse)
    assert first["claims"][0]["status"] == "holds" and first["changed"] == []

    # upstream edits the policy again: the 14 days become 7
    with Warehouse.open(warehouse) as wh:
        monkeypatch.setenv("RECEIPTS_NOW", "2026-11-04T06:00:00Z")
        run = start_run(wh, "ingest", fixture.CORPUS, "h")
        policy_3 = fixture.POLICY_2.replace("14 days", "7 days")
        record = fixture.handbook_file("docs/policy.md", policy_3, fixture.COMMIT_2)
        Ingestor(wh, run.run_id, corpus=fixture.CORPUS).ingest(
            "github", Listing(fixture.HANDBOOK, [record])
        )
        finish_run(wh, run.run_id, "ok", {}, [])
    _, second = verify(path, warehouse)
    assert second["claims"][0]["status"] == "stale"
    assert second["changed"] == [
        {
            "claim_id": "q1",
            "doc_id": POLICY_DOC,
            "before": "holds",
            "after": "stale",
            "at_revision": 3,
            "checked_revision": 3,
        }
    ]
    _, third = verify(path, warehouse, "--record")  # found the same: recorded when asked
    assert third["changed"] == [] and third["recorded"]

    history = json.loads(cli("claims", "history", "q1", "--warehouse", warehouse, "--json").stdout)
    assert [(c["status"], c["checked_revision"]) for c in history["checks"]] == [
        ("holds", 2),
        ("stale", 3),
        ("stale", 3),
    ]
    assert [c["check_id"] for c in history["checks"]] == [1, 2, 3]
    text = cli("claims", "history", "q1", "--warehouse", warehouse).stdout
    assert "stale" in text and "← changed" in text
    unknown = cli("claims", "history", "nope", "--warehouse", warehouse)
    assert unknown.exit_code == 1 and "no check of claim 'nope'" in unknown.stderr


def test_checks_are_appended_never_rewritten(warehouse: str) -> None:
    with Warehouse.open(warehouse) as wh:
        claims = ClaimSet(
            "set", [Claim("a", STALLED_DOC, "the vehicle stalled", revision=1, origin="x")]
        )
        first = check_claims(wh, claims, record=True)
        second = check_claims(wh, claims, record=True)
        assert (first.check_id, second.check_id) == (1, 2)
        assert len(ledger.claim_history(wh, "a")) == 2
        assert ledger.latest_statuses(wh, "set") == {"a": "holds"}


def test_a_claim_left_out_of_the_last_check_keeps_its_earlier_status(
    tmp_path: Path, warehouse: str
) -> None:
    # the previous statuses are read from the set's latest check alone when it has every
    # claim; a claim it lacks is looked up in the ledger's history
    both = [
        {"claim_id": "a", "doc_id": STALLED_DOC, "quote": "the vehicle stalled", "revision": 1},
        {"claim_id": "b", "doc_id": STALLED_DOC, "quote": "the brakes failed", "revision": 1},
    ]
    path = claims_file(tmp_path, both)
    _, first = verify(path, warehouse)
    assert [(c["claim_id"], c["after"]) for c in first["changed"]] == [("b", "missing")]
    claims_file(tmp_path, both[:1])
    assert verify(path, warehouse)[1]["changed"] == []
    claims_file(tmp_path, both)
    _, third = verify(path, warehouse)
    assert third["changed"] == []  # b was missing before, not seen for the first time
    with Warehouse.open(warehouse) as wh:
        assert ledger.latest_statuses(wh, str(path), ["a", "b"]) == {
            "a": "holds",
            "b": "missing",
        }


def test_a_quote_new_to_a_repeat_check_gets_its_search_strings(
    tmp_path: Path, warehouse: str
) -> None:
    # a repeat check reads the stored search strings; one that finds a quote without any
    # (a claim added since) stores them and checks again, over texts already stored
    first = {"claim_id": "a", "doc_id": STALLED_DOC, "quote": "the vehicle stalled", "revision": 1}
    path = claims_file(tmp_path, [first])
    assert verify(path, warehouse)[1]["counts"]["holds"] == 1
    added = {"claim_id": "b", "doc_id": STALLED_DOC, "revision": 1, "quote": "on the highway"}
    claims_file(tmp_path, [first, added])
    _, report = verify(path, warehouse)
    got = {c["claim_id"]: (c["status"], c["at_revision"]) for c in report["claims"]}
    assert got == {"a": ("holds", None), "b": ("stale", 2)}
    with Warehouse.open(warehouse) as wh:
        hashes = [Claim("b", STALLED_DOC, added["quote"], revision=1).quote_hash]
        assert ledger.quotes_without_needles(wh, hashes, rules_version()) == set()


def test_reader_text_is_never_derived_from_corrupted_bytes(tmp_path: Path, warehouse: str) -> None:
    recorded, _ = forge_snapshot(warehouse, STALLED_DOC, b"highway", b"FORGED", revision=1)
    claim = {"claim_id": "f", "doc_id": STALLED_DOC, "quote": "on the FORGED", "revision": 1}
    path = claims_file(tmp_path, [claim])
    result = cli("verify-claims", "--file", path, "--warehouse", warehouse)
    assert result.exit_code == 1, result.output
    assert "FORGED" not in result.stdout
    line = result.stderr.strip()
    assert f"{STALLED_DOC} revision 1 is corrupted" in line and recorded in line, line
    with Warehouse.open(warehouse) as wh:  # nothing recorded
        assert ledger.claim_history(wh, "f") == []


# -- equivalence with verify-quote ---------------------------------------------------------
BODIES = [
    ("text/html", b"<p>I&#39;d <em>never</em> buy it &mdash; <b>ever</b>.</p><p>Next</p>"),
    ("text/markdown", b"# Title\n\nSee [the *docs*](http://x) and `code` - now.\n"),
    ("text/plain", b"A <b> literal tag, and \xe2\x80\x9cquotes\xe2\x80\x9d.\n"),
    ("application/json", b'{"a": "<p>one&nbsp;two</p>", "b": ["three", {"c": "four"}]}'),
    ("application/json", b"{not json <b>bold</b>}"),
    ("application/pdf", b"%PDF-1.4"),
    ("text/markdown", b"Use `snake_case_name` <a title='x > hidden words'>here</a>.\n"),
]
QUOTES = [
    "I'd never buy it - ever.",
    "never buy",
    "ever. Next",
    "the docs and code",
    "[the *docs*](http://x)",
    "A <b> literal",
    "A literal",
    '"quotes"',
    "one two",
    "two three",
    "three",
    "bold",
    "<b>bold</b>",
    "Title See",
    "eve",
    "ne two",
    "snakecasename",
    "snake_case_name",
    "case",
    "hidden words",
    "here.",
]


def bulk_found(quote: str, body: bytes, media_type: str) -> bool | None:
    row = snapshot_reader_text("h", body, media_type)
    if row.text is None:
        return None
    q = claim_query(Claim("c", "d", quote, revision=1))
    needles = [q.needle_md, q.literal_md] if row.markdown else [q.needle, q.literal]
    return any(n is not None and n in row.text for n in needles)


def quote_found(quote: str, body: bytes, media_type: str) -> bool:
    text = RevisionText(1, "h", media_type, body)
    return check_quote("d", quote, [text], 1).cited.contains


@pytest.mark.parametrize("media_type,body", BODIES)
@pytest.mark.parametrize("quote", QUOTES)
def test_the_bulk_match_agrees_with_verify_quote(quote: str, body: bytes, media_type: str) -> None:
    assert bool(bulk_found(quote, body, media_type)) == quote_found(quote, body, media_type)


TEXT = st.text(alphabet="ab <>/&;#*_[]()`-–\u00a0\u201c\"'\n", max_size=30)


@settings(max_examples=300, deadline=None)
@given(quote=TEXT, body=TEXT, media_type=st.sampled_from(["text/html", "text/markdown"]))
def test_the_bulk_match_agrees_on_arbitrary_text(quote: str, body: str, media_type: str) -> None:
    if not claim_query(Claim("c", "d", quote, revision=1)).needle:
        return  # refused by both: an empty quote is a bad claim row
    encoded = body.encode()
    assert bool(bulk_found(quote, encoded, media_type)) == quote_found(quote, encoded, media_type)


def test_stored_search_strings_agree_with_verify_quote(warehouse: str) -> None:
    # a repeat check searches the strings stored at the first one: stored and read back,
    # they must match exactly where check_quote matches
    claims = [Claim(f"q{n}", "d", quote, revision=1) for n, quote in enumerate(QUOTES)]
    hashes = [c.quote_hash for c in claims]
    with Warehouse.open(warehouse) as wh:
        assert store_needles(wh, claims, hashes, "rules-a") == len(set(QUOTES))
        assert store_needles(wh, claims, hashes, "rules-a") == 0  # computed once
        assert store_needles(wh, claims[:1], hashes[:1], "rules-b") == 1  # per rules
        stored = ledger.stored_needles(wh, "rules-a")
    for claim in claims:
        needles = stored[claim.quote_hash]
        assert needles == quote_needles(claim)
        for media_type, body in BODIES:
            row = snapshot_reader_text("h", body, media_type)
            found = None
            if row.text is not None:
                pair = [needles.needle_md, needles.literal_md] if row.markdown else needles[1:3]
                found = any(n is not None and n in row.text for n in pair)
            assert bool(found) == quote_found(claim.quote, body, media_type)


def test_a_repeat_check_gives_the_first_checks_verdicts(warehouse: str) -> None:
    claims = [
        Claim(cid, row["doc_id"], row["quote"], revision=row["revision"])
        for cid, row in ((r["claim_id"], r) for r in all_claims())
    ]
    with Warehouse.open(warehouse) as wh:
        first = check_claims(wh, ClaimSet("s", claims))
        hashes = [c.quote_hash for c in claims]
        assert ledger.quotes_without_needles(wh, hashes, rules_version()) == set()
        again = check_claims(wh, ClaimSet("s", claims))
    assert [v.as_json() for v in again.verdicts] == [v.as_json() for v in first.verdicts]
    assert {v.claim.claim_id: v.status for v in first.verdicts} == {
        cid: status for cid, (_, status, *_) in CLAIMS.items()
    }


def test_reader_text_is_stored_once_per_rules(warehouse: str) -> None:
    with Warehouse.open(warehouse) as wh:
        claims = ClaimSet("s", [Claim("a", POLICY_DOC, "Returns policy", revision=1)])
        check_claims(wh, claims)
        missing = list(ledger.unread_snapshots(wh, [POLICY_DOC], rules_version()))
        assert missing == []
        assert next(iter(ledger.unread_snapshots(wh, [POLICY_DOC], "other-rules")))


def test_a_word_character_is_one_for_python_regular_expressions_too() -> None:
    # marked() splits words with \w: it must agree with is_word_char on every code point
    import re

    word = re.compile(r"\w")
    assert all(bool(word.fullmatch(chr(c))) == is_word_char(chr(c)) for c in range(0x110000))


WORDS = st.text(alphabet="aé_1 .-'\u0663\u00b2x", max_size=20)


@settings(max_examples=500, deadline=None)
@given(needle=WORDS, haystack=WORDS)
def test_marked_substrings_are_whole_word_matches(needle: str, haystack: str) -> None:
    if not needle:
        return
    assert (marked(needle) in marked(haystack)) == (find_words(needle, haystack) >= 0)


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=f"ab <>&;*_ \n{WORD_START}{WORD_END}\u00a0", max_size=30))
def test_reader_text_never_holds_a_word_mark(text: str) -> None:
    for markdown in (False, True):
        for markup in (False, True):
            plain = reader_text(text, markdown=markdown, markup=markup)
            assert WORD_START not in plain and WORD_END not in plain
