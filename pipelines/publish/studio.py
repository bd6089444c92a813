"""The Sanity Studio schema of a corpus's curated documents, as TypeScript.

Editors open published documents in Sanity Studio; without a schema the Studio shows them as
unknown types. The schema is inferred from the curated documents themselves (what the
pipeline actually writes), one ``defineType`` per ``_type``:

- every field with its Sanity type: ``string``, ``text`` (multi-line or long), ``url``,
  ``datetime``, ``date``, ``number``, ``boolean``, ``array`` (of the members' types),
  ``object`` (with its fields) and ``reference`` (to the type of the documents it points at);
- fields the pipeline owns (``provenance.ownedFields``) are ``readOnly``: an edit would be
  reported as target drift and overwritten when upstream changes;
- ``provenance`` sits in its own group, collapsed;
- fields an editor adds belong in ``<type>.editor.ts``, which is written once and never
  overwritten; the generated file spreads them after the pipeline's fields.

Pure: documents in, file texts out. Deterministic for the same documents.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from warehouse.errors import PublishError

_URL = re.compile(r"https?://\S+", re.ASCII)
_DATETIME = re.compile(
    r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?", re.ASCII
)
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
TEXT_LENGTH = 200
PROVENANCE = "provenance"
GROUP = "provenance"


@dataclass
class FieldSpec:
    """What the values seen under one name say about its Sanity type."""

    name: str
    kinds: set[str] = field(default_factory=set)
    # object members: name -> spec; array members: kind -> spec (or reference targets)
    fields: dict[str, FieldSpec] = field(default_factory=dict)
    members: dict[str, FieldSpec] = field(default_factory=dict)
    ref_to: set[str] = field(default_factory=set)


def _string_kind(value: str) -> str:
    if _URL.fullmatch(value):
        return "url"
    if _DATETIME.fullmatch(value):
        return "datetime"
    if _DATE.fullmatch(value):
        return "date"
    if "\n" in value or len(value) > TEXT_LENGTH:
        return "text"
    return "string"


def _observe(spec: FieldSpec, value: Any, types_by_id: Mapping[str, str]) -> None:
    if value is None:
        return
    if isinstance(value, bool):
        spec.kinds.add("boolean")
    elif isinstance(value, int | float):
        spec.kinds.add("number")
    elif isinstance(value, str):
        spec.kinds.add(_string_kind(value))
    elif isinstance(value, list):
        spec.kinds.add("array")
        for item in value:
            probe = FieldSpec(spec.name)
            _observe(probe, item, types_by_id)
            for kind in probe.kinds:
                member = spec.members.setdefault(kind, FieldSpec(f"{spec.name}Item"))
                _observe(member, item, types_by_id)
    elif isinstance(value, dict) and "_ref" in value:
        spec.kinds.add("reference")
        target = types_by_id.get(str(value["_ref"]))
        if target is not None:
            spec.ref_to.add(target)
    elif isinstance(value, dict):
        spec.kinds.add("object")
        for key, item in value.items():
            if key.startswith("_"):
                continue
            _observe(spec.fields.setdefault(key, FieldSpec(key)), item, types_by_id)


# When one name holds values of several kinds, the widest that still validates them all.
_WIDENING = [("text", {"string", "text", "url", "datetime", "date"})]


def _kind(spec: FieldSpec) -> str:
    kinds = spec.kinds or {"string"}
    if len(kinds) == 1:
        return next(iter(kinds))
    for wide, covers in _WIDENING:
        if kinds <= covers:
            return wide
    raise PublishError(
        f"field {spec.name!r} holds values of several kinds ({', '.join(sorted(kinds))}); "
        "a Studio field has one type"
    )


def _title(name: str) -> str:
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).replace("_", " ").split()
    text = " ".join(words).lower()
    return text[:1].upper() + text[1:]


def _definition(spec: FieldSpec, *, read_only: bool, member: bool = False) -> dict[str, Any]:
    kind = _kind(spec)
    out: dict[str, Any] = {"name": spec.name, "title": _title(spec.name), "type": kind}
    if read_only and not member:
        out["readOnly"] = True
    if kind == "object":
        out["fields"] = [
            _definition(spec.fields[name], read_only=False) for name in sorted(spec.fields)
        ]
    elif kind == "reference":
        out["to"] = [{"type": target} for target in sorted(spec.ref_to)] or [{"type": "document"}]
    elif kind == "array":
        members = [
            _definition(spec.members[k], read_only=False, member=True) for k in sorted(spec.members)
        ]
        for item in members:
            if item["type"] not in ("object",):
                item.pop("name"), item.pop("title")
        out["of"] = members or [{"type": "string"}]
    return out


@dataclass(frozen=True)
class StudioType:
    """One curated ``_type``: its name and its field definitions (Sanity schema objects)."""

    name: str
    fields: list[dict[str, Any]]
    documents: int


def infer_types(documents: Iterable[Mapping[str, Any]]) -> list[StudioType]:
    """The schema types of curated documents, by ``_type``, fields in first-seen order."""
    docs = list(documents)
    types_by_id = {str(d["_id"]): str(d["_type"]) for d in docs}
    specs: dict[str, dict[str, FieldSpec]] = {}
    owned: dict[str, set[str]] = {}
    counts: dict[str, int] = {}
    for doc in docs:
        type_name = str(doc["_type"])
        if not _NAME.match(type_name):
            raise PublishError(f"_type {type_name!r} is not a valid Sanity type name")
        counts[type_name] = counts.get(type_name, 0) + 1
        fields = specs.setdefault(type_name, {})
        provenance = doc.get(PROVENANCE)
        if isinstance(provenance, dict):
            owned.setdefault(type_name, set()).update(
                str(f) for f in provenance.get("ownedFields") or []
            )
        for key, value in doc.items():
            if key.startswith("_"):
                continue
            _observe(fields.setdefault(key, FieldSpec(key)), value, types_by_id)
    result = []
    for type_name in sorted(specs):
        definitions = []
        ordered = sorted(specs[type_name], key=lambda n: (n == PROVENANCE, n))
        for name in ordered:
            spec = specs[type_name][name]
            if name == PROVENANCE:
                definition = _definition(spec, read_only=True)
                definition["group"] = GROUP
                definition["options"] = {"collapsible": True, "collapsed": True}
            else:
                definition = _definition(spec, read_only=name in owned.get(type_name, set()))
            definitions.append(definition)
        result.append(StudioType(type_name, definitions, counts[type_name]))
    return result


# -- rendering -----------------------------------------------------------------------------
def _literal(value: Any, indent: int) -> str:
    """A JavaScript object literal: JSON with unquoted keys where they are identifiers."""
    pad = "  " * indent
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [
            f"{pad}  {k if _NAME.match(k) else json.dumps(k)}: {_literal(v, indent + 1)},"
            for k, v in value.items()
        ]
        return "{\n" + "\n".join(items) + f"\n{pad}}}"
    if isinstance(value, list):
        if not value:
            return "[]"
        items = [f"{pad}  {_literal(v, indent + 1)}," for v in value]
        return "[\n" + "\n".join(items) + f"\n{pad}]"
    return json.dumps(value, ensure_ascii=False)


def render_type(studio_type: StudioType, corpus: str) -> str:
    name = studio_type.name
    fields = "\n".join(
        f"    defineField({_literal(definition, 2)})," for definition in studio_type.fields
    )
    return (
        f"// Generated by `receipts studio-schema` from corpus {corpus!r} "
        f"({studio_type.documents} documents). Do not edit: regenerate instead.\n"
        "// Fields marked readOnly are written by the pipeline; an edit in the Studio is\n"
        "// reported as target drift and overwritten when the upstream document changes.\n"
        f"// Fields of your own go in ./{name}.editor.ts, which receipts never overwrites.\n"
        "import {defineField, defineType} from 'sanity'\n"
        f"import {{editorFields}} from './{name}.editor'\n"
        "\n"
        f"export const {name} = defineType({{\n"
        f"  name: {json.dumps(name)},\n"
        f"  title: {json.dumps(_title(name))},\n"
        "  type: 'document',\n"
        f"  groups: [{{name: {json.dumps(GROUP)}, title: 'Provenance'}}],\n"
        "  fields: [\n"
        f"{fields}\n"
        "    ...editorFields,\n"
        "  ],\n"
        "})\n"
    )


def render_editor_stub(name: str) -> str:
    return (
        f"// Fields editors add to {name} documents in the Studio. receipts writes this file\n"
        "// once and never overwrites it; the pipeline never writes these fields.\n"
        "import {defineField} from 'sanity'\n"
        "\n"
        "export const editorFields: ReturnType<typeof defineField>[] = [\n"
        "  // defineField({name: 'editorNote', title: 'Editor note', type: 'text'}),\n"
        "]\n"
    )


def render_index(types: list[StudioType]) -> str:
    imports = "".join(f"import {{{t.name}}} from './{t.name}'\n" for t in types)
    listed = ", ".join(t.name for t in types)
    return (
        "// Generated by `receipts studio-schema`. Add these to your Studio config:\n"
        "//   schema: {types: [...schemaTypes, ...yourOwnTypes]}\n"
        f"{imports}\n"
        f"export const schemaTypes = [{listed}]\n"
    )


def schema_files(types: list[StudioType], corpus: str) -> dict[str, str]:
    """File name → text of every generated file (the editor stubs included)."""
    files = {f"{t.name}.ts": render_type(t, corpus) for t in types}
    files.update({f"{t.name}.editor.ts": render_editor_stub(t.name) for t in types})
    files["index.ts"] = render_index(types)
    return files


def is_editor_file(name: str) -> bool:
    return name.endswith(".editor.ts")
