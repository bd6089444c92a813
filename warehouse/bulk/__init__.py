"""A flat file's rows into documents, in bulk: the warehouse's half of a backfill.

From the bottom up (each module imports only those above it in this list):

- :mod:`.spec`: what a source says of its file (:class:`~.spec.FlatSpec`) and the row judge
  it hands over (:class:`~.spec.RowJudge`); imports nothing of the engine.
- :mod:`.linecheck`: the check of a block's lines in Arrow, and the judge's verdicts on the
  lines it cannot vouch for.
- The SQL, in the order it runs: :mod:`.plan_sql` (pass 1 stages the rows; the plan groups
  them into documents and joins them with what the warehouse knows), :mod:`.build_sql`
  (pass 2: a block's planned lines into documents), :mod:`.commit_sql` (each range of
  documents classified and written).
- :mod:`.row_json`: each planned row's canonical JSON object, and the documents of one row,
  in Arrow.
- :mod:`.built`: built documents as Arrow; :mod:`.build_engine`: the build statements' own
  DuckDB database.
- :mod:`.engine`: :class:`~.engine.FlatBulk`, generic over a spec, which runs them.
"""
