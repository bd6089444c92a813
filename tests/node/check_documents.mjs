// Checks documents against a compiled Studio schema the way the Studio reads them, and
// prints each document's list preview. Imported by check_schema.mjs.
//
// The rules, each from Sanity's Studio:
// - a stored key the type does not declare is an "Unknown field found" in the form;
// - a value whose JSON type differs from the field's is an invalid value;
// - an array item that is a plain object (no _type) belongs to the array's only member type,
//   otherwise to the member named by its _type [SRC sanity-io/sanity getItemType: resolveTypeName
//   gives 'object' for a value without _type, and `of.length === 1` picks the only member];
//   object items need a _key (the Studio offers to "add missing keys");
// - a reference whose _weak differs from the field's `weak` shows "Reference strength
//   mismatch" [SRC sanity-io/sanity ReferenceField.tsx: `value._weak ? 'weak' : 'strong'`
//   against `schemaType.weak === true`]; its target's _type must be one of `to`;
// - url, date and datetime values parse as such (the types' default validation).
// Previews: each `select` path is split on dots and followed through references, as the
// Studio does [SRC sanity-io/sanity core/preview/utils/getPreviewPaths.ts], then `prepare`.

const SYSTEM = new Set(['_id', '_type', '_rev', '_createdAt', '_updatedAt'])

function baseName(type) {
  let t = type
  while (t) {
    if (['url', 'date', 'datetime', 'string', 'text', 'reference'].includes(t.name)) return t.name
    t = t.type
  }
  return undefined
}

function jsonTypeOf(value) {
  if (Array.isArray(value)) return 'array'
  if (value === null) return 'null'
  return typeof value
}

function checkValue(type, value, path, docs, problems) {
  const want = type.jsonType
  const got = jsonTypeOf(value)
  if (got !== want) {
    problems.push({path, message: `${got} value where the schema has ${type.name} (${want})`})
    return
  }
  const base = baseName(type)
  if (base === 'reference') {
    if (typeof value._ref !== 'string') problems.push({path, message: 'reference without _ref'})
    const weakIs = value._weak ? 'weak' : 'strong'
    const weakShouldBe = type.weak === true ? 'weak' : 'strong'
    if (weakIs !== weakShouldBe)
      problems.push({path, message: `reference is ${weakIs}, the schema says ${weakShouldBe}`})
    const target = docs.get(value._ref)
    const allowed = (type.to || []).map((t) => t.name)
    if (target && !allowed.includes(target._type))
      problems.push({path, message: `reference to a ${target._type}, allowed: ${allowed}`})
    return
  }
  if (want === 'string') {
    if (base === 'url' && !/^https?:\/\/\S+$/.test(value))
      problems.push({path, message: `not a URL: ${value.slice(0, 40)}`})
    if (base === 'date' && !/^\d{4}-\d{2}-\d{2}$/.test(value))
      problems.push({path, message: `not a date: ${value.slice(0, 40)}`})
    if (base === 'datetime' && Number.isNaN(Date.parse(value)))
      problems.push({path, message: `not a datetime: ${value.slice(0, 40)}`})
    return
  }
  if (want === 'array') {
    value.forEach((item, index) => {
      const at = `${path}[${index}]`
      let member
      if (jsonTypeOf(item) === 'object') {
        const name = item._type ?? 'object'
        member =
          name === 'object' && type.of.length === 1
            ? type.of[0]
            : type.of.find((m) => m.name === name)
        if (typeof item._key !== 'string') problems.push({path: at, message: 'item without _key'})
      } else {
        member = type.of.find((m) => m.jsonType === jsonTypeOf(item))
      }
      if (!member) problems.push({path: at, message: `no member type of the array fits`})
      else checkValue(member, item, at, docs, problems)
    })
    return
  }
  if (want === 'object') {
    const fields = new Map((type.fields || []).map((f) => [f.name, f.type]))
    for (const [key, inner] of Object.entries(value)) {
      if (key.startsWith('_')) continue
      const at = path ? `${path}.${key}` : key
      if (!fields.has(key)) problems.push({path: at, message: 'Unknown field found'})
      else if (inner !== null && inner !== undefined)
        checkValue(fields.get(key), inner, at, docs, problems)
    }
  }
}

function select(doc, path, docs) {
  let value = doc
  for (const segment of path.split('.')) {
    if (value && typeof value._ref === 'string') value = docs.get(value._ref)
    if (value === undefined || value === null) return undefined
    value = value[segment]
  }
  return value
}

export function checkDocuments(schema, rawTypes, documents) {
  const docs = new Map(documents.map((d) => [d._id, d]))
  const raw = new Map(rawTypes.map((t) => [t.name, t]))
  const out = []
  for (const doc of documents) {
    const type = schema.get(doc._type)
    const problems = []
    if (!type) problems.push({path: '_type', message: `no schema type ${doc._type}`})
    else {
      const body = Object.fromEntries(Object.entries(doc).filter(([k]) => !SYSTEM.has(k)))
      checkValue(type, body, '', docs, problems)
    }
    for (const problem of problems) out.push({document: doc._id, ...problem})
    const preview = raw.get(doc._type)?.preview
    const selection = {}
    for (const [key, path] of Object.entries(preview?.select ?? {title: 'title'}))
      selection[key] = select(doc, path, docs)
    const shown = preview?.prepare ? preview.prepare(selection) : selection
    out.push({preview: {id: doc._id, type: doc._type, title: shown.title, subtitle: shown.subtitle}})
  }
  return out
}
