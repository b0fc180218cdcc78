/**
 * `conformance:stryker --postgres URL --replicas N`: each worker judges N reference replicas on one PostgreSQL
 * database behind the cluster tests' round-robin balancer (switch-runner.mjs ReplicaSet). The suite's requests reach
 * every replica, every replica has the mutant active, a mutant is judged as on one server, and nothing is left on
 * the PostgreSQL server afterwards.
 */
import { join } from 'node:path'
import postgres from 'postgres'
import { afterAll, describe, expect, inject, it } from 'vitest'
import { main } from '../src/cli.js'
import { TOKENS } from '../src/config.js'
import { freePort } from '../src/ports.js'
import { provisionedTokens } from '../src/provision.js'
import { provisionArgs } from '../src/reference.js'
// @ts-expect-error: plain ESM modules of the command, without types
import { quiet } from '../stryker/changes.mjs'
// @ts-expect-error: plain ESM modules of the command, without types
import { ConformanceSwitchRunner, SUITE_TEST } from '../stryker/switch-runner.mjs'
import { mutantRunOptions, sandbox } from './stryker-sandbox.js'

const MODULE = 'src/domain/idempotency/key'
const ONLY = ['idempotency', 'sweep']
const adminUrl = inject('postgresUrl')

/** The databases the runners of this process made on the PostgreSQL server (switch-runner.mjs names them so). */
async function runnerDatabases(): Promise<string[]> {
  const sql = postgres(adminUrl ?? '', { max: 1, onnotice: () => {} })
  try {
    const rows = await sql<{ datname: string }[]>`
      SELECT datname FROM pg_database WHERE datname LIKE ${`agentops_stryker_${process.pid}_%`}`
    return rows.map((r) => r.datname)
  } finally {
    await sql.end()
  }
}

describe.skipIf(!adminUrl)('conformance:stryker --replicas', () => {
  const saved = { admin: process.env.STRYKER_POSTGRES_ADMIN_URL, replicas: process.env.STRYKER_REPLICAS }
  afterAll(() => {
    for (const [name, value] of [
      ['STRYKER_POSTGRES_ADMIN_URL', saved.admin],
      ['STRYKER_REPLICAS', saved.replicas],
    ] as const)
      if (value === undefined) delete process.env[name]
      else process.env[name] = value
  })

  it('refuses replicas without a PostgreSQL server to share', () => {
    delete process.env.STRYKER_POSTGRES_ADMIN_URL
    process.env.STRYKER_REPLICAS = '2'
    expect(() => new ConformanceSwitchRunner(quiet, {}, { root: '/nowhere' })).toThrow(
      /STRYKER_REPLICAS needs STRYKER_POSTGRES_ADMIN_URL/,
    )
  })

  it('judges a mutant on two replicas behind the balancer, both serving the suite, as on one server', async () => {
    process.env.STRYKER_POSTGRES_ADMIN_URL = adminUrl ?? ''
    process.env.STRYKER_REPLICAS = '2'
    const { dir, mutants } = await sandbox(MODULE)
    // validateKey's body emptied: executed per keyed request, on whichever replica takes it.
    const runtimeMutant = mutants.find(
      (m) => m.location.start.line === 8 && m.mutatorName === 'BlockStatement' && !m.status,
    )
    expect(runtimeMutant).toBeTruthy()
    const runner = new ConformanceSwitchRunner(
      quiet,
      { timeoutMS: 60_000, timeoutFactor: 1.5 },
      {
        root: dir,
        suite: main,
        identities: { provisionArgs, provisionedTokens, TOKENS },
        freePort,
        dryRunOnly: ONLY,
      },
    )
    try {
      await runner.init()
      const dry = await runner.dryRun({ timeout: 240_000, disableBail: false, coverageAnalysis: 'perTest' })
      expect(dry.status, JSON.stringify(dry)).toBe('complete')
      expect(dry.tests[0].status, dry.tests[0].failureMessage).toBe(0)
      // The mutant's code ran on the replicas during the dry run: their coverage is merged.
      expect(Object.keys(dry.mutantCoverage.perTest[SUITE_TEST])).toContain(runtimeMutant!.id)
      const set = runner.server
      expect(set.pids).toHaveLength(2)
      // Both replicas answered the suite: round robin over every request and socket.
      const picked = new Set(set.balancer.picks.map((p: { replica: number }) => p.replica))
      expect([...picked].sort()).toEqual([0, 1])
      expect(await runnerDatabases()).toHaveLength(1)
      // The mutant is active on every replica: keyed requests through the balancer run it on each.
      const flags: string[] = await runner.provision(set, 'replica-hits')
      const token = flags[flags.indexOf('--token') + 1]
      await set.send('activate', { mutant: runtimeMutant!.id, hitLimit: Number.MAX_SAFE_INTEGER })
      for (let i = 0; i < 4; i++) {
        const res = await fetch(`${set.baseUrl}/v1/agents`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${token}`,
            'content-type': 'application/json',
            'idempotency-key': `replica-hits-${i}`,
          },
          body: JSON.stringify({ name: `replica-${i}`, behavior: 'autonomous', capabilities: [] }),
        })
        expect(res.status).toBe(201)
      }
      const ends: { hitCount?: number }[] = await Promise.all(
        set.replicas.map((r: { send(cmd: string): Promise<{ hitCount?: number }> }) => r.send('end')),
      )
      expect(ends.map((e) => (e.hitCount ?? 0) > 0)).toEqual([true, true])

      const source = join(dir, `${MODULE}.ts`)
      const killed = await runner.mutantRun(mutantRunOptions(source, runtimeMutant!))
      expect(killed.status, JSON.stringify(killed)).toBe('killed')
      const clean = await runner.mutantRun(mutantRunOptions(source, { id: 'no-such-mutant' }))
      expect(clean.status, JSON.stringify(clean)).toBe('survived')
    } finally {
      await runner.dispose()
    }
    // The replicas' one database is dropped with them.
    expect(await runnerDatabases()).toEqual([])
  }, 600_000)
})
