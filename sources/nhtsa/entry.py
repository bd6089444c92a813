"""NHTSA: the ``[[nhtsa]]`` manifest entry (a make, model and model-year range, the kinds
of records wanted and the filters that decide which belong to the corpus)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, StrictInt, field_validator, model_validator

from sources.base import StrictModel
from sources.http import checked_base_url
from sources.nhtsa.parse import KINDS, RecordFilter

Kind = Literal["recalls", "complaints", "investigations", "communications"]


class NhtsaEntry(StrictModel):
    """One vehicle line of a corpus: ``[[nhtsa]]`` in a manifest."""

    make: str = Field(min_length=1, max_length=60, pattern=r"^[^/:\s][^/:]*$")
    model: str = Field(min_length=1, max_length=60, pattern=r"^[^/:\s][^/:]*$")
    years: tuple[StrictInt, StrictInt] = Field(description="first and last model year, inclusive")
    kinds: tuple[Kind, ...] = ("recalls", "complaints", "investigations", "communications")
    components: tuple[str, ...] = ()
    text: str | None = None
    base_url: str | None = None
    concurrency: StrictInt = Field(default=4, ge=1, le=8)
    # Curation metadata carried onto every curated document of the entry.
    authority_domains: tuple[str, ...] = ()
    authority_rank: StrictInt | None = Field(default=None, ge=0, le=100)
    license: str | None = None

    @field_validator("years")
    @classmethod
    def _year_range(cls, value: tuple[int, int]) -> tuple[int, int]:
        first, last = value
        if not (1949 <= first <= last <= 2100):
            raise ValueError("must be [first, last] model years, 1949 ≤ first ≤ last ≤ 2100")
        if last - first >= 60:
            raise ValueError("spans more than 60 model years")
        return value

    @field_validator("kinds")
    @classmethod
    def _kinds_unique(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError(f"name at least one of: {', '.join(KINDS)}")
        if len(set(value)) != len(value):
            raise ValueError("lists a kind twice")
        return value

    _base_url = field_validator("base_url")(checked_base_url)

    @field_validator("text")
    @classmethod
    def _text_is_a_regex(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"not a valid regular expression: {exc}") from None
        return value

    @model_validator(mode="after")
    def _components_not_blank(self) -> NhtsaEntry:
        if any(not c.strip() for c in self.components):
            raise ValueError("components: an empty substring would match every record")
        return self

    @property
    def vehicle(self) -> str:
        return f"{self.make.strip().upper()}/{self.model.strip().upper()}"

    @property
    def year_range(self) -> range:
        return range(self.years[0], self.years[1] + 1)

    def scope(self, kind: str) -> str:
        return f"nhtsa:{self.vehicle}/{self.years[0]}-{self.years[1]}:{kind}"

    def record_filter(self) -> RecordFilter:
        pattern = re.compile(self.text, re.IGNORECASE) if self.text else None
        return RecordFilter(tuple(self.components), pattern)
