"""The layouts of NHTSA's flat files: each file's field names (by field count), identity,
vehicle and date fields."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sources.nhtsa.parse import DOC_KIND

CMPL_FIELDS_49 = (
    "CMPLID", "ODINO", "MFR_NAME", "MAKETXT", "MODELTXT", "YEARTXT", "CRASH", "FAILDATE",
    "FIRE", "INJURED", "DEATHS", "COMPDESC", "CITY", "STATE", "VIN", "DATEA", "LDATE", "MILES",
    "OCCURENCES", "CDESCR", "CMPL_TYPE", "POLICE_RPT_YN", "PURCH_DT", "ORIG_OWNER_YN",
    "ANTI_BRAKES_YN", "CRUISE_CONT_YN", "NUM_CYLS", "DRIVE_TRAIN", "FUEL_SYS", "FUEL_TYPE",
    "TRANS_TYPE", "VEH_SPEED", "DOT", "TIRE_SIZE", "LOC_OF_TIRE", "TIRE_FAIL_TYPE",
    "ORIG_EQUIP_YN", "MANUF_DT", "SEAT_TYPE", "RESTRAINT_TYPE", "DEALER_NAME", "DEALER_TEL",
    "DEALER_CITY", "DEALER_STATE", "DEALER_ZIP", "PROD_TYPE", "REPAIRED_YN", "MEDICAL_ATTN",
    "VEHICLES_TOWED_YN",
)  # fmt: skip
# The 2026 file has 51 fields: the two newest, as CMPL.txt names them (reference §5).
CMPL_FIELDS_51 = (*CMPL_FIELDS_49, "STATE_OF_INCIDENT", "VEHICLE_OPERATOR")

RCL_FIELDS = (
    "RECORD_ID", "CAMPNO", "MAKETXT", "MODELTXT", "YEARTXT", "MFGCAMPNO", "COMPNAME", "MFGNAME",
    "BGMAN", "ENDMAN", "RCLTYPECD", "POTAFF", "ODATE", "INFLUENCED_BY", "MFGTXT", "RCDATE",
    "DATEA", "RPNO", "FMVSS", "DESC_DEFECT", "CONEQUENCE_DEFECT", "CORRECTIVE_ACTION", "NOTES",
    "RCL_CMPT_ID", "MFR_COMP_NAME", "MFR_COMP_DESC", "MFR_COMP_PTNO", "DO_NOT_DRIVE",
    "PARK_OUTSIDE",
)  # fmt: skip

INV_FIELDS = (
    "NHTSA ACTION NUMBER", "MAKE", "MODEL", "YEAR", "COMPNAME", "MFR_NAME", "ODATE", "CDATE",
    "CAMPNO", "SUBJECT", "SUMMARY",
)  # fmt: skip

# TSBS_RECEIVED_*: names as read by one third-party project (not confirmed against TSBS.txt).
TSBS_FIELDS_14 = (
    "nhtsaID", "replID", "nhtsaDate", "tsbID", "manufacturerDate", "manufacturerID", "type",
    "make", "model", "year", "component", "mfrComponent", "mfrSubcomponent", "summary",
)  # fmt: skip
TSBS_FIELDS_10 = (
    "BULNO", "BULREP", "ID", "BULDTE", "COMPNAME", "MAKE", "MODEL", "YEAR", "DATEA", "SUMMARY",
)  # fmt: skip


@dataclass(frozen=True)
class FieldNames:
    """The names of one layout's fields, and the version of that naming.

    The names become the keys of every stored row, so they are part of a document's bytes.
    A correction (a placeholder given its official name, an unofficial name replaced) bumps
    ``version``: each document's provenance names the layout and version it was read with,
    so the new bytes show up as a layout change, not as unexplained churn."""

    name: str
    version: int
    fields: tuple[str, ...]
    official: bool = True

    @property
    def label(self) -> str:
        return f"{self.name}.v{self.version}"


# Version history: CMPL_51 v1 named fields 50 and 51 FIELD_50 / FIELD_51; v2 gives them the
# names of NHTSA's CMPL.txt. The TSBS names are unofficial (read by one third party).
CMPL_49 = FieldNames("CMPL_49", 1, CMPL_FIELDS_49)
CMPL_51 = FieldNames("CMPL_51", 2, CMPL_FIELDS_51)
RCL_29 = FieldNames("RCL_29", 1, RCL_FIELDS)
INV_11 = FieldNames("INV_11", 1, INV_FIELDS)
TSBS_14 = FieldNames("TSBS_14", 1, TSBS_FIELDS_14, official=False)
TSBS_10 = FieldNames("TSBS_10", 1, TSBS_FIELDS_10, official=False)


@dataclass(frozen=True)
class Layout:
    """One flat file's layouts (by field count), identity, vehicle and date fields."""

    name: str
    kind: str
    layouts: tuple[FieldNames, ...]
    date_fields: frozenset[str]
    make_fields: tuple[str, ...]
    model_fields: tuple[str, ...]
    year_fields: tuple[str, ...]

    @property
    def fields_by_count(self) -> dict[int, tuple[str, ...]]:
        return {len(names.fields): names.fields for names in self.layouts}

    @property
    def doc_kind(self) -> str:
        return DOC_KIND[self.kind]

    @property
    def source_format(self) -> str:
        """The file's format, as scopes name it: ``flat:FLAT_CMPL``."""
        return f"flat:{self.name}"

    def record_format(self, rows: Sequence[dict[str, str]]) -> str:
        """The format a document was read in, with the layout and version of its rows:
        ``flat:FLAT_CMPL/CMPL_51.v2`` (several, joined by ``+``, if its rows differ)."""
        by_count = {len(names.fields): names for names in self.layouts}
        labels = sorted({by_count[len(r)].label for r in rows if len(r) in by_count})
        return f"{self.source_format}/{'+'.join(labels)}" if labels else self.source_format

    def expected_counts(self) -> str:
        return " or ".join(str(n) for n in sorted(self.fields_by_count))


LAYOUTS: dict[str, Layout] = {
    "complaints": Layout(
        name="FLAT_CMPL",
        kind="complaints",
        layouts=(CMPL_49, CMPL_51),
        date_fields=frozenset({"FAILDATE", "DATEA", "LDATE", "PURCH_DT", "MANUF_DT"}),
        make_fields=("MAKETXT",),
        model_fields=("MODELTXT",),
        year_fields=("YEARTXT",),
    ),
    "recalls": Layout(
        name="FLAT_RCL",
        kind="recalls",
        layouts=(RCL_29,),
        date_fields=frozenset({"BGMAN", "ENDMAN", "ODATE", "RCDATE", "DATEA"}),
        make_fields=("MAKETXT",),
        model_fields=("MODELTXT",),
        year_fields=("YEARTXT",),
    ),
    "investigations": Layout(
        name="FLAT_INV",
        kind="investigations",
        layouts=(INV_11,),
        date_fields=frozenset({"ODATE", "CDATE"}),
        make_fields=("MAKE",),
        model_fields=("MODEL",),
        year_fields=("YEAR",),
    ),
    "communications": Layout(
        name="TSBS_RECEIVED",
        kind="communications",
        layouts=(TSBS_14, TSBS_10),
        date_fields=frozenset({"nhtsaDate", "manufacturerDate", "BULDTE", "DATEA"}),
        make_fields=("make", "MAKE"),
        model_fields=("model", "MODEL"),
        year_fields=("year", "YEAR"),
    ),
}


def is_header(layout: Layout, text: str) -> bool:
    first = text.split("\t", 1)[0].strip()
    return any(first == names[0] for names in layout.fields_by_count.values())
