"""``verify-quote`` and ``verify-claims`` read a document as its reader sees it, and agree on
every case: what a reader cannot see is normalised (whitespace, invisible characters,
canonical equivalence), a visible character is never turned into another.

The evidence behind the cases:

- UAX #15 (https://unicode.org/reports/tr15/): canonically equivalent sequences (``é`` as
  U+00E9 or as ``e`` + U+0301) represent the same character and look the same, so NFC
  folds them; compatibility equivalents (``²`` U+00B2 and ``2``, the ligature ``ﬁ`` U+FB01
  and ``fi``) may look different and are only folded by NFKC, which is not applied;
- CommonMark (https://spec.commonmark.org/0.31.2/#emphasis-and-strong-emphasis): a ``*``
  that opens no emphasis is a literal character (``a*b``), code spans show their content
  verbatim (``a*b`` in backticks), ``*b*`` between spaces is emphasis;
- GFM tables (https://github.github.com/gfm/#tables-extension-): a row's cells are
  separated by pipes, which are not shown: the table renders as ``<td>`` cells, read here
  one after the other with a space between them.

Each document is a GitHub file as ``receipts`` stores one (the raw bytes at a commit).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import cli
from warehouse.ingest import Ingestor
from warehouse.records import Listing, Provenance, Record
from warehouse.runs import finish_run, start_run
from warehouse.store import Warehouse

COMMIT = "5d1e0c3b7a9f2e4d6c8b0a1f3e5d7c9b1a3f5e7d"
RELEASE_NOTES = """# Release 2.4 checklist

| Check | Result |
|---|---|
| 24 h soak | without leaks passed |
| Cold start | 1.2 s |
"""

# case → (path, file text, quote, whether a reader sees the quote in the file)
CASES: dict[str, tuple[str, str, str, bool]] = {
    # compatibility equivalents are other characters (no NFKC)
    "superscript": ("physics.md", "Energy: E=mc\u00b2 in any frame.\n", "E=mc2", False),
    "superscript-plain": ("physics.txt", "Energy: E=mc\u00b2 in any frame.\n", "E=mc2", False),
    "superscript-exact": ("physics2.md", "Energy: E=mc\u00b2 in any frame.\n", "E=mc\u00b2", True),
    "ligature": ("offer.txt", "This is our \ufb01nal offer.\n", "our final offer", False),
    "ligature-exact": ("offer2.txt", "This is our \ufb01nal offer.\n", "our \ufb01nal offer", True),
    # a "*" or a backtick that is not emphasis or a code span is text
    "star-in-prose": ("maths.md", "Multiply a*b by c.\n", "Multiply ab by c.", False),
    "star-in-prose-exact": ("maths2.md", "Multiply a*b by c.\n", "Multiply a*b by c.", True),
    "code-span": ("code.md", "The `a*b` product.\n", "The ab product.", False),
    "code-span-exact": ("code2.md", "The `a*b` product.\n", "The a*b product.", True),
    # emphasis is markup: the reader sees "a b c", and the source quoted reads the same
    "emphasis-as-seen": ("em.md", "Say a *b* c now.\n", "a b c", True),
    "emphasis-as-written": ("em2.md", "Say a *b* c now.\n", "a *b* c", True),
    # a table row is read cell after cell
    "table-row": ("RELEASE.md", RELEASE_NOTES, "24 h soak without leaks passed", True),
    "table-pipes": ("RELEASE2.md", RELEASE_NOTES, "soak | without", False),
    # what a reader cannot see
    "no-break-space": ("nbsp.md", "Torque to 25\u00a0Nm.\n", "Torque to 25 Nm.", True),
    "zero-width": ("zw.md", "Air\u200bbag light on.\n", "Airbag light on.", True),
    "composed-in-text": ("cafe.md", "Caf\u00e9 menu\n", "Cafe\u0301 menu", True),
    "decomposed-in-text": ("cafe2.txt", "Cafe\u0301 menu\n", "Caf\u00e9 menu", True),
    # typographic quotes are visible characters
    "curly-quotes": ("quote.txt", "He said \u201cno defect\u201d.\n", 'said "no defect"', False),
}


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("reader") / "reader.duckdb")
    records = [
        Record(
            doc_id=f"github/acme/notes/{file}",
            kind="file",
            body=text.encode("utf-8"),
            media_type="text/markdown" if file.endswith(".md") else "text/plain",
            provenance=Provenance(
                url=f"https://raw.githubusercontent.com/acme/notes/{COMMIT}/{file}",
                commit=COMMIT,
                source_format="github-raw",
            ),
        )
        for file, text, _, _ in CASES.values()
    ]
    with Warehouse.open(path) as wh:
        info = start_run(wh, "ingest", "notes", "hash-of-notes")
        Ingestor(wh, info.run_id, corpus="notes").ingest(
            "github", Listing("github:acme/notes", records)
        )
        finish_run(wh, info.run_id, "ok", {}, [])
    return path


@pytest.mark.parametrize("case", CASES)
def test_verify_quote_reads_as_a_reader_sees(warehouse: str, case: str) -> None:
    file, _, quote, seen = CASES[case]
    result = cli("verify-quote", f"github/acme/notes/{file}", quote, "--warehouse", warehouse)
    assert result.exit_code == (0 if seen else 1), result.output


def test_verify_claims_agrees_with_verify_quote(warehouse: str, tmp_path: Path) -> None:
    claims = tmp_path / "claims.ndjson"
    rows = [
        {"claim_id": case, "doc_id": f"github/acme/notes/{file}", "quote": quote, "revision": 1}
        for case, (file, _, quote, _) in CASES.items()
    ]
    claims.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = cli("verify-claims", "--file", claims, "--warehouse", warehouse, "--json")
    statuses = {c["claim_id"]: c["status"] for c in json.loads(result.stdout)["claims"]}
    assert statuses == {case: "holds" if seen else "missing" for case, (*_, seen) in CASES.items()}
