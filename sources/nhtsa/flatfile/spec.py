"""A flat file's layout as the warehouse's bulk path needs it (:mod:`warehouse.bulk.spec`)."""

from __future__ import annotations

from sources.nhtsa.flatfile.layouts import Layout
from sources.nhtsa.flatfile.rows import RowShape, VehicleFilter
from sources.nhtsa.parse import PLAIN_KEYS
from warehouse.bulk.spec import FlatSpec, ShapeSpec

# -- documents -----------------------------------------------------------------------------
# The shape of a flat-file document's bytes (below). Part of every document's input
# fingerprint: change it whenever that shape changes, so that a backfill builds every
# document again instead of trusting fingerprints recorded under the old shape.
FLAT_BODY_VERSION = "flat-body-v1"
# The canonical JSON rules the bytes follow, in every fingerprint. A flat document (strings
# under ASCII names, and model years) has the same bytes in canonical form v1 and in RFC 8785
# (v2), so the fingerprints recorded under v1 stay valid: this stays "canonical-v1".
FLAT_CANONICAL_RULES = "canonical-v1"


def flat_spec(layout: Layout, wanted: VehicleFilter) -> FlatSpec:
    """What the warehouse's bulk path needs of ``layout``: each field list compiled to
    indexes, the identities it may take as they stand, the vehicle filter."""
    pattern, numeric = PLAIN_KEYS[layout.kind]
    shapes = []
    for names in layout.layouts:
        shape = RowShape.of(layout, names)
        shapes.append(
            ShapeSpec(
                count=len(names.fields),
                label=names.label,
                sorted_names=shape.sorted_names,
                order=shape.order,
                key_index=shape.key_indexes[0] if shape.key_indexes else None,
                key_pattern=pattern,
                key_numeric=numeric,
                date_indexes=shape.date_indexes,
                year_index=shape.year_index,
                make_index=shape.make_index,
                model_index=shape.model_index,
            )
        )
    labels = "+".join(names.label for names in layout.layouts)
    rules = f"{FLAT_CANONICAL_RULES}|{FLAT_BODY_VERSION}|{layout.name}|{labels}|"
    return FlatSpec(
        shapes=tuple(shapes),
        doc_prefix=f"nhtsa/{layout.doc_kind}/",
        kind=layout.doc_kind,
        source_format=layout.source_format,
        salt=rules,
        make=wanted.make,
        model=wanted.model,
        years=wanted.years,
    )
