/**
 * The client as users get it: `npm pack` of the agentops-client workspace, installed from the tarball into an empty
 * folder (no registry needed: it has no dependencies), then a consumer program typechecked with the strictest
 * settings (`exactOptionalPropertyTypes`, `noUncheckedIndexedAccess`, no `skipLibCheck`) and run on plain Node
 * against the reference server. Prints the tarball size, the packages installed, their size and the install time.
 */
import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { typecheckConsumer } from '../support/consumer-tsc.js'
import { startTestServer, type TestServer } from '../support/server.js'

const exec = promisify(execFile)
const ROOT = resolve(import.meta.dirname, '../..')
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'

function sizeOf(path: string): number {
  const s = statSync(path)
  if (!s.isDirectory()) return s.size
  return readdirSync(path).reduce((sum, name) => sum + sizeOf(join(path, name)), 0)
}

/** Installed packages, scoped ones counted one by one. */
function packages(modules: string): string[] {
  return readdirSync(modules)
    .filter((n) => !n.startsWith('.'))
    .flatMap((n) => (n.startsWith('@') ? readdirSync(join(modules, n)).map((m) => `${n}/${m}`) : [n]))
}

/** A consumer's program: resources, auto-paging, time-outs, errors, written as the README shows them. */
const PROGRAM = `import { AgentOps, isApiError, type Tool, WebhookVerificationError } from 'agentops-client'

const ops = new AgentOps({ baseUrl: process.env.AGENTOPS_URL ?? '', token: process.env.AGENTOPS_TOKEN ?? '', timeout: 10_000 })
const suffix = Date.now().toString(36)
for (const n of [1, 2, 3])
  await ops.tools.register({ name: \`t\${n}-\${suffix}\`, provider: 'builtin:echo', policy_binding: { envelope: 'default', required_scopes: [] } })
const names: string[] = []
for await (const tool of ops.tools.list({ limit: 2 })) names.push(tool.name)
const page = await ops.tools.list({ limit: 1 })
const first: Tool | undefined = page.data[0]
let code = ''
try {
  await ops.agents.get('agent_missing', { timeout: 5_000 })
} catch (e) {
  if (isApiError(e, 'not_found')) code = e.code
}
let reason = ''
try {
  ops.webhooks.constructEvent('{}', {}, 'secret')
} catch (e) {
  if (e instanceof WebhookVerificationError) reason = e.reason
}
console.log(JSON.stringify({ names: names.length, first: first?.name ?? null, cursor: typeof page.next_cursor, code, reason }))
`

describe('the agentops-client package', () => {
  const dir = mkdtempSync(join(tmpdir(), 'client-pkg-'))
  let t: TestServer

  beforeAll(async () => {
    const serverStarted = startTestServer()
    const { stdout } = await exec(
      npm,
      // --ignore-scripts: the workspace's `prepare` would rebuild client/dist while other tests read it; the test
      // setup built it from the current sources.
      ['pack', '--json', '--ignore-scripts', '--pack-destination', dir, '-w', 'agentops-client'],
      {
        cwd: ROOT,
        timeout: 120_000,
      },
    )
    const tarball = join(dir, (JSON.parse(stdout) as Array<{ filename: string }>)[0]!.filename)
    writeFileSync(join(dir, 'package.json'), '{"name":"client-user","private":true,"type":"module"}\n')
    const t0 = performance.now()
    await exec(npm, ['install', '--no-audit', '--no-fund', '--offline', tarball], {
      cwd: dir,
      timeout: 120_000,
    })
    const seconds = ((performance.now() - t0) / 1000).toFixed(1)
    const modules = join(dir, 'node_modules')
    const installed = packages(modules)
    console.log(
      `agentops-client: tarball ${(statSync(tarball).size / 1e3).toFixed(0)} kB; install ${seconds} s, ${installed.length} package(s), ${(sizeOf(modules) / 1e6).toFixed(2)} MB`,
    )
    expect(installed).toEqual(['agentops-client'])
    t = await serverStarted
  }, 300_000)

  afterAll(async () => {
    await t?.close()
    rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 })
  })

  it('typechecks a consumer program under exactOptionalPropertyTypes without skipLibCheck', async () => {
    const types = join(dir, 'types')
    mkdirSync(join(types, '@types'), { recursive: true })
    symlinkSync(join(ROOT, 'node_modules/@types/node'), join(types, '@types/node'))
    symlinkSync(join(ROOT, 'node_modules/undici-types'), join(types, 'undici-types'))
    writeFileSync(join(dir, 'program.ts'), PROGRAM)
    const output = await typecheckConsumer(dir, {
      include: ['program.ts'],
      types: ['node'],
      skipLibCheck: false,
      typeRoots: [join(types, '@types')],
    })
    expect(output).toBe('')
  }, 120_000)

  it('is what the kit re-exports as agentops-contract-kit/client, built by the install', async () => {
    const probe = `const kit = await import('agentops-contract-kit/client'); const own = await import('agentops-client');
console.log(JSON.stringify({ same: kit.AgentOps === own.AgentOps, exports: Object.keys(kit).length === Object.keys(own).length }))`
    const { stdout } = await exec(process.execPath, ['--input-type=module', '-e', probe], { cwd: ROOT })
    expect(JSON.parse(stdout)).toEqual({ same: true, exports: true })
  })

  it('runs on plain Node from the installed package against the reference server', async () => {
    const token = (await t.createKey({ scopes: ['*'] })).token
    // The same program with its types erased by hand: two annotations.
    const js = PROGRAM.replace(', type Tool,', ',')
      .replace('const names: string[] = []', 'const names = []')
      .replace('const first: Tool | undefined =', 'const first =')
    writeFileSync(join(dir, 'program.mjs'), js)
    const { stdout } = await exec(process.execPath, ['program.mjs'], {
      cwd: dir,
      timeout: 60_000,
      env: { PATH: process.env.PATH ?? '', AGENTOPS_URL: t.baseUrl, AGENTOPS_TOKEN: token },
    })
    expect(JSON.parse(stdout)).toEqual({
      names: 3,
      first: expect.stringMatching(/^t1-/),
      cursor: 'string',
      code: 'not_found',
      reason: 'not_an_event',
    })
  }, 60_000)
})
