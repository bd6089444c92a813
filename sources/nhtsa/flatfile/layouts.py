"""The layouts of NHTSA's flat files: each file's field names (by field count), identity,
vehicle and date fields."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sources.nhtsa.parse import DOC_KIND

# Each layout below is the field list of NHTSA's own layout file for it (CMPL.txt, RCL.txt,
# INV.txt, TSBS.txt), with the dates its change log gives. Where a copy of it was read:
#
# - RCL.txt, "Last Updated March 23, 2020" (fields 1-27; change log: field 23 added Sept. 14,
#   2007, field 24 March 14, 2008, fields 25-27 March 23, 2020): copies in the public
#   repositories megan-d-perry/vehicle-recall and shrey0809/PrediiLabs (RCL.txt). Fields 28-29
#   (DO_NOT_DRIVE, PARK_OUTSIDE) and their May 2025 start: reference section 5 and 6 and
#   third-party loaders of the 29-field file; the exact day is UNVERIFIED.
# - INV.txt, "Last Updated March 14, 2008" (field 11, SUMMARY, added March 14, 2008), copied
#   in dannguyen/nhtsa-complaint-data create_investigations.sql; a later copy's change log
#   (July 31, 2023) changes only the lengths of fields 10 and 11, not the fields.
# - CMPL.txt: a copy's change log (fields 21-46 added Sept. 14, 2007; field 47 Oct. 15,
#   2007) and field list 1-49 (reference section 2.6); fields 50-51 (STATE_OF_INCIDENT,
#   VEHICLE_OPERATOR) from loaders that parse CMPL.txt (reference section 5). When fields
#   48 (MEDICAL_ATTN) and 49 (VEHICLES_TOWED_YN) were added is UNVERIFIED: the 48-field file
#   is reported before 2015 and the 49-field one from 2021 (reference section 6), and the
#   51-field one since about 2026-04-30.
# - TSBS.txt was not found: both TSBS layouts' names are UNVERIFIED (one third party's).
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
    published: str = ""  # when NHTSA's file had this layout, as its layout file says

    @property
    def label(self) -> str:
        return f"{self.name}.v{self.version}"


# Version history: CMPL_51 v1 named fields 50 and 51 FIELD_50 / FIELD_51; v2 gives them the
# names of NHTSA's CMPL.txt. The TSBS names are unofficial (read by one third party). An
# older layout is the newer one's first fields: each change log adds fields at the end.
CMPL_20 = FieldNames("CMPL_20", 1, CMPL_FIELDS_49[:20], published="until 2007-09-14")
CMPL_46 = FieldNames("CMPL_46", 1, CMPL_FIELDS_49[:46], published="2007-09-14 to 2007-10-15")
CMPL_47 = FieldNames("CMPL_47", 1, CMPL_FIELDS_49[:47], published="from 2007-10-15")
CMPL_48 = FieldNames("CMPL_48", 1, CMPL_FIELDS_49[:48], published="before 2015 (UNVERIFIED)")
CMPL_49 = FieldNames("CMPL_49", 1, CMPL_FIELDS_49, published="from 2021 (UNVERIFIED)")
CMPL_51 = FieldNames("CMPL_51", 2, CMPL_FIELDS_51, published="since about 2026-04-30")
RCL_22 = FieldNames("RCL_22", 1, RCL_FIELDS[:22], published="until 2007-09-14")
RCL_23 = FieldNames("RCL_23", 1, RCL_FIELDS[:23], published="2007-09-14 to 2008-03-14")
RCL_24 = FieldNames("RCL_24", 1, RCL_FIELDS[:24], published="2008-03-14 to 2020-03-23")
RCL_27 = FieldNames("RCL_27", 1, RCL_FIELDS[:27], published="2020-03-23 to May 2025")
RCL_29 = FieldNames("RCL_29", 1, RCL_FIELDS, published="since May 2025")
INV_10 = FieldNames("INV_10", 1, INV_FIELDS[:10], published="until 2008-03-14")
INV_11 = FieldNames("INV_11", 1, INV_FIELDS, published="since 2008-03-14")
TSBS_14 = FieldNames("TSBS_14", 1, TSBS_FIELDS_14, official=False, published="current")
TSBS_10 = FieldNames("TSBS_10", 1, TSBS_FIELDS_10, official=False, published="older")


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
        counts = [str(n) for n in sorted(self.fields_by_count)]
        return counts[0] if len(counts) == 1 else f"{', '.join(counts[:-1])} or {counts[-1]}"

    def by_count(self) -> dict[int, FieldNames]:
        return {len(names.fields): names for names in self.layouts}

    def describe_layouts(self) -> str:
        """The layouts a file of this kind is compared with: ``CMPL_49.v1 (49 fields), ...``."""
        return ", ".join(f"{n.label} ({len(n.fields)} fields)" for n in self.layouts)


LAYOUTS: dict[str, Layout] = {
    "complaints": Layout(
        name="FLAT_CMPL",
        kind="complaints",
        layouts=(CMPL_20, CMPL_46, CMPL_47, CMPL_48, CMPL_49, CMPL_51),
        date_fields=frozenset({"FAILDATE", "DATEA", "LDATE", "PURCH_DT", "MANUF_DT"}),
        make_fields=("MAKETXT",),
        model_fields=("MODELTXT",),
        year_fields=("YEARTXT",),
    ),
    "recalls": Layout(
        name="FLAT_RCL",
        kind="recalls",
        layouts=(RCL_22, RCL_23, RCL_24, RCL_27, RCL_29),
        date_fields=frozenset({"BGMAN", "ENDMAN", "ODATE", "RCDATE", "DATEA"}),
        make_fields=("MAKETXT",),
        model_fields=("MODELTXT",),
        year_fields=("YEARTXT",),
    ),
    "investigations": Layout(
        name="FLAT_INV",
        kind="investigations",
        layouts=(INV_10, INV_11),
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
