"""The entry format: canonical, parsed back to the same bytes, and built identically by the
Python formatter and by the SQL the writers run in bulk."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import REPO
from tests.tlog_wire import doc_examples
from warehouse.tlog import entries
from warehouse.tlog.entries_sql import RevisionColumns, revision_entry

_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
_MAYBE = st.none() | _TEXT
_INSTANT = st.none() | st.datetimes(
    min_value=datetime(1971, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)
)


def test_a_revision_entry_is_the_documented_text() -> None:
    entry = entries.revision_entry(
        doc_id="nhtsa/complaint/11561420", document="complaint", revision=2,
        content_hash="ab" * 32, tombstone=False, reason=None, restores=False,
        source_url="https://example.test/a\\b\nc", source_commit="",
        seen_at=datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC), run=12,
    )  # fmt: skip
    assert (
        entry
        == (
            "receipts-log-entry v1\nkind revision\ndoc_id nhtsa/complaint/11561420\n"
            f"document complaint\nrevision 2\ncontent_hash {'ab' * 32}\nreason\n"
            "source_url https://example.test/a\\\\b\\nc\nsource_commit \n"
            "seen_at 2026-01-02T03:04:05.123456Z\nrun 12\n"
        ).encode()
    )
    parsed = entries.parse(entry)
    assert parsed.kind == "revision" and parsed.get("source_url") == "https://example.test/a\\b\nc"
    assert parsed.get("reason") is None and parsed.get("source_commit") == ""


@pytest.mark.parametrize(
    "bad",
    [
        b"receipts-log-entry v2\nkind revision\n",
        b"receipts-log-entry v1\nkind nope\n",
        b"receipts-log-entry v1\nkind push\npush_id 1\n",
        b"receipts-log-entry v1\nkind push",
        b"\xff",
    ],
)
def test_anything_but_the_canonical_form_is_refused(bad: bytes) -> None:
    with pytest.raises(entries.EntryError):
        entries.parse(bad)


_CASTS = {"revision": "INTEGER", "run": "BIGINT", "seen_at": "TIMESTAMPTZ",
          "tombstone": "BOOLEAN", "restores": "BOOLEAN"}  # fmt: skip


def _sql_entry(values: dict[str, object]) -> bytes:
    con = duckdb.connect()
    con.execute("SET TimeZone = 'America/New_York'")  # the instants are written in UTC anyway
    columns = RevisionColumns(
        *(f"CAST(${name} AS {_CASTS.get(name, 'VARCHAR')})" for name in RevisionColumns._fields)
    )
    [(value,)] = con.execute(f"SELECT {revision_entry(columns)}", values).fetchall()
    return bytes(value)


@settings(max_examples=60, deadline=None)
@given(
    doc_id=_TEXT, document=_MAYBE, revision=st.integers(1, 10**6), content_hash=_MAYBE,
    tombstone=st.booleans(), reason=_MAYBE, restores=st.booleans(), source_url=_MAYBE,
    source_commit=_MAYBE, seen_at=_INSTANT, run=st.integers(1, 10**9),
)  # fmt: skip
def test_sql_and_python_build_the_same_bytes(**values: object) -> None:
    python = entries.revision_entry(**values)  # type: ignore[arg-type]
    assert _sql_entry(values) == python
    assert entries.format_entry(dict(entries.parse(python).fields)) == python


def test_an_instant_is_written_in_utc() -> None:
    local = datetime(2026, 1, 2, 7, 4, 5, tzinfo=timezone(timedelta(hours=2)))
    assert entries.instant(local) == "2026-01-02T05:04:05.000000Z"


def test_the_docs_show_entries_the_formatter_makes() -> None:
    page = (REPO / "docs" / "transparency-log.md").read_text()
    section = page[page.index("## Entries") : page.index("## In the warehouse")]
    shown = re.findall(r"```text\n(.*?)```", section, re.S)
    assert [s.encode() for s in shown] == [doc_examples.REVISION, doc_examples.PUSH]
    for entry in (doc_examples.REVISION, doc_examples.PUSH):
        assert entries.format_entry(dict(entries.parse(entry).fields)) == entry


@pytest.mark.parametrize("text", ["a\\b", "a\nb", "a\rb", "\\n", "plain", ""])
@pytest.mark.parametrize("field", ["doc_id", "document", "content_hash", "reason", "source_url",
                                   "source_commit"])  # fmt: skip
def test_sql_escapes_only_what_needs_escaping_in_each_text_field(field: str, text: str) -> None:
    values: dict[str, object] = {
        "doc_id": "d/1", "document": "record", "revision": 2, "content_hash": "ab" * 32,
        "tombstone": False, "reason": None, "restores": True, "source_url": "https://x.test/1",
        "source_commit": None, "seen_at": datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC), "run": 9,
    }  # fmt: skip
    values[field] = text
    assert _sql_entry(values) == entries.revision_entry(**values)  # type: ignore[arg-type]
