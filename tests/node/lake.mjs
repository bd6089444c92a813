// A fake of the Sanity Content Lake HTTP API whose every query is evaluated by groq-js,
// Sanity's reference GROQ implementation. Tests only.
//
//   node lake.mjs [--port N]     (prints {"port": N} on stdout once it listens)
//
// Built from shared/reference/upstream-apis.md §1:
// - POST /v{version}/data/mutate/{dataset}: create, createIfNotExists, createOrReplace,
//   patch (set, setIfMissing, unset, ifRevisionID) and delete by id, applied atomically per
//   transaction to an in-memory dataset. Every document written gets _rev = the
//   transaction id; a transaction id already used in the dataset is refused (409), as the
//   real service requires ids unique in the dataset. A revision mismatch or an existing id
//   on create is a 409 mutationError; a strong reference to a missing document, or the
//   delete of a referenced one, too.
// - GET|POST /v{version}/data/query/{dataset}: groq-js over the dataset as the perspective
//   sees it (published by default from API version 2025-02-19: no drafts.*, versions.*;
//   raw: everything, versions.* from API version 2025-02-19; drafts: drafts over published;
//   a stack of release names), {ms, query, result}; now() is the lake's clock.
// - GET /v{version}/data/doc/{dataset}/{ids}: {documents, omitted}.
// - Authorization: Bearer <LAKE_TOKEN> on every data request, else a Boom-style 401.
// Faults it can play (POST /__control/fault, each after `after` requests served normally,
// `times` times): answer 429/500 before applying anything ("<endpoint>:before"), commit and
// then drop the connection or answer 503 ("mutate:after"), apply an editor's mutations (each
// its own transaction) just before the next transaction ("mutate:editor", `mutations`), make
// the next transaction also patch another document ("mutate:alongside", `id`, `set`).
// Editors' operations and inspection: /__control/{put,edit,remove,reset,clear,state,requests}.
// Limits (pipelines/publish/targets/sanity_limits.py cites the evidence): a mutate body over
// 4,000,000 bytes is refused before anything is applied, "Request body exceeds limit of
// 4000000 bytes" (the words users report; status 413 and the Boom-style shape are this fake's
// reading, not recorded); a document id over 128 characters is refused (sanity-io/client
// validateDocumentId; sanity-io/sanity#4515); a request URL over 12,288 characters gets 414
// (the backend limit the Studio keeps its ~11 kB chunks under, sanity-io/sanity d64aefd).
// Who wrote what (issue 48, point 6): every transaction is logged with its author, the
// identity of the token that sent it (ours: LAKE_IDENTITY; an editor's: `author` of the
// control call). GET /v{version}/data/history/{dataset}/transactions/{ids} answers the log
// lines of the transactions that wrote any of those documents, as NDJSON
// {id, timestamp, author, documentIDs} [shared/reference/upstream-apis.md §1.8; SRC
// @sanity/types transactionLog.ts]. Fault "mutate:function" plays a Sanity Function (or a
// webhook's handler) reacting to our mutation: once our transaction commits, its
// `mutations` are applied as a transaction of their own, by `author` (a Function writes
// through @sanity/client with a robot token, https://www.sanity.io/docs/functions/
// functions-js-client , https://www.sanity.io/docs/functions/robot-tokens-with-functions),
// so the documents it writes get its transaction id as _rev, never ours.
import {createServer} from 'node:http'
import {evaluate, parse} from 'groq-js'

const TOKEN = process.env.LAKE_TOKEN ?? ''
const PUBLISHED_DEFAULT_FROM = '2025-02-19'
const MAX_BODY_BYTES = 4_000_000
const MAX_ID_CHARS = 128
const MAX_URL_CHARS = 12_288
const IDENTITY = process.env.LAKE_IDENTITY ?? 'pReceiptsRobot'

let documents = new Map()
let transactions = new Set()
let log = []
let requests = []
let faults = []
let txCounter = 0
let clock = Date.parse('2026-11-01T00:00:00Z')

const timestamp = () => new Date((clock += 1000)).toISOString().replace('.000Z', 'Z')
const clone = (value) => structuredClone(value)

class MutationError extends Error {
  constructor(status, description, items) {
    super(description)
    this.status = status
    this.items = items
  }
}

function itemError(index, type, description, extra = {}) {
  return {error: {type, description, ...extra}, index}
}

function* strongRefs(value) {
  if (Array.isArray(value)) {
    for (const item of value) yield* strongRefs(item)
  } else if (value && typeof value === 'object') {
    if (typeof value._ref === 'string' && !value._weak) yield value._ref
    for (const [key, item] of Object.entries(value)) if (key !== '_ref') yield* strongRefs(item)
  }
}

function setPath(doc, path, value) {
  const parts = path.split('.')
  let node = doc
  for (const part of parts.slice(0, -1)) {
    if (typeof node[part] !== 'object' || node[part] === null) node[part] = {}
    node = node[part]
  }
  node[parts.at(-1)] = value
}

function getPath(doc, path) {
  return path.split('.').reduce((node, part) => (node == null ? undefined : node[part]), doc)
}

function unsetPath(doc, path) {
  const parts = path.split('.')
  const parent = getPath(doc, parts.slice(0, -1).join('.')) ?? (parts.length === 1 ? doc : null)
  if (parent && typeof parent === 'object') delete parent[parts.at(-1)]
}

function applyOne(state, mutation, index, tx, now) {
  const [kind, body] = Object.entries(mutation)[0]
  const id = body?._id ?? body?.id
  if (typeof id === 'string' && id.length > MAX_ID_CHARS) {
    const description = `Document ID "${id}" is not valid: longer than ${MAX_ID_CHARS} characters`
    throw new MutationError(400, description, [itemError(index, 'invalidDocumentIdError', description, {id})])
  }
  const write = (doc, operation) => {
    const existing = state.get(doc._id)
    const written = {...doc, _rev: tx, _updatedAt: now, _createdAt: existing?._createdAt ?? now}
    state.set(doc._id, written)
    return {id: doc._id, operation}
  }
  switch (kind) {
    case 'create':
      if (state.has(body._id)) {
        throw new MutationError(409, `Document by ID "${body._id}" already exists`, [
          itemError(index, 'documentAlreadyExistsError', `Document by ID "${body._id}" already exists`, {id: body._id}),
        ])
      }
      return write(clone(body), 'create')
    case 'createIfNotExists':
      if (state.has(body._id)) return {id: body._id, operation: 'none'}
      return write(clone(body), 'create')
    case 'createOrReplace':
      return write(clone(body), state.has(body._id) ? 'update' : 'create')
    case 'delete': {
      if (!state.has(body.id)) return {id: body.id, operation: 'none'}
      state.delete(body.id)
      return {id: body.id, operation: 'delete'}
    }
    case 'patch': {
      const current = state.get(body.id)
      if (!current) {
        throw new MutationError(409, `Document "${body.id}" not found`, [
          itemError(index, 'documentNotFoundError', `Document "${body.id}" not found`, {id: body.id}),
        ])
      }
      if (body.ifRevisionID !== undefined && body.ifRevisionID !== current._rev) {
        const description = `Document "${body.id}" has unexpected revision ID ("${current._rev}"), expected "${body.ifRevisionID}"`
        throw new MutationError(409, description, [
          itemError(index, 'documentRevisionIDDoesNotMatchError', description, {
            currentRevisionID: current._rev,
            expectedRevisionID: body.ifRevisionID,
          }),
        ])
      }
      const doc = clone(current)
      for (const [path, value] of Object.entries(body.setIfMissing ?? {})) {
        if (getPath(doc, path) === undefined) setPath(doc, path, clone(value))
      }
      for (const [path, value] of Object.entries(body.set ?? {})) setPath(doc, path, clone(value))
      for (const path of body.unset ?? []) unsetPath(doc, path)
      return write(doc, 'update')
    }
    default:
      throw new MutationError(400, `unknown mutation ${kind}`, [itemError(index, 'invalidMutation', kind)])
  }
}

function checkReferences(state) {
  for (const doc of state.values()) {
    for (const ref of strongRefs(doc)) {
      if (!state.has(ref)) {
        const description = `Document "${doc._id}" references non-existent document "${ref}"`
        throw new MutationError(409, description, [
          itemError(0, 'documentReferenceMissingError', description, {id: doc._id, ref}),
        ])
      }
    }
  }
}

function apply(mutations, transactionId, alongside = null, author = IDENTITY) {
  const tx = transactionId ?? `tx-${++txCounter}`
  if (transactions.has(tx)) {
    throw new MutationError(409, `The transaction ID "${tx}" is already in use in this dataset`, [
      itemError(0, 'transactionIdAlreadyExistsError', `transaction ${tx} already exists`),
    ])
  }
  const state = new Map([...documents].map(([id, doc]) => [id, clone(doc)]))
  const now = timestamp()
  const results = mutations.map((mutation, index) => applyOne(state, mutation, index, tx, now))
  if (alongside && state.has(alongside.id)) {
    // a server-side side effect in the same transaction: not among the results
    applyOne(state, {patch: {id: alongside.id, set: alongside.set ?? {}}}, results.length, tx, now)
  }
  checkReferences(state)
  documents = state
  transactions.add(tx)
  const written = [...results.map((r) => r.id), ...(alongside && state.has(alongside.id) ? [alongside.id] : [])]
  log.push({id: tx, timestamp: now, author, documentIDs: [...new Set(written)]})
  return {transactionId: tx, results}
}

// Perspectives [DOC https://www.sanity.io/changelog/676aaa9d-2da6-44fb-abe5-580f28047c10,
// https://www.sanity.io/docs/content-lake/perspectives]: raw is every document, but
// versions.* only from API version 2025-02-19 ("versions.** documents are not returned in
// API versions prior to 2025-02-19"); published leaves out drafts, versions and the `_.`
// system documents (release documents need raw or a release stack to be read); drafts lays
// drafts over published; a comma-separated stack of release names (from 2025-02-19; older
// versions answer 400 "Complex perspectives are not supported for this version") lays each
// release's versions over the published documents, the first named on top; a version
// marked for unpublishing (_system.delete) hides its document.
const isSystem = (id) => id.startsWith('_.')
const isVersion = (id) => id.startsWith('versions.')

function visible(perspective, version) {
  const all = [...documents.values()]
  const releasesVisible = version >= PUBLISHED_DEFAULT_FROM
  if (perspective === 'raw') return releasesVisible ? all : all.filter((d) => !isVersion(d._id))
  const published = all.filter((d) => !d._id.startsWith('drafts.') && !isVersion(d._id) && !isSystem(d._id))
  if (perspective === 'published') return published
  const layers = perspective === 'drafts' || perspective === 'previewDrafts' ? ['drafts'] : perspective.split(',')
  if (layers.length > 1 || !['drafts'].includes(layers[0])) {
    if (!releasesVisible) throw new PerspectiveError('Complex perspectives are not supported for this version')
  }
  const byId = new Map(published.map((d) => [d._id, d]))
  for (const layer of [...layers].reverse()) {
    if (layer === 'published') continue
    const prefix = layer === 'drafts' ? 'drafts.' : `versions.${layer}.`
    for (const d of all) {
      if (!d._id.startsWith(prefix)) continue
      const id = d._id.slice(prefix.length)
      if (d._system?.delete === true) byId.delete(id)
      else byId.set(id, {...d, _id: id, _originalId: d._id})
    }
  }
  return [...byId.values()]
}

class PerspectiveError extends Error {}

async function runQuery(query, params, dataset, now = new Date(clock + 1)) {
  const tree = parse(query, {params})
  // now() is the lake's own clock (the one _updatedAt is stamped with): after the last
  // write, before the next
  const value = await evaluate(tree, {dataset, params, timestamp: now})
  return value.get()
}

function send(res, status, body, headers = {}) {
  const text = JSON.stringify(body)
  res.writeHead(status, {'content-type': 'application/json; charset=utf-8', ...headers})
  res.end(text)
}

class BodyTooLarge extends Error {}

async function readBody(req) {
  const chunks = []
  let size = 0
  for await (const chunk of req) {
    size += chunk.length
    chunks.push(chunk)
  }
  if (size > MAX_BODY_BYTES) throw new BodyTooLarge(`Request body exceeds limit of ${MAX_BODY_BYTES} bytes`)
  const text = Buffer.concat(chunks).toString('utf8')
  return text ? JSON.parse(text) : null
}

function takeFault(endpoint) {
  const fault = faults.find((f) => f.endpoint === endpoint && f.times > 0)
  if (!fault) return undefined
  if (fault.after > 0) {
    fault.after -= 1
    return undefined
  }
  fault.times -= 1
  return fault
}

async function control(action, body, res) {
  switch (action) {
    case 'put': {
      const {transactionId} = apply([{createOrReplace: body.document}], body.transactionId, null, body.author ?? 'pEditor')
      return send(res, 200, {rev: transactionId})
    }
    case 'edit': {
      const patch = {patch: {id: body.id, set: body.set ?? {}, unset: body.unset ?? []}}
      const {transactionId} = apply([patch], undefined, null, body.author ?? 'pEditor')
      return send(res, 200, {rev: transactionId})
    }
    case 'remove': {
      const {transactionId} = apply([{delete: {id: body.id}}], undefined, null, body.author ?? 'pEditor')
      return send(res, 200, {rev: transactionId})
    }
    case 'fault':
      faults.push({times: 1, after: 0, ...body})
      return send(res, 200, {faults})
    case 'clear':
      faults = []
      return send(res, 200, {})
    case 'reset':
      documents = new Map()
      transactions = new Set()
      log = []
      requests = []
      faults = []
      return send(res, 200, {})
    case 'state':
      return send(res, 200, {documents: [...documents.values()], transactions: [...transactions]})
    case 'requests':
      return send(res, 200, {requests})
    case 'eval': {
      // groq-js over documents given by the caller (the Python fault-injecting fake).
      try {
        const now = body.now ? new Date(body.now) : undefined
        const result = await runQuery(body.query, body.params ?? {}, body.documents ?? [], now)
        return send(res, 200, {result})
      } catch (err) {
        return send(res, 400, {error: {type: 'queryParseError', description: String(err.message)}})
      }
    }
    default:
      return send(res, 404, {error: `no control action ${action}`})
  }
}

async function handle(req, res) {
  const url = new URL(req.url, 'http://lake')
  if (url.pathname.startsWith('/__control/')) return control(url.pathname.slice(11), (await readBody(req)) ?? {}, res)
  if (req.url.length > MAX_URL_CHARS) {
    requests.push({method: req.method, path: url.pathname, query: url.search, endpoint: 'refused', status: 414})
    return send(res, 414, {statusCode: 414, error: 'URI Too Long', message: 'URI Too Long'})
  }
  let body = null
  try {
    body = req.method === 'POST' ? await readBody(req) : null
  } catch (err) {
    if (!(err instanceof BodyTooLarge)) throw err
    requests.push({method: req.method, path: url.pathname, query: url.search, endpoint: 'refused', status: 413})
    return send(res, 413, {statusCode: 413, error: 'Payload Too Large', message: err.message})
  }

  // API versions: a date, 1, or X (experimental, the newest) [SRC sanity-io/client src/config.ts]
  const match = url.pathname.match(/^\/v(\d{4}-\d{2}-\d{2}|1|X)\/data\/(mutate|query|doc|history)\/([^/]+)(?:\/(.*))?$/)
  if (!match) return send(res, 404, {statusCode: 404, error: 'Not Found', message: 'Not Found'})
  const [, version, endpoint, , rest] = match
  requests.push({method: req.method, path: url.pathname, query: url.search, endpoint, body})
  if (req.headers.authorization !== `Bearer ${TOKEN}`) {
    return send(res, 401, {statusCode: 401, error: 'Unauthorized', message: 'Session not found'})
  }
  const before = takeFault(`${endpoint}:before`)
  if (before) {
    const headers = before.retryAfter ? {'retry-after': String(before.retryAfter)} : {}
    return send(res, before.status, {statusCode: before.status, error: 'Injected', message: 'injected'}, headers)
  }

  if (endpoint === 'mutate') {
    const transactionId = body?.transactionId ?? url.searchParams.get('transactionId') ?? undefined
    const editor = takeFault('mutate:editor')
    for (const mutation of editor?.mutations ?? []) apply([mutation], undefined, null, editor.author ?? 'pEditor')
    let result
    try {
      result = apply(body?.mutations ?? [], transactionId, takeFault('mutate:alongside'))
    } catch (err) {
      if (!(err instanceof MutationError)) throw err
      return send(res, err.status, {error: {type: 'mutationError', description: err.message, items: err.items}})
    }
    const reaction = takeFault('mutate:function')
    try {
      if (reaction) apply(reaction.mutations ?? [], undefined, null, reaction.author ?? 'pFunctionRobot')
    } catch (err) {
      if (!(err instanceof MutationError)) throw err // a failing function leaves our commit be
    }
    const after = takeFault('mutate:after')
    if (after && after.drop) return req.socket.destroy()
    if (after) return send(res, after.status, {statusCode: after.status, error: 'Injected', message: 'injected'})
    return send(res, 200, result)
  }

  if (endpoint === 'query') {
    const query = body?.query ?? url.searchParams.get('query')
    const params = {...(body?.params ?? {})}
    for (const [key, value] of url.searchParams) if (key.startsWith('$')) params[key.slice(1)] = JSON.parse(value)
    const perspective =
      body?.perspective ?? url.searchParams.get('perspective') ?? (version >= PUBLISHED_DEFAULT_FROM ? 'published' : 'raw')
    try {
      const result = await runQuery(query, params, visible(perspective, version))
      return send(res, 200, {ms: 1, query, result})
    } catch (err) {
      if (err instanceof PerspectiveError) {
        return send(res, 400, {statusCode: 400, error: 'Bad Request', message: err.message})
      }
      return send(res, 400, {error: {type: 'queryParseError', description: String(err.message), query}})
    }
  }

  if (endpoint === 'history') {
    const [kind, list] = (rest ?? '').split(/\/(.*)/s)
    if (kind !== 'transactions') return send(res, 404, {statusCode: 404, error: 'Not Found', message: 'Not Found'})
    const wanted = new Set(decodeURIComponent(list ?? '').split(',').filter(Boolean))
    let lines = log.filter((line) => line.documentIDs.some((id) => wanted.has(id)))
    if (url.searchParams.get('reverse') === 'true') lines = lines.reverse()
    const limit = Number(url.searchParams.get('limit') ?? 0)
    if (limit > 0) lines = lines.slice(0, limit)
    res.writeHead(200, {'content-type': 'application/x-ndjson'})
    return res.end(lines.map((line) => JSON.stringify(line) + '\n').join(''))
  }

  const ids = decodeURIComponent(rest ?? '').split(',').filter(Boolean)
  return send(res, 200, {
    documents: ids.filter((id) => documents.has(id)).map((id) => documents.get(id)),
    omitted: ids.filter((id) => !documents.has(id)).map((id) => ({id, reason: 'existence'})),
  })
}

const portArg = process.argv.indexOf('--port')
const port = portArg > 0 ? Number(process.argv[portArg + 1]) : 0
// Node's own header limit (16 kB) would answer 431 first; the fake decides at MAX_URL_CHARS.
const server = createServer({maxHeaderSize: 1 << 20}, (req, res) => {
  handle(req, res).catch((err) => send(res, 500, {statusCode: 500, error: 'Internal', message: String(err)}))
})
server.listen(port, '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({port: server.address().port}) + '\n')
})
process.on('SIGTERM', () => server.close(() => process.exit(0)))
