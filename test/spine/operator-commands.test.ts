/**
 * The operator's CLI as CI uses it: several commands at once on one SQLite store (a pipeline provisioning
 * identities in parallel), the conformance suite's identities in one command, and `--version`.
 */
import { execFile } from 'node:child_process'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { testTempDir } from '../support/temp.js'

const run = promisify(execFile)
const ROOT = resolve(import.meta.dirname, '../..')
const CLI = join(ROOT, 'bin/agentops.mjs')

const agentops = (args: string[]) =>
  run(process.execPath, [CLI, ...args], {
    cwd: ROOT,
    timeout: 120_000,
    env: { ...process.env, NODE_OPTIONS: '' },
  })

/** The suite's identities, provisioned into workspaces named after `prefix` in the store at `url`. */
const provisioned = async (prefix: string, url: string) =>
  JSON.parse(
    (await agentops(['keys', 'provision-conformance', '--workspace-prefix', prefix, '--database-url', url]))
      .stdout,
  ) as { tokens: Record<string, string>; workspaces: string[] }

/** A command given `stdin` on its standard input; its exit code, never a rejection. */
const withStdin = (args: string[], stdin: string) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((done) => {
    const child = execFile(
      process.execPath,
      [CLI, ...args],
      { cwd: ROOT, timeout: 60_000, env: { ...process.env, NODE_OPTIONS: '' } },
      (error, stdout, stderr) => done({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    )
    child.stdin?.end(stdin)
  })

describe('agentops operator commands', () => {
  it('runs ten `keys create` at once on one fresh SQLite store, every one issuing its key', async () => {
    const url = `sqlite:${join(testTempDir('operators-'), 'db.sqlite')}`
    const outcomes = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) =>
        agentops(['keys', 'create', '--workspace', `parallel-${i % 3}`, '--json', '--database-url', url]),
      ),
    )
    const failures = outcomes.flatMap((o) =>
      o.status === 'rejected' ? [String((o.reason as { stderr?: string }).stderr ?? o.reason)] : [],
    )
    expect(failures).toEqual([])
    const tokens = outcomes.map((o) =>
      o.status === 'fulfilled' ? (JSON.parse(o.value.stdout) as { token: string }).token : '',
    )
    expect(new Set(tokens).size).toBe(10)
    const listed = await agentops([
      'keys',
      'list',
      '--workspace',
      'parallel-0',
      '--json',
      '--database-url',
      url,
    ])
    expect((JSON.parse(listed.stdout) as unknown[]).length).toBe(4)
  })

  it('provision-conformance prints every identity the suite asks for, in workspaces of its own', async () => {
    const url = `sqlite:${join(testTempDir('provision-'), 'db.sqlite')}`
    const first = JSON.parse(
      (await agentops(['keys', 'provision-conformance', '--database-url', url])).stdout,
    ) as { tokens: Record<string, string>; workspaces: string[] }
    expect(Object.keys(first.tokens).sort()).toEqual(
      [
        'expired',
        'narrowScope',
        'otherScope',
        'primary',
        'quotaLimited',
        'rateLimited',
        'rateLimitedPeer',
        'revocable',
        'revoked',
        'runsOnly',
        'secondWorkspace',
        'standardTier',
        'proTier',
      ].sort(),
    )
    expect(new Set(Object.values(first.tokens)).size).toBe(13)
    expect(first.workspaces).toHaveLength(6)
    // A second provisioning on the same store: new workspaces, so its quotas start untouched.
    const second = JSON.parse(
      (await agentops(['keys', 'provision-conformance', '--database-url', url])).stdout,
    ) as { workspaces: string[] }
    expect(second.workspaces.filter((w) => first.workspaces.includes(w))).toEqual([])
    const named = await provisioned('ci-42', url)
    expect(named.workspaces.sort()).toEqual([
      'ci-42-limited',
      'ci-42-primary',
      'ci-42-pro',
      'ci-42-quota',
      'ci-42-second',
      'ci-42-standard',
    ])
    // The revoked identity is issued revoked; it is the only one (the revocable one is the suite's to revoke).
    const keys = JSON.parse(
      (await agentops(['keys', 'list', '--workspace', 'ci-42-primary', '--json', '--database-url', url]))
        .stdout,
    ) as Array<{ revoked_at: string | null }>
    expect(keys.filter((k) => k.revoked_at !== null)).toHaveLength(1)
    // The second workspace holds every family of the contract as a wildcard, the stream's too.
    const secondKeys = JSON.parse(
      (await agentops(['keys', 'list', '--workspace', 'ci-42-second', '--json', '--database-url', url]))
        .stdout,
    ) as Array<{ scopes: string[] }>
    expect(secondKeys[0]?.scopes.sort()).toEqual(
      ['agents', 'destinations', 'ingest', 'records', 'runs', 'stream', 'tasks', 'tools', 'webhooks']
        .map((f) => `${f}:*`)
        .sort(),
    )
  })

  it('keys revoke --token-stdin revokes the key of the token on its standard input, and refuses what is no token', async () => {
    const url = `sqlite:${join(testTempDir('revoke-stdin-'), 'db.sqlite')}`
    const { tokens } = await provisioned('rv', url)
    const revoke = (stdin: string, extra: string[] = []) =>
      withStdin(['keys', 'revoke', '--token-stdin', '--json', ...extra, '--database-url', url], stdin)
    const revoked = await revoke(`${tokens.revocable}\n`)
    expect(revoked.code).toBe(0)
    const keyId = (JSON.parse(revoked.stdout) as { key_id: string }).key_id
    const listed = JSON.parse(
      (await agentops(['keys', 'list', '--workspace', 'rv-primary', '--json', '--database-url', url])).stdout,
    ) as Array<{ key_id: string; revoked_at: string | null }>
    expect(listed.find((k) => k.key_id === keyId)?.revoked_at).not.toBeNull()
    // The revoked identity and this one: two revoked keys, the others untouched.
    expect(listed.filter((k) => k.revoked_at !== null)).toHaveLength(2)
    // Twice: the key is no longer active.
    expect((await revoke(tokens.revocable ?? '')).code).toBe(1)
    const garbage = await revoke('not-a-token')
    expect(garbage.code).toBe(2)
    expect(garbage.stderr).toContain('no token of this server')
    expect((await revoke(tokens.revocable ?? '', ['key_x'])).stderr).toContain('not both')
  })

  it('keys create --token-stdin issues a key like the token’s (its workspace, identity and scopes), and refuses what is no valid key', async () => {
    const url = `sqlite:${join(testTempDir('create-like-'), 'db.sqlite')}`
    const { tokens } = await provisioned('lk', url)
    const like = (stdin: string, extra: string[] = []) =>
      withStdin(['keys', 'create', '--token-stdin', '--json', ...extra, '--database-url', url], stdin)
    type Issued = {
      token: string
      workspace: string
      identity: string
      scopes: string[]
      expires_at: string | null
    }
    const before = Date.now()
    const short = await like(`${tokens.otherScope}\n`, ['--expires-in', '3'])
    expect(short.code).toBe(0)
    const issued = JSON.parse(short.stdout) as Issued
    expect([issued.workspace, issued.identity, issued.scopes]).toEqual(['lk-primary', 'default', ['tasks:*']])
    expect(issued.token).not.toBe(tokens.otherScope)
    const expiresAt = Date.parse(issued.expires_at ?? '')
    expect(expiresAt).toBeGreaterThanOrEqual(before + 3000)
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 3000)
    // Given scopes win; the new key is itself a key to issue from.
    const narrowed = await like(issued.token, ['--scopes', 'tasks:read'])
    expect((JSON.parse(narrowed.stdout) as Issued).scopes).toEqual(['tasks:read'])
    expect((JSON.parse(narrowed.stdout) as Issued).expires_at).toBeNull()
    // A revoked key, what is no token, a workspace besides, workspace settings: refused, nothing issued.
    const revoked = await like(tokens.revoked ?? '')
    expect([revoked.code, revoked.stderr]).toEqual([1, expect.stringContaining('no valid key')])
    expect((await like('not-a-token')).code).toBe(2)
    expect((await like(tokens.primary ?? '', ['--workspace', 'lk-primary'])).stderr).toContain('not both')
    expect((await like(tokens.primary ?? '', ['--tier', 'pro'])).stderr).toContain('no workspace settings')
    // An empty --scopes (a script's empty variable) is refused, never read as "every scope" or "the token's".
    for (const empty of ['', ' , '])
      expect(await like(tokens.primary ?? '', ['--scopes', empty])).toMatchObject({
        code: 2,
        stderr: expect.stringContaining('--scopes lists no scope'),
      })
    const fresh = await withStdin(
      ['keys', 'create', '--workspace', 'lk-empty', '--scopes=', '--database-url', url],
      '',
    )
    expect([fresh.code, fresh.stdout]).toEqual([2, ''])
    const listed = JSON.parse(
      (await agentops(['keys', 'list', '--workspace', 'lk-primary', '--json', '--database-url', url])).stdout,
    ) as unknown[]
    // The provisioned keys of the primary workspace (seven) and the two issued here.
    expect(listed).toHaveLength(9)
  })

  it('provision-conformance --primary-tier puts the primary identity on that tier, its quotas out of reach', async () => {
    const url = `sqlite:${join(testTempDir('provision-tier-'), 'db.sqlite')}`
    await agentops([
      'keys',
      'provision-conformance',
      '--workspace-prefix',
      'paced',
      '--primary-tier',
      'standard',
      '--database-url',
      url,
    ])
    const workspace = (name: string) =>
      agentops(['workspaces', 'set', name, '--json', '--database-url', url]).then(
        ({ stdout }) => JSON.parse(stdout) as { tier: string; quotas: { agents: number } },
      )
    const [primary, second] = await Promise.all([workspace('paced-primary'), workspace('paced-second')])
    expect([primary.tier, primary.quotas.agents]).toEqual(['standard', 1_000_000_000])
    expect(second.tier).toBe('enterprise')
    // The quota-limited identity's workspace keeps little (idempotency.quota-refusals).
    const quota = (await agentops(['workspaces', 'set', 'paced-quota', '--json', '--database-url', url]).then(
      ({ stdout }) => JSON.parse(stdout),
    )) as { quotas: Record<string, number> }
    expect(quota.quotas).toMatchObject({ agents: 1, idempotency_keys: 3, idempotency_answer_bytes: 8192 })
    // The tier identities keep their tier's own hourly limit (§8: 1,000 and 10,000; ratelimit.tier-limits).
    const tiers = await Promise.all(
      ['paced-standard', 'paced-pro'].map((name) =>
        agentops(['workspaces', 'set', name, '--json', '--database-url', url]).then(
          ({ stdout }) => JSON.parse(stdout) as { tier: string; limit_per_hour: number },
        ),
      ),
    )
    expect(tiers.map((t) => [t.tier, t.limit_per_hour])).toEqual([
      ['standard', 1_000],
      ['pro', 10_000],
    ])
    // A figure of its own is an enterprise workspace's: given for a standard one it is refused, never dropped unsaid.
    await expect(
      agentops(['workspaces', 'set', 'paced-standard', '--limit-per-hour', '5', '--database-url', url]),
    ).rejects.toThrow(/standard workspace's hourly limit is the tier's 1000 requests/)
    const kept = await agentops(['workspaces', 'set', 'paced-standard', '--json', '--database-url', url])
    expect((JSON.parse(kept.stdout) as { limit_per_hour: number }).limit_per_hour).toBe(1_000)
    await expect(
      agentops(['keys', 'provision-conformance', '--primary-tier', 'gold', '--database-url', url]),
    ).rejects.toThrow(/--primary-tier must be standard, pro or enterprise/)
  })

  it('--version prints the package version', async () => {
    const { version } = (await import('../../package.json', { with: { type: 'json' } })).default
    expect((await agentops(['--version'])).stdout.trim()).toBe(`agentops ${version}`)
  })
})
