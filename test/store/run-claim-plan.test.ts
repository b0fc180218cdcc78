/**
 * The scheduler's claim is an index walk on both stores, whatever the backlog: the plan of the claim query
 * (RUNNABLE_SQL) uses the partial index runs_claim in its order, with no sort and no scan of the table. Checked
 * with 20,000 finished and 20,000 queued runs, statistics up to date: enough rows that PostgreSQL's planner
 * compares real costs (on a table of a few pages it may rightly prefer a sequential scan, which proves nothing).
 * Without migration 009's index both plans sort (SQLite: "USE TEMP B-TREE FOR ORDER BY"; PostgreSQL: Sort).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ENVELOPES } from '../../src/domain/policy/envelopes.js'
import { type Db, openDb } from '../../src/store/db.js'
import { migrate } from '../../src/store/migrations/index.js'
import { createRepositories } from '../../src/store/repos/index.js'
import { RUNNABLE_SQL } from '../../src/store/repos/runs.js'
import { backends } from '../support/backends.js'
import { cloneRuns } from '../support/run-backlog.js'

const BACKLOG = 20_000

describe.each(backends())('the run claim on $name', (backend) => {
  let db: Db
  beforeAll(async () => {
    db = await openDb(await backend.freshUrl())
    await migrate(db)
    const now = Date.UTC(2026, 0, 1)
    const envelope = ENVELOPES.default
    if (!envelope) throw new Error('no default envelope')
    await createRepositories(db).runs.insert({
      id: 'run_template',
      workspaceId: 'ws_a',
      agentId: 'agt_a',
      taskId: null,
      status: 'queued',
      pausedFrom: null,
      mode: 'live',
      traceLevel: 'summary',
      inputs: {},
      envelope,
      behavior: 'autonomous',
      caller: { keyId: 'key_a', identity: 'test', scopes: [] },
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
    await cloneRuns(db, 'run_template', BACKLOG, { idPrefix: 'run_done', status: 'succeeded' })
    await cloneRuns(db, 'run_template', BACKLOG, { idPrefix: 'run_todo', status: 'queued' })
    await db.exec('ANALYZE')
  }, 60_000)
  afterAll(async () => {
    await db?.close()
  })

  it('answers the oldest of the highest priority first', async () => {
    const ids = (await db.query<{ id: string }>(RUNNABLE_SQL, [Date.now(), 3])).map((r) => r.id)
    expect(ids).toEqual(['run_template', 'run_todo0000000000000001', 'run_todo0000000000000002'])
  })

  it('walks runs_claim in its order: no sort, no table scan', async () => {
    const params = [Date.now(), 5]
    if (backend.name === 'sqlite') {
      const plan = (await db.query<{ detail: string }>(`EXPLAIN QUERY PLAN ${RUNNABLE_SQL}`, params)).map(
        (r) => r.detail,
      )
      // "SCAN ... USING INDEX" is SQLite's word for walking an index in order without a seek key; with the LIMIT
      // it stops after the first rows. A bare "SCAN runs" (the table) or a temp B-tree (a sort) would be O(n).
      expect(plan).toEqual(['SCAN runs USING INDEX runs_claim'])
    } else {
      const plan = (await db.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${RUNNABLE_SQL}`, params))
        .map((r) => r['QUERY PLAN'])
        .join('\n')
      expect(plan).toMatch(/Index (Only )?Scan using runs_claim on runs/)
      expect(plan).not.toMatch(/Sort|Seq Scan|Bitmap/)
    }
  })
})
