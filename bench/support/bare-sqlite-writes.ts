/**
 * The store's share of a fresh keyed POST /v1/agents on SQLite, without the server around it: the statements the
 * reference runs for one (the key's read, the agent, its `agent.created` event and the key's stored answer, in a
 * savepoint of a transaction committed once per turn of the event loop, as src/store/sqlite/db.ts groups commits),
 * on a store made by the reference's own migrations with its pragmas, issued straight on better-sqlite3. bench:http
 * puts it behind bare Hono's POST route: the reference can cost no less than that side, so the ratio between the
 * two is what the server's own work (auth, limits, validation, idempotency, events, observation) costs.
 */
import { hash, randomBytes } from 'node:crypto'
import Database from 'better-sqlite3'
import { migrate } from '../../src/store/migrations/index.js'
import { SQLITE_PRAGMAS, SqliteDb } from '../../src/store/sqlite/db.js'

const WORKSPACE = 'ws_bench'
const DAY_MS = 24 * 60 * 60 * 1000

/** A resolver per request, answered once the transaction holding its writes is committed. */
export async function bareSqliteWrites(
  url: string,
): Promise<(body: Record<string, unknown>, key: string) => Promise<string>> {
  const migrated = SqliteDb.open(url)
  await migrate(migrated)
  await migrated.close()
  const path = url.replace(/^sqlite:(\/\/)?/, '')
  const db = new Database(path)
  for (const pragma of SQLITE_PRAGMAS) db.pragma(pragma)
  const begin = db.prepare('BEGIN IMMEDIATE')
  const commit = db.prepare('COMMIT')
  const savepoint = db.prepare('SAVEPOINT tx')
  const release = db.prepare('RELEASE tx')
  const readKey = db.prepare('SELECT * FROM idempotency_keys WHERE workspace_id = ? AND idem_key = ?')
  const insertAgent = db.prepare(
    'INSERT INTO agents (id, workspace_id, name, behavior, capabilities, policy_envelope, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  )
  const insertEvent = db.prepare(
    'INSERT INTO events (id, workspace_id, kind, ts, subject_id, data) VALUES (?, ?, ?, ?, ?, ?)',
  )
  const insertAnswer = db.prepare(
    `INSERT INTO idempotency_keys (workspace_id, idem_key, fingerprint, state, status, headers, body, locked_until,
      created_at, expires_at) VALUES (?, ?, ?, 'done', 201, ?, ?, ?, ?, ?)`,
  )
  const prefix = randomBytes(6).toString('hex')
  let sequence = 0
  let waiting: (() => void)[] | null = null

  return async (body, key) => {
    const now = Date.now()
    const n = ++sequence
    const agentId = `agt_${prefix}${String(n).padStart(14, '0')}`
    if (!waiting) {
      begin.run()
      const batch: (() => void)[] = []
      waiting = batch
      setImmediate(() => {
        waiting = null
        commit.run()
        for (const done of batch) done()
      })
    }
    savepoint.run()
    readKey.get(WORKSPACE, key)
    const agent = JSON.stringify({ agent_id: agentId, ...body })
    insertAgent.run(agentId, WORKSPACE, String(body.name), String(body.behavior), '[]', '{}', now, now)
    insertEvent.run(
      `evt_${prefix}${String(n).padStart(14, '0')}`,
      WORKSPACE,
      'agent.created',
      now,
      agentId,
      agent,
    )
    const print = hash('sha256', agent, 'hex')
    insertAnswer.run(
      WORKSPACE,
      key,
      print,
      '{"content-type":"application/json"}',
      agent,
      now,
      now,
      now + DAY_MS,
    )
    release.run()
    const batch = waiting
    await new Promise<void>((resolve) => batch.push(resolve))
    return agentId
  }
}
