import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'

/**
 * The allowed import graph of src/ (docs/design.md, "Layers"). A layer is a folder directly under src/; files
 * directly in src/ (the composition roots: server, app, services, config) form `root`; `generated/contract.ts`
 * (the contract's lists as plain constants) is `contract`, the rest of `generated/` (zod routes, types) `generated`. Transports (http, graphql, stream) meet only in the surface layer (src/surface) and the domain, and
 * never import each other; the domain imports no other layer; the store and the outbound port implement the
 * domain's ports and import nothing of the surfaces.
 */
const ALLOWED: Record<string, readonly string[]> = {
  domain: ['domain', 'contract'],
  store: ['store', 'domain', 'contract'],
  outbound: ['outbound', 'domain'],
  surface: ['surface', 'domain', 'contract', 'generated'],
  http: ['http', 'surface', 'domain', 'contract', 'generated', 'root'],
  graphql: ['graphql', 'surface', 'domain', 'contract', 'generated', 'root'],
  stream: ['stream', 'surface', 'domain', 'contract', 'root'],
  observability: ['observability', 'surface', 'domain', 'root'],
  // `serve` sets up the process's log (observability) before the server, so a failed start is logged too; the
  // conformance identities take their scope families from the contract's lists.
  cli: ['cli', 'domain', 'store', 'observability', 'root', 'contract'],
  root: [
    'root',
    'surface',
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

/** Folders that hold no hand-written source: dependencies, builds, machine output, the client matrix's projects. */
const NOT_SOURCE = new Set(['node_modules', 'dist', 'generated', 'matrix'])

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (NOT_SOURCE.has(entry.name)) return []
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return /\.m?ts$/.test(entry.name) ? [path] : []
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

/** The module a relative specifier names: `./x.js` is the file ./x.ts (or ./x/index.ts), as TypeScript resolves it. */
function resolveImport(from: string, spec: string): string {
  const target = resolve(dirname(from), spec).replace(/\.js$/, '')
  return existsSync(`${target}.ts`) ? `${target}.ts` : join(target, 'index.ts')
}

/**
 * Every import circle among the given files (type-only and dynamic imports count: a circle of types is still two
 * modules that cannot be read apart), each as the files around it, from the one that closes it.
 */
function circles(files: readonly string[]): string[][] {
  const inSet = new Set(files)
  const edges = new Map(
    files.map((file) => [
      file,
      importsOf(readFileSync(file, 'utf8'))
        .map((spec) => resolveImport(file, spec))
        .filter((to) => inSet.has(to)),
    ]),
  )
  const found: string[][] = []
  const state = new Map<string, 'open' | 'done'>()
  const path: string[] = []
  const visit = (file: string): void => {
    state.set(file, 'open')
    path.push(file)
    for (const to of edges.get(file) ?? []) {
      if (state.get(to) === 'open') found.push([...path.slice(path.indexOf(to)), to])
      else if (!state.has(to)) visit(to)
    }
    path.pop()
    state.set(file, 'done')
  }
  for (const file of files) if (!state.has(file)) visit(file)
  return found
}

/**
 * The modules a file loads whenever it is loaded: static value imports and re-exports, relative or bare. Type-only
 * imports (erased) and dynamic `import()` (loaded when that code runs) are left out. A named import whose names are
 * all types still counts: an overcount can only make the test below stricter.
 */
function staticImportsOf(text: string): string[] {
  const found: string[] = []
  for (const m of text.matchAll(/^(?:import|export)\s+(type\s+)?(?:[^'";]*?\bfrom\s*)?['"]([^'"]+)['"]/gm)) {
    if (!m[1] && m[2]) found.push(m[2])
  }
  return found
}

/** The bare packages loaded with `entry`, by the file of src/ that imports each first (breadth first). */
function packagesLoadedWith(entry: string): Map<string, string> {
  const packages = new Map<string, string>()
  const seen = new Set([entry])
  const queue = [entry]
  for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
    for (const spec of staticImportsOf(readFileSync(file, 'utf8'))) {
      if (spec.startsWith('.')) {
        const to = resolveImport(file, spec)
        if (to.startsWith(SRC) && !seen.has(to)) {
          seen.add(to)
          queue.push(to)
        }
      } else if (!spec.startsWith('node:') && !packages.has(spec)) packages.set(spec, relative(ROOT, file))
    }
  }
  return packages
}

/** The feature a file of src/domain/ belongs to (its folder), or null for the shared ground directly in src/domain/. */
function domainFeatureOf(file: string): string | null {
  const rel = relative(join(SRC, 'domain'), file).split('/')
  return rel.length > 1 && rel[0] !== '..' ? (rel[0] ?? null) : null
}

/**
 * Where a file names the whole `Services` (the service locator) rather than a `Pick` of it or one member's type:
 * only the composition roots (files directly in src/) may; every transport, route and middleware takes its ports.
 */
function wholeServices(text: string): number[] {
  const lines: number[] = []
  text.split('\n').forEach((line, i) => {
    if (/^\s*import\b/.test(line)) return
    for (const m of line.matchAll(/\bServices\b/g)) {
      const before = line.slice(0, m.index).trimEnd()
      const after = line.slice(m.index + m[0].length)
      // `Pick<Services, …>` (also when the type arguments wrap onto the next line) and `Services['member']` are narrow.
      if (/Pick<$/.test(before) || (before === '' && /^,\s*$/.test(after)) || after.startsWith('[')) continue
      lines.push(i + 1)
    }
  })
  return lines.filter((n, i, all) => all.indexOf(n) === i)
}

/** Lines of code only: imports, comment lines and trailing `//` comments say nothing about what a module takes. */
function codeLines(text: string): [number, string][] {
  return text.split('\n').flatMap((line, i): [number, string][] => {
    const code = line.replace(/\s\/\/.*$/, '')
    if (/^\s*(import\b|\*|\/\*|\/\/)/.test(code)) return []
    return [[i + 1, code]]
  })
}

/**
 * Where a file takes a domain service whole (`RunService`: every method, its workers and caches) rather than a
 * `Pick` of the methods it calls. Transports and the surface layer name a service only inside `Pick<…>`.
 */
function wholeDomainServices(text: string): number[] {
  const lines: number[] = []
  for (const [n, line] of codeLines(text)) {
    for (const m of line.matchAll(/\b[A-Z][A-Za-z]*Service\b/g)) {
      const before = line.slice(0, m.index).trimEnd()
      const after = line.slice(m.index + m[0].length)
      if (/Pick<$/.test(before) || (before === '' && /^,\s*$/.test(after))) continue
      lines.push(n)
    }
  }
  return lines.filter((n, i, all) => all.indexOf(n) === i)
}

/** Where a file names the composition root's `Services` at all, even a `Pick` of it (whole services again). */
function anyServices(text: string): number[] {
  return codeLines(text).flatMap(([n, line]) => (/\bServices\b/.test(line) ? [n] : []))
}

/** Files of the given layers under src/. */
function filesOf(...layers: string[]): string[] {
  return sourceFiles(SRC).filter((file) => layers.includes(layerOf(file) ?? ''))
}

describe('the layers of src/', () => {
  it('imports only along the allowed graph', () => {
    expect(violations()).toEqual([])
  })

  it('has no import circle', () => {
    const found = circles(sourceFiles(SRC)).map((circle) =>
      circle.map((file) => relative(ROOT, file)).join(' -> '),
    )
    expect(found).toEqual([])
  })

  it('keeps the shared ground of the domain (files directly in src/domain/) free of imports from a feature', () => {
    const found = sourceFiles(join(SRC, 'domain'))
      .filter((file) => domainFeatureOf(file) === null)
      .flatMap((file) =>
        importsOf(readFileSync(file, 'utf8')).flatMap((spec) => {
          const to = resolveImport(file, spec)
          const feature = to.startsWith(join(SRC, 'domain')) ? domainFeatureOf(to) : null
          return feature ? [`${relative(ROOT, file)} imports ${spec} (${feature})`] : []
        }),
      )
    expect(found).toEqual([])
  })

  it('finds a circle, however long, and tells a circle from a shared import', () => {
    const dir = mkdtempSync(join(tmpdir(), 'layers-'))
    try {
      const write = (name: string, text: string) => writeFileSync(join(dir, name), text)
      write('a.ts', "import { b } from './b.js'\nimport type { D } from './d.js'")
      write('b.ts', "export { c } from './c.js'")
      write('c.ts', "const a = await import('./a.js')")
      write('d.ts', "import { e } from './e.js'")
      write('e.ts', 'export const e = 1')
      const files = ['a.ts', 'b.ts', 'c.ts', 'd.ts', 'e.ts'].map((name) => join(dir, name))
      expect(circles(files).map((c) => c.map((file) => relative(dir, file)))).toEqual([
        ['a.ts', 'b.ts', 'c.ts', 'a.ts'],
      ])
      write('c.ts', 'export const c = 1')
      expect(circles(files)).toEqual([])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('forces no type with a double cast (`as unknown as`) anywhere: a library is used through the types it publishes', () => {
    // Every folder the type-check covers (tsconfig.json's include) but machine output: the suite, the client, the
    // tests and the benchmarks are held to the same strictness as the server.
    const folders = ['src', 'test', 'conformance', 'bench', 'scripts', 'client']
    const found = folders
      .flatMap((f) => sourceFiles(join(ROOT, f)))
      // This file names the cast it looks for.
      .filter((file) => file !== import.meta.filename)
      .flatMap((file) =>
        readFileSync(file, 'utf8')
          .split('\n')
          .flatMap((line, i) => (/\bas unknown as\b/.test(line) ? [`${relative(ROOT, file)}:${i + 1}`] : [])),
      )
    expect(found).toEqual([])
  })

  it('hands the whole Services to no file but the composition roots', () => {
    const found = sourceFiles(SRC)
      .filter((file) => layerOf(file) !== 'root')
      .flatMap((file) =>
        wholeServices(readFileSync(file, 'utf8')).map((line) => `${relative(ROOT, file)}:${line}`),
      )
    expect(found).toEqual([])
  })

  it('gives transports and the surface layer only Picks of domain services', () => {
    const found = filesOf('http', 'graphql', 'stream', 'surface').flatMap((file) =>
      wholeDomainServices(readFileSync(file, 'utf8')).map((line) => `${relative(ROOT, file)}:${line}`),
    )
    expect(found).toEqual([])
  })

  it('gives GraphQL resolvers and the stream their own ports, never Services or a Pick of it', () => {
    const found = filesOf('graphql', 'stream').flatMap((file) =>
      anyServices(readFileSync(file, 'utf8')).map((line) => `${relative(ROOT, file)}:${line}`),
    )
    expect(found).toEqual([])
  })

  it('tells a whole domain service from a Pick of its methods', () => {
    const text = [
      "import type { RunService } from '../domain/runs/service.js'",
      "export type A = { runs: Pick<RunService, 'get'> }",
      'type B = Pick<',
      '  WebhookService,',
      "  'create' | 'list'",
      '>',
      ' * A comment may name RunService.frames.',
      'export function c(runs: RunService) {}',
      "type D = { agents: AgentService } // not Pick<AgentService, 'get'>",
      "export function e(ports: Pick<Services, 'runs'>) {}",
    ].join('\n')
    expect(wholeDomainServices(text)).toEqual([8, 9])
    expect(anyServices(text)).toEqual([10])
  })

  it('tells a whole Services from a Pick of it', () => {
    const text = [
      "import type { Services } from '../services.js'",
      'export function a(services: Pick<Services, "runs">) {}',
      'type B = Pick<',
      '  Services,',
      "  'agents' | 'runs'",
      '>',
      "type C = Services['logger']",
      'export function d(server: Server, services: Services) {}',
      'function e(services: Services | undefined) {}',
    ].join('\n')
    expect(wholeServices(text)).toEqual([8, 9])
  })

  it('loads no store driver with the server: openDb loads the one its URL names, so SQLite never pays for PostgreSQL', () => {
    const packages = packagesLoadedWith(join(SRC, 'server.ts'))
    expect(packages.has('@hono/node-server')).toBe(true)
    expect(packages.has('better-sqlite3')).toBe(false)
    expect(packages.get('postgres')).toBeUndefined()
  })

  it('reads the static imports a module loads, and not the type-only or dynamic ones', () => {
    const text = [
      "import postgres from 'postgres'",
      "import type { Sql } from 'postgres'",
      'import {',
      '  a,',
      '  type B,',
      "} from './a.js'",
      "import './side-effect.js'",
      "export { c } from './c.js'",
      "export type { D } from './d.js'",
      "const e = await import('./e.js')",
    ].join('\n')
    expect(staticImportsOf(text)).toEqual(['postgres', './a.js', './side-effect.js', './c.js'])
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
