/**
 * The queries on the paths whose latency must not grow with the data (GET /v1/runs/{id}, the agents page and an
 * agent's runs page, a trace page, a connector's records page with its proofs, the scheduler's drain and the outbox's
 * fan-out) are index reads on both stores: each statement the repositories send for them is captured, then its plan
 * is asked for (SQLite EXPLAIN QUERY PLAN, PostgreSQL EXPLAIN) and must name the index that serves it, with no table
 * scan and no sort. `npm run bench:growth` shows the same paths' latency at 1,000 and 100,000 runs and 1,000,000 records.
 *
 * The tables hold 20,000 finished runs with 5 frames each, 20,000 queued runs, 20,000 records and 40 agents,
 * statistics up to date. PostgreSQL plans under `enable_seqscan = off`: the question is whether an index serves the
 * query, and on a table of a few pages the planner rightly prefers reading it whole; a query no index serves still
 * shows its Seq Scan. Dropping an index these names (e.g. runs_claim, runs_agent_active) fails its case.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ENVELOPES } from '../../src/domain/policy/envelopes.js'
import type { Db, Dialect } from '../../src/store/db.js'
import { migrate } from '../../src/store/migrations/index.js'
import { openDb } from '../../src/store/open.js'
import { AgentRepo } from '../../src/store/repos/agents.js'
import { DestinationRepo } from '../../src/store/repos/destinations.js'
import { KeyRepo } from '../../src/store/repos/keys.js'
import { RecordRepo } from '../../src/store/repos/records.js'
import { RunRepo } from '../../src/store/repos/runs.js'
import { WebhookRepo } from '../../src/store/repos/webhooks.js'
import { backends } from '../support/backends.js'
import { appendRecords } from '../support/record-backlog.js'
import { cloneRuns } from '../support/run-backlog.js'
import { type CapturedStatement, StatementCapture } from '../support/statement-capture.js'

const BACKLOG = 20_000
const WS = 'ws_a'
const AGENT = 'agt_a'
const CONNECTOR = 'conn_a'
/** A finished run of AGENT whose trace is 500 frames long. */
const LONG_TRACE = 'run_done0000000000012340'

/** The repositories of the measured paths, every statement captured. */
function repositories(q: StatementCapture, dialect: Dialect) {
  return {
    runs: new RunRepo(q, dialect),
    agents: new AgentRepo(q),
    keys: new KeyRepo(q),
    records: new RecordRepo(q, dialect),
    webhooks: new WebhookRepo(q),
    destinations: new DestinationRepo(q),
  }
}
type Repositories = ReturnType<typeof repositories>

async function planOf(db: Db, { sql, params }: CapturedStatement): Promise<string[]> {
  if (db.dialect === 'sqlite') {
    return (await db.query<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`, params)).map((r) => r.detail)
  }
  return db.transaction(async (tx) => {
    await tx.exec('SET LOCAL enable_seqscan = off')
    return (await tx.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`, params)).map((r) => r['QUERY PLAN'])
  })
}

/** A plain INSERT ... VALUES writes its row through every index; there is no read to plan. */
const isPlainInsert = (sql: string) => /^\s*INSERT\b/i.test(sql) && !/\bSELECT\b/i.test(sql)

/** An index's name on each store: PostgreSQL names a UNIQUE or PRIMARY KEY constraint's index, SQLite numbers it. */
const BY_ID = {
  runs: /runs_id_key|sqlite_autoindex_runs_1/,
  agents: /agents_id_key|sqlite_autoindex_agents_1/,
  apiKeys: /api_keys_id_key|sqlite_autoindex_api_keys_1/,
  frames: /run_frames_pkey|sqlite_autoindex_run_frames_1/,
  connectors: /connectors_pkey|sqlite_autoindex_connectors_1/,
  records: /ingest_records_pkey|sqlite_autoindex_ingest_records_1/,
  batches: /ingest_batches_pkey|sqlite_autoindex_ingest_batches_1/,
  tasks: /tasks_id_key|sqlite_autoindex_tasks_1/,
}

interface Case {
  name: string
  /** The repository calls the path makes. */
  call(r: Repositories, dialect: Dialect): Promise<unknown>
  /** Per statement, in order: the indexes its plan must name. */
  indexes: RegExp[][] | ((dialect: Dialect) => RegExp[][])
  /**
   * Why a sort in this case's plans is bounded by something other than the table (a sort of the rows an index
   * range already selected, never the table's): allowed then, with its reason.
   */
  boundedSort?: string
}

const CASES: Case[] = [
  {
    name: 'GET /v1/runs/{id}: the key, then the run by id (PostgreSQL: with its row version, or that alone)',
    call: async (r, dialect) => {
      await r.keys.byId('key_a')
      if (dialect === 'sqlite') {
        await r.runs.get(WS, 'run_done0000000000012345')
        return
      }
      await r.runs.getVersioned(WS, 'run_done0000000000012345')
      // The group read of many GETs' versions (src/store/repos/run-versions.ts): each key through the id index.
      await r.runs.versionsOf([
        { workspaceId: WS, id: 'run_done0000000000012345' },
        { workspaceId: WS, id: 'run_done0000000000012346' },
      ])
    },
    indexes: (dialect) =>
      dialect === 'sqlite'
        ? [[BY_ID.apiKeys], [BY_ID.runs]]
        : // The group read: one index lookup per key (a loop over the keys), not a join that reads the index whole.
          [
            [BY_ID.apiKeys],
            [BY_ID.runs],
            [/Nested Loop/, /Index Scan using runs_id_key on runs r\b[^\n]*\n\s+Index Cond: \(id = q\.id\)/],
          ],
  },
  {
    name: 'GET /v1/agents: a page of agents and their live runs',
    call: async (r) => {
      const page = await r.agents.list(WS, 0, 20)
      await r.runs.countActiveByAgents(
        WS,
        page.rows.map((a) => a.id),
      )
    },
    indexes: [[/agents_workspace/], [/runs_agent_active\b/]],
  },
  {
    name: 'GET /v1/agents/{id}/runs: the agent, then a page of its runs from deep in the list',
    call: async (r) => {
      await r.agents.get(WS, AGENT)
      await r.runs.listByAgent(WS, AGENT, 15_000, 50)
    },
    indexes: [[BY_ID.agents], [/runs_agent\b/]],
  },
  {
    name: 'GET /v1/runs/{id}/trace: a page of frames',
    call: (r) => r.runs.frames(LONG_TRACE, 200, 50),
    indexes: [[BY_ID.frames]],
    // PostgreSQL's statistics see about five frames per run; for this long trace it may then read the page's range
    // of the primary key and sort it rather than walk the range in order (which sample ANALYZE took decides).
    boundedSort: "one run's frames after the cursor, a primary-key range",
  },
  {
    name: 'GET /v1/grid/connectors/{id}/records: the connector, a page of records, their batches leaves',
    call: async (r) => {
      await r.records.connectorLastSeq(WS, CONNECTOR)
      const page = await r.records.after(WS, CONNECTOR, 12_345, 50)
      await r.records.batchLeaves([...new Set(page.rows.map((x) => x.batchId))])
    },
    indexes: [[BY_ID.connectors], [BY_ID.records], [BY_ID.batches, BY_ID.records]],
    boundedSort: "a page's batches' leaves (at most two batches of 500), found by primary-key ranges",
  },
  {
    name: 'the scheduler: claim the next runs, drive one (lock, renew, save, frame, task) and release it',
    call: async (r) => {
      const now = Date.now()
      const [id] = (await r.runs.claimNext('owner-plan', now, now + 30_000, 4)).ids
      if (!id) throw new Error('nothing claimable')
      const run = await r.runs.lock(id)
      if (!run) throw new Error(`run ${id} vanished`)
      await r.runs.claim(id, 'owner-plan', now, now + 30_000)
      await r.runs.save({ ...run, status: 'running', updatedAt: now })
      await r.runs.followTask('task_plan', id, 'running', null, now)
      await r.runs.release(id, 'owner-plan')
    },
    indexes: (dialect) => [
      // SQLite looks before it takes the write lock: the first entry of the same walk.
      ...(dialect === 'sqlite' ? [[/runs_claim\b/]] : []),
      [/runs_claim\b/, BY_ID.runs],
      [BY_ID.runs],
      [BY_ID.runs],
      [BY_ID.runs],
      [BY_ID.tasks],
      [BY_ID.runs],
    ],
  },
  {
    // Made after every commit that appends an event, however many subscriptions were deleted before.
    name: 'the outbox fan-out: the oldest live subscription of each channel',
    call: async (r) => {
      await r.webhooks.minAfterSeq()
      await r.destinations.minAfterSeq()
    },
    indexes: [[/webhooks_active_after\b/], [/destinations_active_after\b/]],
  },
  {
    name: "DELETE /v1/agents/{id}: the agent's live runs",
    call: (r) => r.runs.activeIdsByAgent(WS, AGENT),
    indexes: [[/runs_agent_active\b/]],
  },
]

describe.each(backends())('hot queries on $name', (backend) => {
  let db: Db
  beforeAll(async () => {
    db = await openDb(await backend.freshUrl())
    await migrate(db)
    await seed(db)
  }, 120_000)
  afterAll(async () => {
    await db?.close()
  })

  it('the claim answers the oldest of the highest priority first, each run once, and counts lapsed leases', async () => {
    const runs = new RunRepo(db, db.dialect)
    const now = Date.now()
    expect(await runs.claimNext('owner-a', now, now + 30_000, 3)).toEqual({
      ids: ['run_template', 'run_todo0000000000000001', 'run_todo0000000000000002'],
      takenOver: 0,
    })
    // Leased now: the next claim, by another owner, goes on from there.
    expect(await runs.claimNext('owner-b', now, now + 30_000, 2)).toEqual({
      ids: ['run_todo0000000000000003', 'run_todo0000000000000004'],
      takenOver: 0,
    })
    // Once those leases have lapsed (owners that died), a third owner takes them over first, and says so.
    const later = now + 60_000
    expect(await runs.claimNext('owner-c', later, later + 30_000, 5)).toEqual({
      ids: [
        'run_template',
        'run_todo0000000000000001',
        'run_todo0000000000000002',
        'run_todo0000000000000003',
        'run_todo0000000000000004',
      ],
      takenOver: 5,
    })
    // Its own lapsed leases are renewed, not taken over; a free run is claimed.
    const latest = later + 60_000
    expect(await runs.claimNext('owner-c', latest, latest + 30_000, 6)).toMatchObject({ takenOver: 0 })
  })

  it.runIf(backend.name === 'postgres')(
    'replicas claiming at once take different runs, without waiting for each other',
    async () => {
      const now = Date.now()
      // One replica's claim is still uncommitted (its rows locked) when another claims: that one skips the locked
      // runs and takes the next. Without SKIP LOCKED it would wait for the first to commit, here for ever (the
      // test fails on its timeout); without the lock it could lease the same runs again.
      const [first, second] = await db.transaction(async (tx) => {
        const mine = (await new RunRepo(tx, 'postgres').claimNext('replica-1', now, now + 30_000, 3)).ids
        const theirs = (await new RunRepo(db, 'postgres').claimNext('replica-2', now, now + 30_000, 3)).ids
        return [mine, theirs]
      })
      expect(first).toHaveLength(3)
      expect(second).toHaveLength(3)
      expect(first.filter((id) => second.includes(id))).toEqual([])
      const owners = await db.query<{ id: string; lease_owner: string }>(
        `SELECT id, lease_owner FROM runs WHERE lease_owner IN ('replica-1', 'replica-2') ORDER BY seq`,
      )
      expect(owners.map((r) => `${r.id}:${r.lease_owner}`).sort()).toEqual(
        [...first.map((id) => `${id}:replica-1`), ...second.map((id) => `${id}:replica-2`)].sort(),
      )
    },
    15_000,
  )

  it('the claim walks runs_claim in its order: no sort, no table scan', async () => {
    const q = new StatementCapture(db)
    const now = Date.now()
    await repositories(q, db.dialect).runs.claimNext('owner-c', now, now + 30_000, 5)
    const plan = await planOf(db, q.statements.at(-1) as CapturedStatement)
    if (backend.name === 'sqlite') {
      // "SCAN ... USING INDEX" is SQLite's word for walking an index in order without a seek key; with the LIMIT
      // it stops after the first rows. A bare "SCAN runs" (the table) or a temp B-tree (a sort) would be O(n).
      // The claimed ids are then found by the id's unique index.
      expect(plan).toEqual([
        'SEARCH runs USING COVERING INDEX sqlite_autoindex_runs_1 (id=?)',
        'LIST SUBQUERY 1',
        'SCAN runs USING INDEX runs_claim',
      ])
    } else {
      expect(plan.join('\n')).toMatch(/LockRows[^\n]*\n\s+->\s+Index (Only )?Scan using runs_claim on runs/)
    }
  })

  it.each(CASES)('$name', async ({ call, indexes, boundedSort }) => {
    const q = new StatementCapture(db)
    await call(repositories(q, db.dialect), db.dialect)
    const expected = typeof indexes === 'function' ? indexes(db.dialect) : indexes
    const reads = q.statements.filter((s) => !isPlainInsert(s.sql))
    expect(reads).toHaveLength(expected.length)
    for (const [i, statement] of reads.entries()) {
      const plan = (await planOf(db, statement)).join('\n')
      const where = `${statement.sql}\n--- plan:\n${plan}`
      for (const index of expected[i] ?? []) expect(plan, where).toMatch(index)
      // A table read whole costs what the table holds; so does a sort of rows no index range selected.
      expect(plan, where).not.toMatch(/^SCAN \w+$|Seq Scan/m)
      if (!boundedSort) expect(plan, where).not.toMatch(/TEMP B-TREE|\bSort\b/)
    }
  })
})

async function seed(db: Db): Promise<void> {
  const now = Date.UTC(2026, 0, 1)
  const envelope = ENVELOPES.default
  if (!envelope) throw new Error('no default envelope')
  await new KeyRepo(db).insert({
    id: 'key_a',
    workspaceId: WS,
    identity: 'test',
    scopes: [],
    secretHash: 'x',
    createdAt: now,
    expiresAt: null,
    revokedAt: null,
  })
  const agents = new AgentRepo(db)
  for (let i = 0; i < 40; i++) {
    await agents.insert({
      id: i === 0 ? AGENT : `agt_${String(i).padStart(4, '0')}`,
      workspaceId: WS,
      name: `agent-${i}`,
      behavior: 'autonomous',
      capabilities: [],
      policyEnvelope: 'default',
      createdAt: now,
      updatedAt: now,
    })
  }
  const runs = new RunRepo(db, db.dialect)
  await runs.insert({
    id: 'run_template',
    workspaceId: WS,
    agentId: AGENT,
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
    frameCount: 5,
    stepsCompleted: 0,
    stepsEscalated: 0,
    createdAt: now,
    startedAt: null,
    finishedAt: null,
    updatedAt: now,
  })
  for (let seq = 1; seq <= 5; seq++) {
    await runs.appendFrame('run_template', {
      seq,
      ts: now,
      stepId: null,
      kind: 'run.started',
      tool: null,
      toolId: null,
      policy: null,
      latencyMs: null,
      result: null,
      detail: null,
    })
  }
  await cloneRuns(db, 'run_template', BACKLOG, {
    idPrefix: 'run_done',
    status: 'succeeded',
    withFrames: true,
  })
  await cloneRuns(db, 'run_template', BACKLOG, { idPrefix: 'run_todo', status: 'queued' })
  // Runs spread as in a workspace with many agents: AGENT has every tenth finished run (and the template); the
  // others go to two busier agents, so walking the table in seq order is no shortcut to AGENT's runs.
  await db.run(`UPDATE runs SET agent_id = 'agt_0001' WHERE id LIKE 'run_done%' AND seq % 10 <> 0`)
  await db.run(`UPDATE runs SET agent_id = 'agt_0002' WHERE id LIKE 'run_todo%'`)
  // One long trace, so a page of it is a range of the run's frames, not all of them.
  await db.run(
    `WITH RECURSIVE n(i) AS (SELECT 6 UNION ALL SELECT i + 1 FROM n WHERE i < 500)
     INSERT INTO run_frames (run_id, seq, ts, kind) SELECT $1, i, $2, 'tool.call' FROM n`,
    [LONG_TRACE, now],
  )
  await appendRecords(db, { workspaceId: WS, connectorId: CONNECTOR }, BACKLOG)
  // PostgreSQL's autovacuum keeps statistics in production; the SQLite server never runs ANALYZE, so its plans
  // are the ones SQLite makes without statistics.
  if (db.dialect === 'postgres') await db.exec('ANALYZE')
}
