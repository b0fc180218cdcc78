/**
 * The kit's tarball carries its client: `npm pack` of the kit, unpacked into an empty folder's node_modules the way
 * `npm install <tarball>` places a package's files, then `agentops-contract-kit/client` imported on plain Node and
 * typechecked strict, with no agentops-client package anywhere (it is not published). The tarball's manifest may
 * only depend on packages a registry has: never on a workspace of this repository.
 *
 * Why not a real `npm install` of the tarball: the kit's server dependencies (371 packages, a native SQLite build)
 * need the registry, which tests do not reach; the client export needs none of them (tested here by their absence).
 */
import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { typecheckConsumer } from '../support/consumer-tsc.js'

const exec = promisify(execFile)
const ROOT = resolve(import.meta.dirname, '../..')
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'

describe('the kit tarball', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kit-pkg-'))
  const kit = join(dir, 'node_modules', 'agentops-contract-kit')

  beforeAll(async () => {
    const t0 = performance.now()
    // --ignore-scripts: the test setup built dist/ and client/dist from the current sources; `prepare` would
    // rebuild them while other tests read them.
    const { stdout } = await exec(npm, ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], {
      cwd: ROOT,
      timeout: 120_000,
    })
    const packed = (JSON.parse(stdout) as Array<{ filename: string; size: number; entryCount: number }>)[0]!
    mkdirSync(kit, { recursive: true })
    await exec('tar', ['-xzf', join(dir, packed.filename), '-C', kit, '--strip-components=1'])
    writeFileSync(join(dir, 'package.json'), '{"name":"kit-user","private":true,"type":"module"}\n')
    console.log(
      `agentops-contract-kit: tarball ${(packed.size / 1e6).toFixed(2)} MB, ${packed.entryCount} files; packed and unpacked in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    )
  }, 180_000)

  afterAll(() => rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 }))

  it('depends on no workspace of this repository (they are not published)', () => {
    const manifest = JSON.parse(readFileSync(join(kit, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>
      workspaces?: string[]
    }
    const root = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { workspaces: string[] }
    const workspaceNames = root.workspaces.map(
      (w) => (JSON.parse(readFileSync(join(ROOT, w, 'package.json'), 'utf8')) as { name: string }).name,
    )
    expect(workspaceNames).toContain('agentops-client')
    for (const name of workspaceNames) expect(Object.keys(manifest.dependencies ?? {})).not.toContain(name)
  })

  it('serves agentops-contract-kit/client from its own files, with no other package installed', async () => {
    const program = `import { AgentOps, isApiError, verifyWebhookSignature } from 'agentops-contract-kit/client'
const ops = new AgentOps({ baseUrl: 'http://127.0.0.1:9', token: 't' })
let resolved = 'none'
try { await import('agentops-client') } catch (e) { resolved = e.code }
console.log(JSON.stringify({ client: typeof ops.runs.list, isApiError: typeof isApiError, verify: typeof verifyWebhookSignature, resolved, url: import.meta.resolve('agentops-contract-kit/client') }))
`
    writeFileSync(join(dir, 'program.mjs'), program)
    const { stdout } = await exec(process.execPath, ['program.mjs'], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? '' },
    })
    expect(JSON.parse(stdout)).toEqual({
      client: 'function',
      isApiError: 'function',
      verify: 'function',
      resolved: 'ERR_MODULE_NOT_FOUND',
      url: `file://${kit}/exports/client.js`,
    })
  })

  it('types agentops-contract-kit/client from the files it ships', async () => {
    // skipLibCheck: the client's declarations are checked strict by package.test.ts; here what matters is that
    // the kit's export resolves to declarations inside the tarball (an unresolved one is an error in program.ts).
    writeFileSync(
      join(dir, 'program.ts'),
      `import { AgentOps, type Tool } from 'agentops-contract-kit/client'
const ops = new AgentOps({ baseUrl: 'http://127.0.0.1:9', token: 't', timeout: 1_000 })
export async function first(): Promise<Tool | undefined> {
  for await (const tool of ops.tools.list({ limit: 1 })) return tool
  return undefined
}
`,
    )
    expect(await typecheckConsumer(dir, { include: ['program.ts'], types: [], skipLibCheck: true })).toBe('')
  }, 120_000)
})

describe('what the tarball leaves out', () => {
  const entries = (file: string) =>
    readFileSync(join(ROOT, file), 'utf8')
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '' && !line.startsWith('#'))

  it('is what git ignores, but the built server: local work (a killed Stryker run’s sandbox, profiles) never ships', () => {
    const npmIgnored = new Set(entries('.npmignore'))
    // dist/ is the built server the package ships (.npmignore leaves out its build info only).
    const missing = entries('.gitignore').filter((entry) => entry !== 'dist/' && !npmIgnored.has(entry))
    expect(missing).toEqual([])
  })
})
