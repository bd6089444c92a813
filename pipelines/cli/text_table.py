"""Aligned text tables: every value printed as it is, in memory that does not grow with the
rows.

A cell is its value's text (:func:`pipelines.cli.listing.text_value`) with nothing
interpreted: square brackets and ``:name:`` are printed, not read as styles or emoji, and
control characters are written out (:func:`pipelines.visible.visible_cell`), so a value
never moves the cursor, breaks the line or changes the terminal. Columns are as wide as
their widest cell on screen (a wide character counts two), separated by two spaces; a
column of numbers is aligned right, header and all. Nothing is cut to fit the terminal.

A column's width is known only once every row is read. The first :data:`HELD_ROWS` rows are
held in memory; past that, rows are written to a temporary file (in ``TMPDIR``) as they come
and read back to print, so a listing of millions of documents needs memory for its widths
only.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator, Sequence
from typing import IO, Any

from rich.cells import cell_len

from pipelines.visible import visible_cell

HELD_ROWS = 10_000  # rows held in memory before the rest go to a temporary file
_SEPARATOR = "  "


class TextTable:
    """Rows added one at a time (:meth:`add`), then printed aligned (:meth:`lines`)."""

    def __init__(self, columns: Sequence[str], text: Callable[[Any], str] = str) -> None:
        """``text``: how a value reads (``str`` by default)."""
        self.columns = list(columns)
        self.rows = 0
        self._text = text
        self._header = [visible_cell(c) for c in self.columns]
        self._widths = [cell_len(c) for c in self._header]
        self._right = [False] * len(self.columns)
        self._held: list[list[str]] = []
        self._spool: IO[str] | None = None

    def add(self, values: Sequence[Any]) -> None:
        """One row: a value per column, in column order."""
        cells = [visible_cell(self._text(v)) for v in values]
        for i, (value, cell) in enumerate(zip(values, cells, strict=True)):
            self._widths[i] = max(self._widths[i], cell_len(cell))
            if not self._right[i] and isinstance(value, int | float):
                self._right[i] = True
        self.rows += 1
        if self._spool is not None:
            self._spool.write("\t".join(cells) + "\n")  # cells hold no tab or line end
            return
        self._held.append(cells)
        if len(self._held) > HELD_ROWS:
            # Open across calls; closed by close(), which lines() calls once read.
            self._spool = tempfile.TemporaryFile("w+", encoding="utf-8", newline="\n")  # noqa: SIM115
            self._spool.writelines("\t".join(row) + "\n" for row in self._held)
            self._held = []

    @property
    def widths(self) -> list[int]:
        """Each column's width on screen so far."""
        return list(self._widths)

    def at_least(self, widths: Sequence[int] | None) -> None:
        """Make each column at least as wide as ``widths`` (those of a page printed before)."""
        if widths is not None:
            self._widths = [max(a, b) for a, b in zip(self._widths, widths, strict=True)]

    def _cells(self) -> Iterator[list[str]]:
        yield self._header
        if self._spool is None:
            yield from self._held
            return
        self._spool.seek(0)
        for line in self._spool:
            yield line[:-1].split("\t")

    def lines(self) -> Iterator[str]:
        """The header and every row, aligned; trailing spaces dropped. The temporary file,
        if any, is closed once they are read."""
        try:
            for cells in self._cells():
                padded = (
                    " " * (width - cell_len(cell)) + cell if right
                    else cell + " " * (width - cell_len(cell))
                    for cell, width, right in zip(cells, self._widths, self._right, strict=True)
                )  # fmt: skip
                yield _SEPARATOR.join(padded).rstrip()
        finally:
            self.close()

    def close(self) -> None:
        if self._spool is not None:
            self._spool.close()
            self._spool = None
        self._held = []
