// Compiles a Studio schema written by `receipts studio-schema` with Sanity's own schema
// package and prints every problem it reports as JSON lines; exits 1 on any error or
// warning. Usage: node check.mjs DIR [NDJSON...]   (DIR holds index.ts)
// With NDJSON files, also checks every document in them against the compiled schema and
// prints its list preview (check_documents.mjs).
import {mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath, pathToFileURL} from 'node:url'
import {build} from 'esbuild'
import {Schema} from '@sanity/schema'
import {groupProblems, validateSchema} from '@sanity/schema/_internal'
import {checkDocuments} from './check_documents.mjs'

const dir = process.argv[2]
const scratch = mkdtempSync(join(tmpdir(), 'studio-schema-'))
const bundle = join(scratch, 'schema.mjs')
try {
  // TypeScript as a Studio compiles it; `sanity` resolves to @sanity/types, which provides
  // the same defineType / defineField.
  await build({
    entryPoints: [join(dir, 'index.ts')],
    bundle: true,
    format: 'esm',
    platform: 'node',
    outfile: bundle,
    alias: {sanity: '@sanity/types'},
    nodePaths: [fileURLToPath(new URL('./node_modules', import.meta.url))],
    logLevel: 'silent',
  })
  const {schemaTypes} = await import(pathToFileURL(bundle).href)
  const problems = groupProblems(validateSchema(schemaTypes).getTypes()).flatMap((group) =>
    group.problems.map((problem) => ({
      path: group.path.map((segment) => segment.name ?? segment.type).join('.'),
      severity: problem.severity,
      message: problem.message,
    })),
  )
  // Compiling is what a Studio does with the types; it throws on what it cannot build.
  const compiled = Schema.compile({name: 'default', types: schemaTypes})
  const names = schemaTypes.map((type) => type.name)
  for (const problem of problems) console.log(JSON.stringify(problem))
  const documents = process.argv
    .slice(3)
    .flatMap((file) => readFileSync(file, 'utf8').split('\n').filter(Boolean).map(JSON.parse))
  const checked = checkDocuments(compiled, schemaTypes, documents)
  for (const line of checked) console.log(JSON.stringify(line))
  const invalid = checked.filter((line) => line.document)
  console.log(JSON.stringify({compiled: names.filter((name) => compiled.get(name))}))
  process.exitCode = problems.length + invalid.length > 0 ? 1 : 0
} finally {
  rmSync(scratch, {recursive: true, force: true})
}
