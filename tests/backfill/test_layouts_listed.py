"""The README lists every flat-file layout the backfill reads, with when it was current, as
``sources/nhtsa/flatfile/layouts.py`` holds them, so the list cannot drift from the code."""

from __future__ import annotations

from sources.nhtsa.flatfile.layouts import LAYOUTS
from tests.conftest import REPO


def test_the_readme_lists_every_layout_with_its_dates() -> None:
    readme = " ".join((REPO / "README.md").read_text().split())
    for kind, layout in LAYOUTS.items():
        start = readme.index(f"- {kind}: ")
        line = readme[start : readme.index(".", readme.index(layout.layouts[-1].published, start))]
        for names in layout.layouts:
            assert f"{len(names.fields)} fields, {names.published}" in line, (kind, names.label)


def test_the_docs_table_names_every_layout() -> None:
    page = (REPO / "docs" / "sources" / "nhtsa.md").read_text()
    for layout in LAYOUTS.values():
        for names in layout.layouts:
            assert f"`{names.label}`" in page, names.label
