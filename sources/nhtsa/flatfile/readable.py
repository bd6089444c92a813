"""Whether a flat file read as one kind is that kind's file: the layouts its lines have, and
why a backfill that would keep nothing, or mostly malformed lines, is refused.

A file none of whose lines is a row of its kind's layouts (a wrong file, a CSV index, a
layout not known here) would otherwise finish "ok" with nothing kept. The verdict names what
the file looks like (the field counts of its lines) and the layouts it was compared with.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sources.nhtsa.flatfile.layouts import Layout

# More than this share of malformed lines fails a backfill unless --allow-malformed: "most
# lines" malformed means the file is not what it was read as.
MALFORMED_SHARE_LIMIT = 0.5
_COUNTS_SHOWN = 5


@dataclass(frozen=True)
class FileShape:
    """What one pass over a file's lines saw: lines checked, malformed, the field count of
    each line (tabs + 1), and the start of its first line."""

    rows: int
    malformed: int
    field_counts: Mapping[int, int]
    first_line: str = ""


def layouts_seen(layout: Layout, field_counts: Mapping[int, int]) -> dict[str, int]:
    """The layouts of ``layout`` the file's lines have, by label, with how many lines have
    each one's field count (file order of labels: the layouts' order)."""
    by_count = layout.by_count()
    return {
        by_count[count].label: field_counts[count]
        for count in sorted(by_count)
        if field_counts.get(count)
    }


def describe_counts(field_counts: Mapping[int, int]) -> str:
    """``1 field (3 lines), 29 fields (2 lines)``: the commonest counts first."""
    ranked = sorted(field_counts.items(), key=lambda item: (-item[1], item[0]))
    parts = [
        f"{count} field{'s' if count != 1 else ''} ({lines:,} line{'s' if lines != 1 else ''})"
        for count, lines in ranked[:_COUNTS_SHOWN]
    ]
    if len(ranked) > _COUNTS_SHOWN:
        parts.append(f"{len(ranked) - _COUNTS_SHOWN} other counts")
    return ", ".join(parts)


def refusal(layout: Layout, shape: FileShape, name: str, allow_malformed: bool) -> str | None:
    """Why a backfill of ``name`` read as ``layout`` must fail, or None when it may go on."""
    compared = f"the {layout.kind} layouts compared: {layout.describe_layouts()}"
    seen = f"field counts seen: {describe_counts(shape.field_counts)}"
    if shape.rows == 0:
        return f"{name} holds no {layout.kind} row: it has no lines but blank ones or a header"
    if shape.malformed >= shape.rows:
        hint = ""
        if "," in shape.first_line and "\t" not in shape.first_line:
            hint = " (its first line has commas and no tab: a CSV file, not a flat file?)"
        return (
            f"{name} holds no readable {layout.kind} row: all {shape.rows:,} lines are "
            f"malformed{hint}; {seen}; {compared}. Is it the right file for --kind "
            f"{layout.kind}?"
        )
    if not allow_malformed and shape.malformed > shape.rows * MALFORMED_SHARE_LIMIT:
        share = shape.malformed / shape.rows
        return (
            f"{name}: {shape.malformed:,} of {shape.rows:,} lines ({share:.0%}) are malformed, "
            f"more than {MALFORMED_SHARE_LIMIT:.0%}; {seen}; {compared}. "
            "--allow-malformed keeps the readable rows"
        )
    return None
