/**
 * The generator matrix: clients generated from the contract by openapi-typescript (the README's command) +
 * openapi-fetch, @hey-api/openapi-ts, orval, swagger-typescript-api, oazapfts, kubb and openapi-zod-client, each with
 * a smoke program (test/clients/matrix/) that creates a tool and an agent, starts a run with an Idempotency-Key,
 * polls it, pages the trace and handles a 404 and a 409. Every program is typechecked (strict) and then run against
 * one reference server. Generated output is cached in the system's temporary folder under a hash of the contract and
 * package-lock.json, so a second run only typechecks and runs. The shipped client is built the way npm packs it and
 * the README's program runs on plain Node (no tsx) from a consumer project.
 */
import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.js'

const run = promisify(execFile)
const ROOT = resolve(import.meta.dirname, '../..')
const SPEC = join(ROOT, 'openapi/agent-operations.yaml')
const BIN = (name: string) => join(ROOT, 'node_modules/.bin', name)
/**
 * The compiler a consumer's program is checked with: TypeScript 5.9 by its package path, as test/support/consumer-tsc.ts
 * does (node_modules/.bin/tsc may link to it or to typescript-native's tsc, whichever npm linked last).
 */
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc')
const SMOKES = [
  'openapi-fetch',
  'hey-api',
  'orval',
  'swagger-typescript-api',
  'oazapfts',
  'kubb',
  'openapi-zod-client',
] as const
/** What the cacheable generators write into the consumer project (orval bakes the server's port in: not cached). */
const CACHED_OUTPUTS = ['api.d.ts', 'hey', 'sta', 'oazapfts', 'kubb', 'zod/api.ts'] as const
const CACHE = join(
  tmpdir(),
  'agentops-matrix-cache',
  createHash('sha256')
    .update(readFileSync(SPEC))
    .update(readFileSync(join(ROOT, 'package-lock.json')))
    .digest('hex')
    .slice(0, 16),
)

interface SmokeResult {
  status: string
  seqs: number[]
  notFound: string | undefined
  conflict: string | undefined
}

/** The README's client program: the ```ts block under "Generating clients". */
function readmeProgram(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
  const section = readme.slice(readme.indexOf('### Generating clients'))
  const match = /```ts\n([\s\S]*?)```/.exec(section)
  if (!match?.[1]) throw new Error('README has no ts program under "Generating clients"')
  return match[1]
}

/** A consumer project: its node_modules holds the repository's packages and the kit itself, as an install would. */
function project(dir: string): void {
  const modules = join(dir, 'node_modules')
  mkdirSync(modules)
  for (const name of readdirSync(join(ROOT, 'node_modules'))) {
    if (!name.startsWith('.')) symlinkSync(join(ROOT, 'node_modules', name), join(modules, name))
  }
  symlinkSync(ROOT, join(modules, 'agentops-contract-kit'))
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module', private: true }))
  // openapi-zod-client's Zodios client runs on zod 3 and @zodios/core, the generator's own dependencies: its output
  // folder resolves those, the rest of the project the repository's zod 4.
  const zodClient = createRequire(join(ROOT, 'node_modules/openapi-zod-client/package.json'))
  const zodModules = join(dir, 'zod/node_modules')
  mkdirSync(join(zodModules, '@zodios'), { recursive: true })
  symlinkSync(dirname(zodClient.resolve('zod/package.json')), join(zodModules, 'zod'))
  symlinkSync(dirname(zodClient.resolve('@zodios/core/package.json')), join(zodModules, '@zodios/core'))
}

/** kubb's configuration: types and the fetch client, imports ending in .js (NodeNext), no formatter run. */
const KUBB_CONFIG = `import { defineConfig } from '@kubb/core'
import { pluginClient } from '@kubb/plugin-client'
import { pluginOas } from '@kubb/plugin-oas'
import { pluginTs } from '@kubb/plugin-ts'
export default defineConfig({
  root: '.',
  input: { path: ${JSON.stringify(SPEC)} },
  output: { path: './kubb', clean: true, format: false, lint: false, extension: { '.ts': '.js' } },
  plugins: [pluginOas({ validate: false, generators: [] }), pluginTs(), pluginClient({ client: 'fetch' })],
})
`

function copyInto(from: string, to: string): void {
  mkdirSync(dirname(to), { recursive: true })
  cpSync(from, to, { recursive: true })
}

/** Runs the cacheable generators into `dir` (or copies their cached output) and refreshes the cache. */
async function generateCached(dir: string): Promise<void> {
  if (existsSync(join(CACHE, 'complete'))) {
    for (const out of CACHED_OUTPUTS) copyInto(join(CACHE, out), join(dir, out))
    return
  }
  const opts = { cwd: dir, timeout: 180_000 }
  writeFileSync(join(dir, 'kubb.config.mjs'), KUBB_CONFIG)
  mkdirSync(join(dir, 'oazapfts'))
  await Promise.all([
    // The README's command, as a user types it.
    run(BIN('openapi-typescript'), [SPEC, '-o', 'api.d.ts'], opts),
    run(BIN('openapi-ts'), ['-i', SPEC, '-o', 'hey', '-c', '@hey-api/client-fetch'], opts),
    run(BIN('swagger-typescript-api'), ['generate', '-p', SPEC, '-o', 'sta', '-n', 'api.ts'], opts),
    run(BIN('oazapfts'), [SPEC, 'oazapfts/api.ts'], opts),
    run(BIN('openapi-zod-client'), [SPEC, '-o', 'zod/api.ts'], opts),
    run(BIN('kubb'), ['generate', '--config', 'kubb.config.mjs'], opts),
  ])
  const staging = `${CACHE}.${process.pid}`
  for (const out of CACHED_OUTPUTS) copyInto(join(dir, out), join(staging, out))
  writeFileSync(join(staging, 'complete'), '')
  rmSync(CACHE, { recursive: true, force: true })
  cpSync(staging, CACHE, { recursive: true })
  rmSync(staging, { recursive: true, force: true })
}

describe('generated clients (matrix) and the shipped client package', () => {
  let t: TestServer
  let token: string
  let dir: string

  beforeAll(async () => {
    t = await startTestServer()
    dir = mkdtempSync(join(tmpdir(), 'agentops-matrix-'))
    project(dir)
    for (const name of SMOKES)
      copyFileSync(join(import.meta.dirname, `matrix/${name}.smoke.ts`), join(dir, `${name}.smoke.ts`))
    writeFileSync(join(dir, 'readme.ts'), readmeProgram())
    writeFileSync(
      join(dir, 'orval.config.cjs'),
      `module.exports = { api: { input: { target: ${JSON.stringify(SPEC)} }, output: { target: './orval/api.ts', client: 'fetch', baseUrl: ${JSON.stringify(t.baseUrl)} } } }\n`,
    )
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2023',
          lib: ['ES2023', 'DOM'],
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noUncheckedIndexedAccess: true,
          skipLibCheck: true,
          noEmit: true,
          types: ['node'],
        },
        include: ['*.ts'],
      }),
    )
    const opts = { cwd: dir, timeout: 180_000 }
    // client/dist (the README program's import) is built by the test setup, once for every test that reads it.
    await Promise.all([generateCached(dir), run(BIN('orval'), ['--config', 'orval.config.cjs'], opts)])
  }, 240_000)
  afterAll(async () => {
    await t?.close()
    if (dir) rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 })
  })

  it('typechecks every smoke program and the README program (strict)', async () => {
    const result = await run(process.execPath, [TSC, '-p', dir], { cwd: dir, timeout: 120_000 }).catch(
      (e: { stdout?: string }) => ({ stdout: e.stdout ?? String(e) }),
    )
    expect(result.stdout).toBe('')
  }, 120_000)

  it.each(SMOKES)('runs the %s smoke program against the reference server', async (name) => {
    const key = await t.createKey({ scopes: ['*'] })
    const { smoke } = (await import(join(dir, `${name}.smoke.ts`))) as {
      smoke: (baseUrl: string, token: string) => Promise<SmokeResult>
    }
    const result = await smoke(t.baseUrl, key.token)
    expect(result.status).toBe('succeeded')
    expect(result.seqs.length).toBeGreaterThan(2)
    expect(result.seqs).toEqual(result.seqs.map((_, i) => i + 1))
    expect(result.notFound).toBe('not_found')
    expect(result.conflict).toBe('idempotency_key_reused')
  })

  it('runs the README program on plain Node, importing agentops-client from the built package', async () => {
    token = (await t.createKey({ scopes: ['*'] })).token
    writeFileSync(join(dir, 'readme.mjs'), readmeProgram())
    const { stdout } = await run(process.execPath, ['readme.mjs'], {
      cwd: dir,
      timeout: 60_000,
      env: { ...process.env, AGENTOPS_URL: t.baseUrl, AGENTOPS_TOKEN: token, NODE_OPTIONS: '' },
    })
    expect(stdout).toMatch(/tool\.call/)
    expect(stdout.trim().split('\n').at(-1)).toBe('succeeded')
  }, 60_000)
})
