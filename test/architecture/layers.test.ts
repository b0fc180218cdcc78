import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'

/**
 * The allowed import graph of src/ (docs/design.md, "Layers"). A layer is a folder directly under src/; files
 * directly in src/ (the composition roots: server, app, services, config) form `root`; `generated/contract.ts`
 * (the contract's lists as plain constants) is `contract`, the rest of `generated/` (zod routes, types) `generated`. Transports (http, graphql, stream) meet only in the surface layer (api) and the domain, and
 * never import each other; the domain imports no other layer; the store and the outbound port implement the
 * domain's ports and import nothing of the surfaces.
 */
const ALLOWED: Record<string, readonly string[]> = {
  domain: ['domain', 'contract'],
  store: ['store', 'domain', 'contract'],
  outbound: ['outbound', 'domain'],
  api: ['api', 'domain', 'contract', 'generated'],
  http: ['http', 'api', 'domain', 'contract', 'generated', 'root'],
  graphql: ['graphql', 'api', 'domain', 'contract', 'generated', 'root'],
  stream: ['stream', 'api', 'domain', 'contract', 'root'],
  observability: ['observability', 'api', 'domain', 'root'],
  cli: ['cli', 'domain', 'store', 'root'],
  root: [
    'root',
    'api',
    'domain',
    'store',
    'outbound',
    'observability',
    'http',
    'graphql',
    'stream',
    'contract',
    'generated',
  ],
}

const ROOT = resolve(import.meta.dirname, '../..')
const SRC = join(ROOT, 'src')

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return entry.name.endsWith('.ts') ? [path] : []
  })
}

/** The layer a file of the repository belongs to, or null outside src/ and generated/. */
function layerOf(file: string): string | null {
  const rel = relative(ROOT, file).split('/')
  if (rel[0] === 'generated') return rel[1]?.replace(/\.[jt]s$/, '') === 'contract' ? 'contract' : 'generated'
  if (rel[0] !== 'src') return null
  return rel.length === 2 ? 'root' : (rel[1] ?? null)
}

/** Relative module specifiers of static imports, re-exports and dynamic imports (type-only ones too). */
function importsOf(text: string): string[] {
  const found: string[] = []
  for (const m of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)['"](\.{1,2}\/[^'"]+)['"]/gm)) {
    if (m[1]) found.push(m[1])
  }
  return found
}

function violations(): string[] {
  const out: string[] = []
  for (const file of sourceFiles(SRC)) {
    const from = layerOf(file)
    if (!from) continue
    const allowed = ALLOWED[from]
    if (!allowed) {
      out.push(`${relative(ROOT, file)}: the layer "${from}" is not in the allowed graph`)
      continue
    }
    for (const spec of importsOf(readFileSync(file, 'utf8'))) {
      const to = layerOf(resolve(dirname(file), spec))
      if (to && !allowed.includes(to)) out.push(`${relative(ROOT, file)} (${from}) imports ${spec} (${to})`)
    }
  }
  return out
}

describe('the layers of src/', () => {
  it('imports only along the allowed graph', () => {
    expect(violations()).toEqual([])
  })

  it('reads every import form, so a forbidden import cannot hide', () => {
    const text = [
      "import { a } from '../http/app.js'",
      "import type { B } from '../stream/hub.js'",
      "export { c } from '../graphql/http.js'",
      "import '../store/db.js'",
      "const d = await import('../http/json.js')",
      "import { e } from 'hono'",
    ].join('\n')
    expect(importsOf(text)).toEqual([
      '../http/app.js',
      '../stream/hub.js',
      '../graphql/http.js',
      '../store/db.js',
      '../http/json.js',
    ])
  })
})
