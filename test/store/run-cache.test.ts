/**
 * The run cache (src/store/repos/run-cache.ts). On the embedded store: a read by id after any write through the
 * repository sees that write, other workspaces never see the run, a transaction that rolls back leaves readers on
 * the committed run, a read racing a write is not cached, a cached run cannot be changed by a caller, and the
 * answer without waiting (`getNow`) is only ever what a read would give. On
 * PostgreSQL: a write by another replica is seen by the next read, and an unchanged run is answered from memory.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { RunRecord } from '../../src/domain/runs/types.js'
import { type Db, openDb } from '../../src/store/db.js'
import { migrate } from '../../src/store/migrations/index.js'
import { createRepositories } from '../../src/store/repos/index.js'
import { backends } from '../support/backends.js'

const opened: Db[] = []
afterEach(async () => {
  for (const d of opened.splice(0)) await d.close()
})

async function setUp(url = 'sqlite::memory:') {
  const db = await openDb(url)
  opened.push(db)
  await migrate(db)
  const repos = createRepositories(db)
  const now = Date.UTC(2026, 0, 1)
  await db.run(
    `INSERT INTO workspaces (id, name, tier, limit_per_hour, burst_limit, policy_classes, features, created_at)
     VALUES ('ws_a', 'a', 'standard', 1000, 100, '[]', '[]', $1), ('ws_b', 'b', 'standard', 1000, 100, '[]', '[]', $1)`,
    [now],
  )
  const run = await repos.runs.insert({
    id: 'run_1',
    workspaceId: 'ws_a',
    agentId: 'agt_1',
    taskId: null,
    status: 'queued',
    pausedFrom: null,
    mode: 'live',
    traceLevel: 'summary',
    inputs: { n: 1 },
    envelope: { name: 'default', rules: [] } as unknown as RunRecord['envelope'],
    behavior: 'autonomous',
    caller: { keyId: 'k', identity: 'i', scopes: [] } as unknown as RunRecord['caller'],
    priority: 3,
    plan: [],
    nextStep: 0,
    inFlightStep: null,
    toolCalls: 0,
    approved: [],
    awaiting: [],
    results: [],
    outcome: null,
    frameCount: 0,
    stepsCompleted: 0,
    stepsEscalated: 0,
    createdAt: now,
    startedAt: null,
    finishedAt: null,
    updatedAt: now,
  })
  return { d: db, repos, run }
}

describe('SQLite run cache', () => {
  it('answers a read after a save with the saved run, and only to its own workspace', async () => {
    const { repos, run } = await setUp()
    expect((await repos.runs.get('ws_a', 'run_1'))?.status).toBe('queued') // fills the cache
    await repos.runs.save({ ...run, status: 'running', startedAt: run.createdAt + 1 })
    expect((await repos.runs.get('ws_a', 'run_1'))?.status).toBe('running')
    expect(await repos.runs.get('ws_b', 'run_1')).toBeUndefined()
  })

  it('keeps readers on the committed run when a transaction that saved it rolls back', async () => {
    const { d, repos, run } = await setUp()
    await repos.runs.get('ws_a', 'run_1')
    await expect(
      d.transaction(async (tx) => {
        await repos.runs.in(tx).save({ ...run, status: 'cancelled' })
        // The transaction sees its own write; that uncommitted run must not reach the cache.
        expect((await repos.runs.in(tx).get('ws_a', 'run_1'))?.status).toBe('cancelled')
        throw new Error('handler failed')
      }),
    ).rejects.toThrow('handler failed')
    expect((await repos.runs.get('ws_a', 'run_1'))?.status).toBe('queued')
  })

  it('does not keep a read that a write overtook', async () => {
    const { repos, run } = await setUp()
    // Read and save issued together: whichever order they run in, the next read must show the save.
    await Promise.all([repos.runs.get('ws_a', 'run_1'), repos.runs.save({ ...run, status: 'running' })])
    expect((await repos.runs.get('ws_a', 'run_1'))?.status).toBe('running')
  })

  it('answers without waiting only what a read would: the cached run, to its own workspace, and never a saved-over one', async () => {
    const { repos, run } = await setUp()
    expect(repos.runs.getNow?.('ws_a', 'run_1')).toBeUndefined() // not read yet: the store must be asked
    const read = await repos.runs.get('ws_a', 'run_1')
    expect(repos.runs.getNow?.('ws_a', 'run_1')).toBe(read)
    expect(repos.runs.getNow?.('ws_b', 'run_1')).toBeUndefined()
    await repos.runs.save({ ...run, status: 'running', startedAt: run.createdAt + 1 })
    expect(repos.runs.getNow?.('ws_a', 'run_1')).toBeUndefined()
    expect((await repos.runs.get('ws_a', 'run_1'))?.status).toBe('running')
    expect(repos.runs.getNow?.('ws_a', 'run_1')?.status).toBe('running')
  })

  it('hands out runs no caller can change', async () => {
    const { repos } = await setUp()
    await repos.runs.get('ws_a', 'run_1')
    const cached = (await repos.runs.get('ws_a', 'run_1')) as RunRecord
    expect(() => {
      ;(cached as { status: string }).status = 'failed'
    }).toThrow(TypeError)
    expect(() => (cached.results as unknown[]).push(1)).toThrow(TypeError)
    expect((await repos.runs.get('ws_a', 'run_1'))?.status).toBe('queued')
  })
})

describe.each(backends().filter((b) => b.name === 'postgres'))('PostgreSQL run cache', (backend) => {
  /** A second replica on the same database, with its own repositories (and cache). */
  async function otherReplica(url: string) {
    const other = await openDb(url)
    opened.push(other)
    return createRepositories(other)
  }

  it('sees a write made by another replica on the next read', async () => {
    const url = await backend.freshUrl()
    const { repos, run } = await setUp(url)
    const other = await otherReplica(url)
    expect((await repos.runs.get('ws_a', 'run_1'))?.status).toBe('queued')
    expect((await repos.runs.get('ws_a', 'run_1'))?.status).toBe('queued') // a hit now
    await other.runs.save({ ...run, status: 'running', startedAt: run.createdAt + 1 })
    expect((await repos.runs.get('ws_a', 'run_1'))?.status).toBe('running')
  })

  it('answers an unchanged run from memory, frozen, and only to its own workspace', async () => {
    const url = await backend.freshUrl()
    const { repos } = await setUp(url)
    const first = await repos.runs.get('ws_a', 'run_1')
    const second = await repos.runs.get('ws_a', 'run_1')
    expect(second).toBe(first)
    // Other replicas write too: a cached run is confirmed against the row, never answered without waiting.
    expect(repos.runs.getNow?.('ws_a', 'run_1')).toBeUndefined()
    expect(Object.isFrozen(second)).toBe(true)
    expect(await repos.runs.get('ws_b', 'run_1')).toBeUndefined()
  })

  it('forgets a run that another replica removed', async () => {
    const url = await backend.freshUrl()
    const { repos } = await setUp(url)
    await repos.runs.get('ws_a', 'run_1')
    const other = await openDb(url)
    opened.push(other)
    await other.run("DELETE FROM runs WHERE id = 'run_1'")
    expect(await repos.runs.get('ws_a', 'run_1')).toBeUndefined()
  })
})
