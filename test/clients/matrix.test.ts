/**
 * The generator matrix: clients generated from the contract by openapi-typescript (the README's command) +
 * openapi-fetch, @hey-api/openapi-ts and orval, each with a smoke program (test/clients/matrix/) that creates a tool
 * and an agent, starts a run with an Idempotency-Key, polls it, pages the trace and handles a 404 and a 409. Every
 * program is typechecked (strict) and then run against the reference server. The shipped client is built the way
 * npm packs it and the README's program runs on plain Node (no tsx) from a consumer project.
 */
import { execFile } from 'node:child_process'
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.js'

const run = promisify(execFile)
const ROOT = resolve(import.meta.dirname, '../..')
const SPEC = join(ROOT, 'openapi/agent-operations.yaml')
const BIN = (name: string) => join(ROOT, 'node_modules/.bin', name)
const SMOKES = ['openapi-fetch', 'hey-api', 'orval'] as const

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
    const opts = { cwd: dir, timeout: 120_000 }
    await Promise.all([
      // The README's command, as a user types it.
      run(BIN('openapi-typescript'), [SPEC, '-o', 'api.d.ts'], opts),
      run(BIN('openapi-ts'), ['-i', SPEC, '-o', 'hey', '-c', '@hey-api/client-fetch'], opts),
      run(BIN('orval'), ['--config', 'orval.config.cjs'], opts),
      run('npm', ['run', 'build:client'], { cwd: ROOT, timeout: 120_000 }),
    ])
  }, 180_000)
  afterAll(async () => {
    await t?.close()
    if (dir) rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 })
  })

  it('typechecks every smoke program and the README program (strict)', async () => {
    const result = await run(BIN('tsc'), ['-p', dir], { cwd: dir, timeout: 120_000 }).catch(
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

  it('runs the README program on plain Node, importing agentops-contract-kit/client from the built package', async () => {
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
