"""NHTSA's bulk flat files (reference §2.4–2.6): what they are, with no SQL.

The files are zipped, tab-delimited with no quote convention (narratives contain ``"``),
ISO-8859-1, one row per line, dates ``YYYYMMDD``. Each layout is recognised by its field
count; a row with another count, a malformed date or a missing identity is *malformed*:
it is reported with its line number and reason, never dropped silently, never fatal.

A document is every row of one identity (a complaint's ODI number appears once per
vehicle/component, a recall campaign once per make/model/year, ...): its body keeps them
verbatim.

- :mod:`.layouts`: each file's layouts (field names by count), identity, vehicle and dates.
- :mod:`.zipped`, :mod:`.reading`, :mod:`.lines`: a file's bytes, cut into blocks of whole
  lines, and a block's lines as Arrow (with each raw line's SHA-256).
- :mod:`.rows`: the row judge: the line-at-a-time rules, the last word on every line the
  warehouse's bulk check cannot vouch for, and the bytes of a document it cannot build.
- :mod:`.spec`: a layout as the warehouse's bulk path needs it (:mod:`warehouse.bulk.spec`).
- :mod:`.download`: a file fetched from NHTSA's static host.
"""
