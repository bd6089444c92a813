"""The Sanity Studio schema of a corpus's curated documents, as TypeScript.

Editors open published documents in Sanity Studio; without a schema the Studio shows them as
unknown types. The schema is inferred from the curated documents themselves (what the
pipeline actually writes), one ``defineType`` per ``_type``:

- every field with its Sanity type: ``string``, ``text`` (multi-line or long, and every
  field ``studio_labels`` knows as a paragraph), ``url``, ``datetime``, ``date``, ``number``,
  ``boolean``, ``array`` (of the members' types), ``object`` (with its fields) and
  ``reference`` (to the type of the documents it points at, ``weak: true`` where the
  documents carry ``_weak: true``: the Studio warns of a "reference strength mismatch" on
  every reference whose ``_weak`` differs from the schema's ``weak`` [SRC sanity-io/sanity
  form/inputs/ReferenceInput/ReferenceField.tsx, ``weakIs !== weakShouldBe``]);
- titles, descriptions and a list ``preview`` per type from ``studio_labels``;
- one type per ``_type`` across every corpus given: two corpora whose documents share a
  ``_type`` (two NHTSA corpora in one dataset) get one definition covering both, so one
  Studio shows them without a duplicate type name;
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

from pipelines.publish import studio_labels
from pipelines.publish.studio_labels import Preview
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
    weak: set[bool] = field(default_factory=set)


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
        spec.weak.add(value.get("_weak") is True)
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


@dataclass(frozen=True)
class _Labels:
    """Where a field's curated title comes from: its source and its name there."""

    source: str | None = None
    source_name: Mapping[str, str] = field(default_factory=dict)  # field -> source field
    nested_in: str | None = None


def _definition(
    spec: FieldSpec, *, read_only: bool, member: bool = False, labels: _Labels = _Labels()
) -> dict[str, Any]:
    kind = _kind(spec)
    source_field = labels.source_name.get(spec.name, spec.name)
    curated = studio_labels.label(labels.source, source_field, nested_in=labels.nested_in)
    if kind in _WIDENING[0][1] and studio_labels.is_paragraph(labels.source, source_field):
        kind = "text" if labels.nested_in is None else kind
    title = curated[0] if curated else _title(spec.name)
    out: dict[str, Any] = {"name": spec.name, "title": title, "type": kind}
    if curated and curated[1]:
        out["description"] = curated[1]
    if read_only and not member:
        out["readOnly"] = True
    if kind == "object":
        inner = _Labels(labels.source, nested_in=spec.name if labels.nested_in is None else "-")
        out["fields"] = [
            _definition(spec.fields[name], read_only=False, labels=inner)
            for name in sorted(spec.fields)
        ]
    elif kind == "reference":
        out["to"] = [{"type": target} for target in sorted(spec.ref_to)] or [{"type": "document"}]
        if len(spec.weak) > 1:
            raise PublishError(
                f"field {spec.name!r} holds weak and strong references; a Studio reference "
                "field has one strength"
            )
        if spec.weak == {True}:
            out["weak"] = True
    elif kind == "array":
        members = [
            _definition(spec.members[k], read_only=False, member=True) for k in sorted(spec.members)
        ]
        for item in members:
            if item["type"] not in ("object",):
                item.pop("name"), item.pop("title"), item.pop("description", None)
        out["of"] = members or [{"type": "string"}]
    return out


@dataclass(frozen=True)
class StudioType:
    """One curated ``_type``: its name and its field definitions (Sanity schema objects)."""

    name: str
    fields: list[dict[str, Any]]
    documents: int
    preview: Preview | None = None
    corpora: tuple[str, ...] = ()


def _source_of(doc: Mapping[str, Any]) -> str | None:
    provenance = doc.get(PROVENANCE)
    doc_id = provenance.get("docId") if isinstance(provenance, dict) else None
    return studio_labels.source_key(doc_id) if isinstance(doc_id, str) else None


def infer_types(
    documents: Iterable[Mapping[str, Any]],
    renamed: Mapping[str, Mapping[str, str]] | None = None,
) -> list[StudioType]:
    """The schema types of curated documents, by ``_type``, fields sorted (provenance last).

    ``renamed``: per ``_type``, source field → field, the manifests' ``[publish.fields]``
    renames, so curated titles and previews follow a renamed field."""
    docs = list(documents)
    sources: dict[str, str | None] = {}
    types_by_id = {str(d["_id"]): str(d["_type"]) for d in docs}
    specs: dict[str, dict[str, FieldSpec]] = {}
    owned: dict[str, set[str]] = {}
    counts: dict[str, int] = {}
    for doc in docs:
        type_name = str(doc["_type"])
        if not _NAME.match(type_name):
            raise PublishError(f"_type {type_name!r} is not a valid Sanity type name")
        counts[type_name] = counts.get(type_name, 0) + 1
        sources.setdefault(type_name, _source_of(doc))
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
        final_name = dict((renamed or {}).get(type_name, {}))
        labels = _Labels(sources[type_name], {v: k for k, v in final_name.items()})
        definitions = []
        ordered = sorted(specs[type_name], key=lambda n: (n == PROVENANCE, n))
        for name in ordered:
            spec = specs[type_name][name]
            if name == PROVENANCE:
                definition = _definition(spec, read_only=True, labels=labels)
                definition["group"] = GROUP
                definition["options"] = {"collapsible": True, "collapsed": True}
            else:
                definition = _definition(
                    spec, read_only=name in owned.get(type_name, set()), labels=labels
                )
            definitions.append(definition)
        shown = studio_labels.preview(sources[type_name], final_name, set(specs[type_name]))
        result.append(StudioType(type_name, definitions, counts[type_name], shown))
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
        f"// Generated by `receipts studio-schema` from {corpus} "
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
        f"{_render_preview(studio_type.preview)}"
        "})\n"
    )


def _render_preview(preview: Preview | None) -> str:
    if preview is None:
        return ""
    select = _literal(preview.select, 2)
    prepare = studio_labels.prepare_source(preview).replace("\n", "\n  ")
    return f"  preview: {{\n    select: {select},\n    {prepare},\n  }},\n"


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
