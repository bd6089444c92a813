"""Audit commands on the fixture corpus, as a user runs them: history, diff, as-of and
verify-quote, including a real quote cited under the wrong revision."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests import corpus_fixture as fixture
from tests.conftest import cli


@pytest.fixture
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> str:
    return fixture.shared(tmp_path_factory)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# -- history -------------------------------------------------------------------------------
def test_history_shows_the_tombstone_and_the_restoration(warehouse: str) -> None:
    result = cli("history", "nhtsa/complaint/11561422", "--warehouse", warehouse, "--json")
    revisions = json.loads(result.stdout)["revisions"]
    assert [(r["revision"], r["tombstone"], r["valid_from_run"]) for r in revisions] == [
        (1, False, 1),
        (2, True, 2),
        (3, False, 4),
    ]
    assert revisions[0]["content_hash"] == revisions[2]["content_hash"]
    assert revisions[1]["tombstone_reason"] == "gone upstream"


def test_history_of_a_changed_file_keeps_both_commits(warehouse: str) -> None:
    doc = "github/acme/handbook/docs/policy.md"
    revisions = json.loads(cli("history", doc, "--warehouse", warehouse, "--json").stdout)[
        "revisions"
    ]
    assert [r["content_hash"] for r in revisions] == [sha(fixture.POLICY_1), sha(fixture.POLICY_2)]
    assert [r["provenance"]["commit"] for r in revisions] == [fixture.COMMIT_1, fixture.COMMIT_2]


# -- diff ----------------------------------------------------------------------------------
def test_diff_of_a_record_names_the_changed_fields(warehouse: str) -> None:
    result = cli("diff", "nhtsa/complaint/11561421", "--warehouse", warehouse)
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0] == "nhtsa/complaint/11561421"
    assert lines[1].startswith("  - revision 1  ") and "(run 1, 2026-11-01T06:00:00Z)" in lines[1]
    assert lines[2].startswith("  + revision 2  ") and "(run 4, 2026-11-03T06:00:00Z)" in lines[2]
    assert "  crash changed: false → true" in lines
    assert any(
        line.startswith("  summary changed: While driving on the [-highway-]{+interstate+}")
        for line in lines
    )


def test_diff_of_a_text_file_is_a_unified_diff(warehouse: str) -> None:
    doc = "github/acme/handbook/docs/policy.md"
    data = json.loads(cli("diff", doc, "1", "2", "--warehouse", warehouse, "--json").stdout)
    assert data["old"]["content_hash"] == sha(fixture.POLICY_1)
    assert data["new"]["media_type"] == "text/markdown"
    assert data["diff"]["kind"] == "text"
    assert data["diff"]["lines"][:3] == ["--- revision 1", "+++ revision 2", "@@ -1,6 +1,7 @@"]
    assert "+Store credit is offered when the receipt is missing." in data["diff"]["lines"]


def test_diff_defaults_skip_tombstones_and_accept_hash_prefixes(warehouse: str) -> None:
    doc = "nhtsa/complaint/11561422"
    default = json.loads(cli("diff", doc, "--warehouse", warehouse, "--json").stdout)
    assert (default["old"]["revision"], default["new"]["revision"]) == (1, 3)
    assert default["identical"] is True
    prefix = default["old"]["content_hash"][:10]
    by_hash = cli("diff", doc, prefix, "--warehouse", warehouse)
    assert by_hash.exit_code == 0 and "identical content" in by_hash.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nhtsa/complaint/11561422", "2"], "revision 2 is a tombstone (gone upstream)"),
        (["nhtsa/complaint/11561421", "7"], "has no revision 7; it has revisions 1..2"),
        (["nhtsa/complaint/11561423"], "fewer than two revisions with content (have: 1)"),
        (["nhtsa/complaint/1"], "no document 'nhtsa/complaint/1'"),
    ],
)
def test_diff_explains_what_it_cannot_compare(
    warehouse: str, args: list[str], message: str
) -> None:
    result = cli("diff", *args, "--warehouse", warehouse)
    assert result.exit_code == 1
    assert message in result.stderr


# -- as-of ---------------------------------------------------------------------------------
def test_as_of_lists_doc_revision_and_hash(warehouse: str) -> None:
    result = cli("as-of", "2", "--warehouse", warehouse, "--source", "github")
    assert result.exit_code == 0
    files = [
        fixture.README,
        fixture.OLD_FAQ,
        fixture.handbook_file("docs/policy.md", fixture.POLICY_1, fixture.COMMIT_1),
    ]
    width = max(len(f.doc_id) for f in files)
    assert result.stdout.splitlines() == [
        "corpus (github) as of run 2: 3 documents",
        f"{'doc_id':<{width}}  revision  content_hash",
        *(f"{f.doc_id:<{width}}         1  {hashlib.sha256(f.body).hexdigest()}" for f in files),
    ]


def test_as_of_a_date_as_json(warehouse: str) -> None:
    data = json.loads(cli("as-of", "2026-11-03", "--warehouse", warehouse, "--json").stdout)
    assert data["point"] == {
        "run_id": None,
        "at": "2026-11-03T00:00:00Z",
        "label": "2026-11-03T00:00:00Z",
    }
    docs = {d["doc_id"]: d for d in data["documents"]}
    assert "nhtsa/complaint/11561422" not in docs  # gone between run 2 and run 4
    assert "forem/comment/2a4bc" in docs
    assert docs["github/acme/handbook/docs/policy.md"]["content_hash"] == sha(fixture.POLICY_1)
    assert len(docs) == 9  # 8 of the fixture corpus + 1 of the other corpus


def test_as_of_a_corpus_lists_its_members_then(warehouse: str) -> None:
    def members(point: str) -> set[str]:
        result = cli("as-of", point, "--corpus", fixture.CORPUS, "--warehouse", warehouse, "--json")
        return {d["doc_id"] for d in json.loads(result.stdout)["documents"]}

    at_2, at_4 = members("2"), members("4")
    assert "github/acme/handbook/docs/old-faq.md" in at_2
    assert "github/acme/handbook/docs/old-faq.md" not in at_4  # left the corpus in run 4
    assert "synthetic/record/other-1" not in at_4  # another corpus's document
    assert len(at_4) == 8
    assert members("2026-11-02T07:00:00Z") == at_2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["soon"], "neither a run id"),
        (["99"], "no run 99"),
        (["2", "--source", "nhtsaa"], "unknown source 'nhtsaa'; valid: forem, github, nhtsa"),
        (["2", "--corpus", "nope"], "no corpus 'nope' in the warehouse; known: fixture-corpus"),
    ],
)
def test_as_of_refuses_bad_arguments(warehouse: str, args: list[str], message: str) -> None:
    result = cli("as-of", *args, "--warehouse", warehouse)
    assert result.exit_code == 2
    assert message in result.stderr


# -- verify-quote --------------------------------------------------------------------------
COMPLAINT = "nhtsa/complaint/11561421"


def verify(warehouse: str, doc: str, quote: str, *extra: str) -> tuple[int, dict]:
    result = cli("verify-quote", doc, quote, *extra, "--warehouse", warehouse, "--json")
    return result.exit_code, json.loads(result.stdout)


def test_a_quote_in_the_cited_revision_verifies(warehouse: str) -> None:
    result = cli("verify-quote", COMPLAINT, "driving on the interstate", "--warehouse", warehouse)
    assert result.exit_code == 0
    assert result.stdout.startswith(
        f"ok: the quote occurs in {COMPLAINT} revision 2 (hash {sha_prefix(warehouse, 2)}…), "
        "in field summary"
    )


def sha_prefix(warehouse: str, revision: int, doc: str = COMPLAINT) -> str:
    revisions = json.loads(cli("history", doc, "--warehouse", warehouse, "--json").stdout)
    return revisions["revisions"][revision - 1]["content_hash"][:12]


def test_a_real_quote_cited_under_the_wrong_revision_fails(warehouse: str) -> None:
    result = cli(
        "verify-quote",
        COMPLAINT,
        "driving on the highway",
        "--revision",
        "2",
        "--warehouse",
        warehouse,
    )
    assert result.exit_code == 1
    first = result.stdout.splitlines()[0]
    assert first == (
        f"MISMATCH: quote matches revision 1 (hash {sha_prefix(warehouse, 1)}…), "
        "but the cited revision 2 does not contain it"
    )


def test_the_current_revision_is_checked_by_default(warehouse: str) -> None:
    code, data = verify(warehouse, COMPLAINT, "driving on the highway")
    assert code == 1
    assert data["cited_by"] == "current" and data["cited"]["revision"] == 2
    assert data["revisions_containing"] == [1]
    assert data["message"].endswith("but the current revision 2 does not contain it")


def test_a_quote_cited_by_hash(warehouse: str) -> None:
    old = sha_prefix(warehouse, 1)
    code, data = verify(warehouse, COMPLAINT, "driving on the highway", "--hash", old)
    assert code == 0 and data["ok"] and data["cited"]["revision"] == 1
    code, data = verify(warehouse, COMPLAINT, "would not restart", "--hash", old)
    assert code == 1
    assert data["message"] == (
        f"quote matches revision 2 (hash {sha_prefix(warehouse, 2)}…), "
        f"but the cited hash {old}… (revision 1) does not contain it"
    )


def test_a_quote_in_no_revision(warehouse: str) -> None:
    code, data = verify(warehouse, COMPLAINT, "the airbag deployed", "--revision", "1")
    assert code == 1
    assert data["revisions_containing"] == []
    assert data["message"] == (
        f"the cited revision 1 does not contain the quote, and no other revision of "
        f"{COMPLAINT} contains it (checked revisions 1 and 2)"
    )


def test_a_quote_of_a_deleted_comment(warehouse: str) -> None:
    code, data = verify(warehouse, "forem/comment/2a4bc", "mine stalled twice")
    assert code == 1
    assert data["message"].startswith("quote matches revision 1 (hash ")
    assert data["message"].endswith(
        "but the current revision 2 is a tombstone (gone upstream) and has no text"
    )


@pytest.mark.parametrize(
    "quote",
    [
        "I'd never buy this model again — the dealer said “no defect found”.",
        "I'd <em>never</em> buy this\n   model again &mdash; the dealer",
    ],
)
def test_quotes_match_as_a_reader_sees_the_comment(warehouse: str, quote: str) -> None:
    code, data = verify(warehouse, "forem/comment/2a4b9", quote)
    assert code == 0, data["message"]
    assert data["cited"]["where"] == "field body_html"


@pytest.mark.parametrize(
    ("doc_id", "quote"),
    [
        # the comment shows a straight apostrophe (&#39;), an em dash and curly quotes
        ("forem/comment/2a4b9", "I’d never buy this model again — the dealer said “no defect"),
        ("forem/comment/2a4b9", "I'd never buy this model again -- the dealer said \"no defect"),
        # the complaint says "no defect found" with straight quotes
        (COMPLAINT, "The dealer said “no defect found”"),
    ],
)
def test_typographic_quotes_and_dashes_are_characters_a_reader_sees(
    warehouse: str, doc_id: str, quote: str
) -> None:
    code, data = verify(warehouse, doc_id, quote, "--revision", "1")
    assert code == 1 and data["revisions_containing"] == [], data["message"]


def test_a_quote_in_a_markdown_file(warehouse: str) -> None:
    code, data = verify(
        warehouse,
        "github/acme/handbook/docs/policy.md",
        "Returns policy Customers may return",
        "--revision",
        "1",
    )
    assert code == 0 and data["cited"]["where"] == "text"


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        ([COMPLAINT, "x", "--hash", "abcdef0", "--revision", "1"], 2, "give --hash or --revision"),
        ([COMPLAINT, "  <p></p> ", "--revision", "1"], 2, "the quote is empty"),
        ([COMPLAINT, "x", "--revision", "5"], 1, "has no revision 5"),
        ([COMPLAINT, "x", "--hash", "ffffffff"], 1, "has no revision with hash ffffffff"),
        (["nhtsa/complaint/404", "x"], 1, "no document 'nhtsa/complaint/404'"),
    ],
)
def test_verify_quote_refuses_what_it_cannot_check(
    warehouse: str, args: list[str], code: int, message: str
) -> None:
    result = cli("verify-quote", *args, "--warehouse", warehouse)
    assert result.exit_code == code
    assert message in result.stderr


def test_revision_commands_never_write(warehouse: str, tmp_path: Path) -> None:
    before = Path(warehouse).read_bytes()
    cli("drift", "--warehouse", warehouse)
    cli("as-of", "3", "--warehouse", warehouse)
    cli("verify-quote", COMPLAINT, "stalled", "--warehouse", warehouse)
    assert Path(warehouse).read_bytes() == before


# -- verify --------------------------------------------------------------------------------
def test_verify_checks_revisions_against_their_snapshots_and_provenance(
    warehouse: str, tmp_path: Path
) -> None:
    from warehouse.store import Warehouse

    copy = tmp_path / "copy.duckdb"
    copy.write_bytes(Path(warehouse).read_bytes())
    clean = cli("verify", "--warehouse", copy, "--json")
    assert clean.exit_code == 0, clean.output
    assert json.loads(clean.stdout)["problems"] == []
    repointed = "nhtsa/complaint/11561420"
    duplicated = "github/acme/handbook/docs/policy.md"
    with Warehouse.open(str(copy)) as wh:
        con = wh._connection_for_tests()
        # a revision re-pointed at another document's snapshot (the bytes still hash right)
        con.execute(
            "UPDATE revisions SET content_hash = (SELECT content_hash FROM revisions "
            "WHERE doc_id = 'nhtsa/complaint/11561423' LIMIT 1) WHERE doc_id = $d",
            {"d": repointed},
        )
        con.execute(
            "INSERT INTO revisions SELECT * FROM revisions WHERE doc_id = $d AND revision = 1",
            {"d": duplicated},
        )
        con.execute(
            "UPDATE snapshots SET size = size + 1 WHERE content_hash = $h",
            {"h": sha(fixture.POLICY_2)},
        )
    result = cli("verify", "--warehouse", copy)
    assert result.exit_code == 1, result.output
    assert f"{repointed} revision 1 points to snapshot" in result.stdout
    assert "nhtsa/complaint/11561423" in result.stdout
    assert f"{duplicated} revision 1 is recorded 2 times" in result.stdout
    assert f"snapshot {sha(fixture.POLICY_2)} records a size of" in result.stdout
    data = json.loads(cli("verify", "--warehouse", copy, "--json").stdout)
    checks = {p["check"] for p in data["problems"]}
    assert checks == {"provenance", "order", "duplicate", "size", "log"}
