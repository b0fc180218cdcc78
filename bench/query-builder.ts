/**
 * Would a typed query builder (Kysely) cost the hot path? The same representative statements, on the same SQLite
 * file, through the store's Db (src/store/sqlite.ts: hand-written SQL, placeholder translation) and through Kysely
 * (its own better-sqlite3 connection): a select of one agent by id and workspace, an insert of one agent, and a
 * page of runs. Prints µs per operation. Decision and figures: docs/design.md § Query builder.
 *
 *   npx tsx bench/query-builder.ts [iterations]
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import Database from 'better-sqlite3'
import { type Generated, Kysely, SqliteDialect } from 'kysely'
import { newId } from '../src/domain/ids.js'
import { migrate } from '../src/store/migrations/index.js'
import { AgentRepo } from '../src/store/repos/agents.js'
import { SqliteDb } from '../src/store/sqlite/db.js'

const iterations = Math.max(100, Math.min(Number(process.argv[2] ?? 5000), 50_000))
const path = join(mkdtempSync(join(tmpdir(), 'agentops-qb-')), 'bench.db')

interface AgentTable {
  seq: Generated<number>
  id: string
  workspace_id: string
  name: string
  behavior: string
  capabilities: string
  policy_envelope: string
  created_at: number
  updated_at: number
  deleted_at: number | null
}
interface RunTable {
  seq: Generated<number>
  id: string
  workspace_id: string
  agent_id: string
  status: string
}

const db = SqliteDb.open(`sqlite:${path}`)
await migrate(db)
const repo = new AgentRepo(db)
const raw = new Database(path)
raw.pragma('journal_mode = WAL')
raw.pragma('busy_timeout = 5000')
const kysely = new Kysely<{ agents: AgentTable; runs: RunTable }>({
  dialect: new SqliteDialect({ database: raw }),
})

const WS = 'ws_bench'
const now = Date.now()
const agent = (name: string) => ({
  id: newId('agt', now),
  workspaceId: WS,
  name,
  behavior: 'autonomous' as const,
  capabilities: ['echo'],
  policyEnvelope: 'default',
  createdAt: now,
  updatedAt: now,
})
const seeded = agent('seed')
await repo.insert(seeded)
for (let i = 0; i < 60; i++) {
  await db.run(
    `INSERT INTO runs (id, workspace_id, agent_id, task_id, status, paused_from, mode, trace_level, inputs, envelope,
       behavior, caller, priority, plan, next_step, in_flight_step, tool_calls, approved, awaiting, results, outcome,
       frame_count, lease_owner, lease_until, created_at, started_at, finished_at, updated_at)
     VALUES ($1,$2,$3,NULL,'succeeded',NULL,'live','summary','{}','{}','autonomous','{}',3,'[]',0,NULL,0,'[]','[]','[]',
       NULL,0,NULL,0,$4,NULL,NULL,$4)`,
    [newId('run', now), WS, seeded.id, now],
  )
}

async function measure(label: string, op: (i: number) => Promise<unknown>): Promise<number> {
  for (let i = 0; i < Math.min(500, iterations); i++) await op(i) // warm-up: JIT and statement caches
  const started = performance.now()
  for (let i = 0; i < iterations; i++) await op(i)
  const us = ((performance.now() - started) * 1000) / iterations
  console.log(`${label.padEnd(44)} ${us.toFixed(1).padStart(8)} µs/op`)
  return us
}

console.log(`${iterations} iterations each, SQLite file ${path}\n`)
const rows: [string, number, number][] = []
rows.push([
  'select agent by id',
  await measure('Db + AgentRepo.get', () => repo.get(WS, seeded.id)),
  await measure('Kysely selectFrom(agents)', () =>
    kysely
      .selectFrom('agents')
      .selectAll()
      .where('id', '=', seeded.id)
      .where('workspace_id', '=', WS)
      .where('deleted_at', 'is', null)
      .executeTakeFirst(),
  ),
])
rows.push([
  'insert agent (RETURNING *)',
  await measure('Db + AgentRepo.insert', (i) => repo.insert(agent(`db-${i}`))),
  await measure('Kysely insertInto(agents)', (i) => {
    const a = agent(`k-${i}`)
    return kysely
      .insertInto('agents')
      .values({
        id: a.id,
        workspace_id: a.workspaceId,
        name: a.name,
        behavior: a.behavior,
        capabilities: JSON.stringify(a.capabilities),
        policy_envelope: a.policyEnvelope,
        created_at: a.createdAt,
        updated_at: a.updatedAt,
      })
      .returningAll()
      .executeTakeFirst()
  }),
])
rows.push([
  'page of 51 runs by agent',
  await measure('Db.query (hand-written SQL)', () =>
    db.query(
      'SELECT * FROM runs WHERE workspace_id = $1 AND agent_id = $2 AND seq > $3 ORDER BY seq LIMIT $4',
      [WS, seeded.id, 0, 51],
    ),
  ),
  await measure('Kysely selectFrom(runs)', () =>
    kysely
      .selectFrom('runs')
      .selectAll()
      .where('workspace_id', '=', WS)
      .where('agent_id', '=', seeded.id)
      .where('seq', '>', 0)
      .orderBy('seq')
      .limit(51)
      .execute(),
  ),
])

console.log('\nstatement                        Db µs/op  Kysely µs/op  Kysely/Db')
for (const [name, ours, theirs] of rows) {
  console.log(
    `${name.padEnd(32)} ${ours.toFixed(1).padStart(8)} ${theirs.toFixed(1).padStart(12)} ${(theirs / ours).toFixed(2).padStart(10)}`,
  )
}
await kysely.destroy()
await db.close()
