"""Manifests: the closed-world declaration of one corpus (``manifests/*.toml``).

A manifest has a ``[corpus]`` table (``name``, ``namespace``) and one array of tables per
source (``[[nhtsa]]``, ``[[github]]``, ``[[forem]]``, ...), each entry validated by its
source's strict model. Nothing outside the manifest is ingested or published. The valid
tables are those of the sources registered when the manifest is read (``sources.registry``).

An optional ``[publish]`` table says how the corpus is published: Sanity type renames
(``[publish.types]``), field renames per type as the source names it
(``[publish.fields.<type>]``), and the size and concurrency of transactions.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator
from pydantic_core import ErrorDetails

from pipelines.observe.events import EVENTS
from pipelines.visible import hidden_character, visible_cell
from sources import registry
from sources.base import StrictModel
from warehouse.errors import ManifestError
from warehouse.ids import namespace_problem


def control_character(value: str) -> str | None:
    """The first control character in ``value`` (as ``U+XXXX``), or None."""
    for char in value:
        if unicodedata.category(char) == "Cc":
            return f"U+{ord(char):04X}"
    return None


class Corpus(StrictModel):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,62}$")
    namespace: str
    description: str | None = None

    @field_validator("namespace")
    @classmethod
    def _namespace_is_a_sanity_prefix(cls, value: str) -> str:
        problem = namespace_problem(value)
        if problem:
            raise ValueError(f"namespace {problem}")
        if "." in value:
            # "a.b" would sit inside the namespace "a": each corpus's prune would see the
            # other's documents as its own orphans.
            raise ValueError(
                f"namespace {value!r} must be a single id segment (no '.'); every _id is "
                f"<namespace>.<kind>.<key>, and a dotted namespace sits inside another's"
            )
        return value

    @field_validator("description")
    @classmethod
    def _no_control_characters(cls, value: str | None) -> str | None:
        found = None if value is None else control_character(value)
        if found:
            raise ValueError(f"contains the control character {found}")
        return value


_SANITY_NAME = r"^[A-Za-z][A-Za-z0-9_]*$"
RESERVED_FIELDS = frozenset({"provenance"})


class Publish(StrictModel):
    """``[publish]``: how curated documents are shaped and sent."""

    # source type → type in the target's schema, e.g. safetyRecord = "tsb"
    types: dict[str, str] = Field(default_factory=dict)
    # source type → {source field → field in the target's schema}
    fields: dict[str, dict[str, str]] = Field(default_factory=dict)
    batch_bytes: int = Field(default=250_000, ge=1_000, le=4_000_000)
    batch_mutations: int | None = Field(default=None, ge=1)
    concurrency: int = Field(default=4, ge=1, le=32)
    # a document over Sanity's request limit: published without its largest fields, or not
    # at all (pipelines.publish.oversize)
    oversize: Literal["omit-text", "skip"] = "omit-text"

    @field_validator("types")
    @classmethod
    def _types_are_names(cls, value: dict[str, str]) -> dict[str, str]:
        for source_type, target_type in value.items():
            if not re.match(_SANITY_NAME, target_type):
                raise ValueError(
                    f"type {source_type!r} renamed to {target_type!r}: a type name is a letter "
                    "followed by letters, digits or '_'"
                )
        return value

    @field_validator("types", "fields")
    @classmethod
    def _keys_are_printable(cls, value: dict[str, Any]) -> dict[str, Any]:
        for key, inner in value.items():
            for name in (key, *(inner if isinstance(inner, dict) else ())):
                found = control_character(name)
                if found:
                    raise ValueError(f"the name {name!r} contains the control character {found}")
        return value

    @field_validator("fields")
    @classmethod
    def _fields_are_names(cls, value: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
        for source_type, renames in value.items():
            for old, new in renames.items():
                if not re.match(_SANITY_NAME, new) or new in RESERVED_FIELDS:
                    raise ValueError(
                        f"field {source_type}.{old} renamed to {new!r}: a field name is a letter "
                        "followed by letters, digits or '_', and not "
                        + ", ".join(sorted(RESERVED_FIELDS))
                    )
            targets = list(renames.values())
            clash = sorted({t for t in targets if targets.count(t) > 1})
            if clash:
                raise ValueError(f"fields of {source_type} renamed to the same name: {clash}")
        return value


class ClaimsTable(StrictModel):
    """``[claims]``: the cited quotes to re-check, from a file (NDJSON or CSV, relative to
    the manifest) or from the Sanity dataset with a GROQ query; ``fields`` maps each claim
    field (``claim_id``, ``doc_id``, ``quote``, ``revision``, ``content_hash``, and for GROQ
    ``document``: a published ``_id`` or reference) to the name the rows use."""

    file: str | None = None
    groq: str | None = None
    fields: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_source(self) -> ClaimsTable:
        if (self.file is None) == (self.groq is None):
            raise ValueError("give exactly one of 'file' and 'groq'")
        known = ("claim_id", "doc_id", "quote", "revision", "content_hash", "document")
        unknown = sorted(set(self.fields) - set(known))
        if unknown:
            raise ValueError(f"unknown claim fields {unknown}; valid: {', '.join(known)}")
        return self


class NotifyTable(StrictModel):
    """``[notify]``: Apprise URLs to send one message per run to, and the events that send
    it (all of them when ``events`` is not given)."""

    urls: list[str] = Field(default_factory=list)
    events: list[str] | None = None

    @field_validator("urls")
    @classmethod
    def _urls_have_a_scheme(cls, value: list[str]) -> list[str]:
        for number, url in enumerate(value, 1):
            if "://" not in url:
                # The URL itself is never repeated: it may hold a token.
                raise ValueError(f"url {number} is not a URL (SCHEME://...)")
        return value

    @field_validator("events")
    @classmethod
    def _known_events(cls, value: list[str] | None) -> list[str] | None:
        unknown = sorted(set(value or ()) - set(EVENTS))
        if unknown:
            raise ValueError(f"unknown events {unknown}; valid: {', '.join(EVENTS)}")
        return value


@dataclass(frozen=True)
class Manifest:
    path: Path
    corpus: Corpus
    entries: dict[str, list[Any]]
    content_hash: str
    publish: Publish = field(default_factory=Publish)
    claims: ClaimsTable | None = None
    notify: NotifyTable | None = None

    @property
    def name(self) -> str:
        return self.corpus.name

    def sources(self) -> list[str]:
        return [name for name, items in self.entries.items() if items]


def _entry_label(source: str, index: int, raw: dict[str, Any]) -> str:
    hint = next(
        (
            visible_cell(str(raw[k]))
            for k in ("name", "repo", "url", "username", "make", "id")
            if k in raw
        ),
        None,
    )
    text = f"[[{source}]] entry {index + 1}"
    return f"{text} ({hint})" if hint else text


def _hidden_in(value: Any, loc: str = "") -> tuple[str, str] | None:
    """(where, which) of the first invisible or direction character (zero-width space,
    bidi override, ...) in a TOML value, keys included: ``where`` is the field's dotted path.
    Control characters are left to the models (``sources.base.StrictModel``)."""
    if isinstance(value, str):
        found = hidden_character(value, controls=False)
        return None if found is None else (loc or "(entry)", found)
    items: list[tuple[str, Any]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            inner = f"{loc}.{key}" if loc else str(key)
            key_found = _hidden_in(str(key), visible_cell(inner))
            if key_found is not None:
                return key_found
            items.append((inner, item))
    elif isinstance(value, list):
        items = [(f"{loc}.{i}" if loc else str(i), item) for i, item in enumerate(value)]
    for inner, item in items:
        found_in = _hidden_in(item, inner)
        if found_in is not None:
            return found_in
    return None


def _refuse_hidden(path: Path | str, label: str, raw: Any) -> None:
    """A manifest value holding a character that changes how text reads without showing
    (a right-to-left override in a make, a zero-width space in a licence) is refused."""
    found = _hidden_in(raw)
    if found is not None:
        where, which = found
        raise ManifestError(
            f"{path}: {label}, field '{visible_cell(where)}': contains the invisible or "
            f"direction character {which}; type the value without it"
        )


def _field_names(model: type[BaseModel]) -> list[str]:
    return sorted(model.model_fields)


def _model_at(model: type[BaseModel], loc: tuple[int | str, ...]) -> type[BaseModel]:
    """The (nested) model that holds the field at ``loc``, e.g. ``files.0.path``."""
    for part in loc:
        field = model.model_fields.get(part) if isinstance(part, str) else None
        if field is None:
            continue
        nested = [
            arg
            for arg in (field.annotation, *get_args(field.annotation))
            if isinstance(arg, type) and issubclass(arg, BaseModel)
        ]
        if not nested:
            break
        model = nested[0]
    return model


def _explain(error: ErrorDetails, model: type[StrictModel]) -> str:
    """``field 'x': message`` for the first validation error, with the valid choices."""
    loc = ".".join(str(part) for part in error["loc"]) or "(entry)"
    message = error["msg"]
    if error["type"] == "extra_forbidden":
        holder = _model_at(model, tuple(error["loc"][:-1]))
        message = f"unknown field; valid fields: {', '.join(_field_names(holder))}"
    elif error["type"] == "missing":
        message = "required field is missing"
    return f"field '{loc}': {message}"


M = TypeVar("M", bound=StrictModel)


def _optional_table(path: Path | str, data: dict[str, Any], name: str, model: type[M]) -> M | None:
    """The ``[name]`` table of a manifest validated as ``model``, or None when absent."""
    if name not in data:
        return None
    if not isinstance(data[name], dict):
        raise ManifestError(f"{path}: [{name}] must be a table")
    try:
        return model.model_validate(data[name])
    except ValidationError as exc:
        raise ManifestError(f"{path}: [{name}], {_explain(exc.errors()[0], model)}") from None


def parse_manifest(text: str, path: Path) -> Manifest:
    """Validate manifest text; raise :class:`ManifestError` naming file, entry and field."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError(f"{path}: not valid TOML: {exc}") from None

    sources = dict(registry.SOURCES)
    valid_tables = ["corpus", "publish", *sources, "claims", "notify"]
    for key, value in data.items():
        if key not in valid_tables:
            raise ManifestError(
                f"{path}: unknown table [{key}]; valid tables: {', '.join(valid_tables)}"
            )
        if key not in ("corpus", "publish", "claims", "notify") and not (
            isinstance(value, list) and all(isinstance(v, dict) for v in value)
        ):
            raise ManifestError(f"{path}: [[{key}]] must be an array of tables")
    if not isinstance(data.get("corpus"), dict):
        raise ManifestError(f"{path}: missing [corpus] table with 'name' and 'namespace'")
    for key, value in data.items():
        if key in sources:
            for index, raw in enumerate(value):
                _refuse_hidden(path, _entry_label(key, index, raw), raw)
        else:
            _refuse_hidden(path, f"[{key}]", value)

    try:
        corpus = Corpus.model_validate(data["corpus"])
    except ValidationError as exc:
        raise ManifestError(f"{path}: [corpus], {_explain(exc.errors()[0], Corpus)}") from None

    publish = _optional_table(path, data, "publish", Publish) or Publish()
    claims = _optional_table(path, data, "claims", ClaimsTable)
    notify = _optional_table(path, data, "notify", NotifyTable)

    entries: dict[str, list[Any]] = {}
    for source, spec in sources.items():
        parsed = []
        for index, raw in enumerate(data.get(source, [])):
            try:
                parsed.append(spec.entry_model.model_validate(raw))
            except ValidationError as exc:
                explained = _explain(exc.errors()[0], spec.entry_model)
                raise ManifestError(
                    f"{path}: {_entry_label(source, index, raw)}, {explained}"
                ) from None
        entries[source] = parsed
    if not any(entries.values()):
        raise ManifestError(
            f"{path}: declares no entries; add at least one of "
            + ", ".join(f"[[{s}]]" for s in sources)
        )
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return Manifest(
        path=path,
        corpus=corpus,
        entries=entries,
        content_hash=digest,
        publish=publish,
        claims=claims,
        notify=notify,
    )


def load_manifest(path: str | Path) -> Manifest:
    path = Path(path)
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        raise ManifestError(f"{path}: no such manifest") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError(f"{path}: cannot read: {exc}") from None
    try:
        return parse_manifest(text, path)
    except RecursionError:  # tomllib (or validation) recursing through a very deep value
        raise ManifestError(
            f"{path}: nested too deeply to read (arrays or tables thousands of levels deep)"
        ) from None
