/**
 * The README's snippets as a reader runs them: every ```sh and ```ts block is either run here or listed with the
 * reason it is not, so a new snippet cannot go untested unnoticed. The runnable ones talk to a fresh server started
 * the way the README says (the compiled bin, a fresh SQLite store, loopback, a free port, private webhooks allowed)
 * and each runs TWICE: the second run must succeed as the first did (unique names, fresh Idempotency-Keys). The
 * TypeScript blocks are also typechecked strict with `exactOptionalPropertyTypes`.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { typecheckConsumer } from '../support/consumer-tsc.js'
import { testPort } from '../support/ports.js'

const exec = promisify(execFile)
const ROOT = resolve(import.meta.dirname, '../..')
const BIN = join(ROOT, 'bin/agentops.mjs')

interface Block {
  lang: string
  code: string
  heading: string
}

/** Fenced blocks with their language and the heading they sit under. */
function readmeBlocks(): Block[] {
  const blocks: Block[] = []
  let heading = ''
  const lines = readFileSync(join(ROOT, 'README.md'), 'utf8').split('\n')
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? ''
    if (/^#{2,3} /.test(line)) heading = line.replace(/^#+ /, '')
    const open = /^```(\w*)$/.exec(line)
    if (!open) continue
    const body: string[] = []
    for (i++; i < lines.length && lines[i] !== '```'; i++) body.push(lines[i] ?? '')
    blocks.push({ lang: open[1] ?? '', code: `${body.join('\n')}\n`, heading })
  }
  return blocks
}

/** Blocks not run here, by their first line, and why. */
const NOT_RUN: Record<string, string> = {
  'npm ci && npm start': 'starts the server: this test starts it the same way (the compiled bin)',
  'npm ci && npm test': 'runs every test, this one included',
  'AGENTOPS_WEBHOOK_PRIVATE_TARGETS=127.0.0.1:8787 npm start':
    'starts the server: this test sets the same variable, with its own free port as RECEIVER_PORT',
  'npx agentops-conformance --reference':
    'the conformance package tests run the suite (and --base-url needs a remote)',
  'npm pack -w agentops-client                                   # in the kit: writes agentops-client-0.1.0.tgz':
    'packs and installs the client: test/clients/package.test.ts does both, install-docs.test.ts holds these lines to it',
  "# in a clone of this repository (the workspace's bin":
    'the conformance package and bundle tests run the suite both ways (and --base-url needs a remote)',
}
const SHELL_FIRST = 'TOKEN=$(npx agentops keys create'
const SHELL_GRAPHQL = 'curl -s $API/v1/graphql'

describe('README snippets, run twice against a fresh server', () => {
  const dir = mkdtempSync(join(tmpdir(), 'agentops-readme-'))
  const databaseUrl = `sqlite:${join(dir, 'agentops.db')}`
  const blocks = readmeBlocks().filter((b) => b.lang === 'sh' || b.lang === 'ts')
  let server: ChildProcess | undefined
  let baseUrl = ''
  let token = ''
  let receiverPort = 0
  /**
   * The receiver's port held by this test between the README's receiver runs: the server lists that one port as its
   * private target, and a port merely found free at the start was taken by another test's server meanwhile (EADDRINUSE).
   */
  let holder: Server | undefined
  const hold = () =>
    new Promise<void>((done, failed) => {
      const h = createServer()
      h.once('error', failed)
      h.listen(receiverPort, '127.0.0.1', () => {
        holder = h
        done()
      })
    })
  const release = () =>
    new Promise<void>((done) => {
      const h = holder
      holder = undefined
      if (h) h.close(() => done())
      else done()
    })
  const env = () => ({
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? dir,
    AGENTOPS_URL: baseUrl,
    AGENTOPS_TOKEN: token,
    AGENTOPS_DATABASE_URL: databaseUrl,
    RECEIVER_PORT: String(receiverPort),
  })

  beforeAll(async () => {
    const port = await testPort()
    receiverPort = await testPort()
    await hold()
    server = spawn(process.execPath, [BIN, 'serve', '--host', '127.0.0.1', '--port', String(port)], {
      env: {
        PATH: process.env.PATH ?? '',
        AGENTOPS_DATABASE_URL: databaseUrl,
        AGENTOPS_WEBHOOK_PRIVATE_TARGETS: `127.0.0.1:${receiverPort}`,
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    })
    baseUrl = `http://127.0.0.1:${port}`
    for (let i = 0; ; i++) {
      const ok = await fetch(`${baseUrl}/healthz`).then(
        (r) => r.ok,
        () => false,
      )
      if (ok) break
      if (i > 600 || server.exitCode !== null)
        throw new Error('the server did not answer /healthz within 60 s')
      await new Promise((r) => setTimeout(r, 100))
    }
    const { stdout } = await exec(
      process.execPath,
      [BIN, 'keys', 'create', '--workspace', 'readme', '--tier', 'pro', '--json'],
      { env: env(), cwd: ROOT },
    )
    token = (JSON.parse(stdout) as { token: string }).token
  }, 120_000)

  afterAll(async () => {
    await release()
    if (server && server.exitCode === null) {
      const exited = new Promise((r) => server?.once('exit', r))
      server.kill('SIGTERM')
      await exited
    }
    rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 })
  })

  it('runs or names every shell and TypeScript block', () => {
    const unaccounted = blocks.filter(
      (b) =>
        b.lang === 'sh' &&
        !b.code.startsWith(SHELL_FIRST) &&
        !b.code.startsWith(SHELL_GRAPHQL) &&
        !Object.keys(NOT_RUN).some((first) => b.code.startsWith(first)),
    )
    expect(unaccounted.map((b) => `${b.heading}: ${b.code.split('\n')[0]}`)).toEqual([])
    expect(blocks.filter((b) => b.code.startsWith(SHELL_FIRST))).toHaveLength(1)
    expect(blocks.filter((b) => b.lang === 'ts').length).toBeGreaterThanOrEqual(2)
  })

  it('runs "A first call" and the GraphQL query twice in one shell', async () => {
    const first = blocks.find((b) => b.code.startsWith(SHELL_FIRST))
    const graphql = blocks.find((b) => b.code.startsWith(SHELL_GRAPHQL))
    if (!first || !graphql) throw new Error('README lacks the first-call or the GraphQL block')
    const script = `set -euo pipefail\n${first.code}\necho\n${graphql.code}\necho\necho "RUN=$RUN"\n`
    const runs: string[] = []
    for (const attempt of [1, 2]) {
      const { stdout } = await exec('bash', ['-c', script], { cwd: ROOT, env: env(), timeout: 120_000 })
      expect(stdout, `attempt ${attempt}`).not.toContain('"error":{')
      const run = /^RUN=(run_\w+)$/m.exec(stdout)?.[1]
      expect(run, `attempt ${attempt}: ${stdout}`).toBeDefined()
      runs.push(run ?? '')
      expect(stdout).toMatch(/"status":"(queued|running|succeeded)"/)
      expect(stdout).toContain('event: end')
      expect(stdout).toMatch(/"data":\{"run":\{"status":/)
    }
    expect(new Set(runs).size).toBe(2)
  }, 300_000)

  describe('TypeScript blocks', () => {
    const consumer = join(dir, 'consumer')
    const programs = () => blocks.filter((b) => b.lang === 'ts')

    beforeAll(() => {
      mkdirSync(join(consumer, 'node_modules', '@types'), { recursive: true })
      symlinkSync(join(ROOT, 'client'), join(consumer, 'node_modules', 'agentops-client'))
      symlinkSync(ROOT, join(consumer, 'node_modules', 'agentops-contract-kit'))
      symlinkSync(join(ROOT, 'node_modules/@types/node'), join(consumer, 'node_modules/@types/node'))
      symlinkSync(join(ROOT, 'node_modules/undici-types'), join(consumer, 'node_modules/undici-types'))
      writeFileSync(join(consumer, 'package.json'), '{"private":true,"type":"module"}\n')
      programs().forEach((b, i) => {
        writeFileSync(join(consumer, `block${i}.ts`), b.code)
        writeFileSync(join(consumer, `block${i}.mjs`), b.code)
      })
    })

    it('typechecks them strict with exactOptionalPropertyTypes', async () => {
      expect(await typecheckConsumer(consumer, { include: ['*.ts'], types: ['node'] })).toBe('')
    }, 120_000)

    it('runs each on plain Node twice', async () => {
      const outputs = programs().map(() => [] as string[])
      for (const attempt of [1, 2]) {
        for (const [i] of programs().entries()) {
          await release()
          const { stdout } = await exec(process.execPath, [`block${i}.mjs`], {
            cwd: consumer,
            env: env(),
            timeout: 60_000,
          }).finally(hold)
          outputs[i]?.push(stdout)
          expect(stdout.trim(), `block ${i}, attempt ${attempt}`).not.toBe('')
        }
      }
      const [client, receiver] = outputs
      for (const out of client ?? []) {
        expect(out).toMatch(/tool\.call/)
        expect(out.trim().split('\n').at(-1)).toBe('succeeded')
      }
      for (const out of receiver ?? []) expect(out).toMatch(/^agent\.created \S+$/m)
    }, 180_000)
  })
})
