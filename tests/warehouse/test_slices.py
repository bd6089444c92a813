"""Arrow tables are handed to DuckDB in slices: the same rows, views of the same buffers."""

from __future__ import annotations

import pyarrow as pa

from warehouse.slices import SLICE_ROWS, in_slices


def test_a_table_is_sliced_into_batches_of_at_most_the_slice_size_without_copying() -> None:
    table = pa.table({"n": pa.array(range(2 * SLICE_ROWS + 5), pa.int64())})
    sliced = in_slices(table)
    assert [b.num_rows for b in sliced.to_batches()] == [SLICE_ROWS, SLICE_ROWS, 5]
    assert sliced.equals(table)
    data = table["n"].chunk(0).buffers()[1]
    for i, batch in enumerate(sliced.to_batches()):  # a view: the same buffer, an offset
        column = batch.column(0)
        assert column.buffers()[1].address == data.address and column.offset == i * SLICE_ROWS


def test_an_empty_table_keeps_its_schema() -> None:
    table = pa.table({"n": pa.array([], pa.int64()), "s": pa.array([], pa.string())})
    sliced = in_slices(table)
    assert sliced.schema == table.schema and sliced.num_rows == 0
