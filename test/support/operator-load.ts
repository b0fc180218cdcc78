/**
 * An embedded store under an operator's worst case: a real `agentops serve` draining a large backlog of queued runs
 * while clients ingest back to back, so its writer commits one group after another. Used by the operator-writes
 * test and by `npm run bench:operator`, which run `agentops keys create` / `keys revoke` beside it.
 */
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { loadConfig } from '../../src/config.js'
import { systemClock } from '../../src/domain/clock.js'
import { createServices } from '../../src/services.js'
import { migrate } from '../../src/store/migrations/index.js'
import { SqliteDb } from '../../src/store/sqlite/db.js'
import { type Replica, startReplica } from './cluster.js'
import { cloneRuns } from './run-backlog.js'
import { testTempDir } from './temp.js'

export interface OperatorLoadOptions {
  /** Queued runs the server starts with. */
  backlog: number
  /** Keys issued beforehand for the operator to revoke. */
  revocable: number
  /** Ingest clients beside the drain, each sending batches of `ingestBatch` records back to back. */
  ingestClients: number
  ingestBatch: number
}

export interface OperatorLoad {
  url: string
  server: Replica
  /** Keys to revoke, with their tokens (to check they are refused afterwards). */
  revocable: { keyId: string; token: string }[]
  /** Runs still queued, read from the store file. */
  queued(): number
  /** Ingest batches accepted so far. */
  batches(): number
  /** The answer's status to a GET with this bearer token. */
  status(path: string, bearer: string): Promise<number>
  /** Ends the ingest and the server (idempotent); rejects if an ingest batch was refused. */
  stop(): Promise<void>
}

/**
 * Seeds a fresh store (a key whose quota the load never reaches, the revocable keys, the backlog: copies of one run
 * started through the service), starts the server and the ingest, and resolves once both the drain and the ingest
 * are under way (bounded: 60 s).
 */
export async function startOperatorLoad(options: OperatorLoadOptions): Promise<OperatorLoad> {
  const path = join(testTempDir('operator-'), 'busy.sqlite')
  const url = `sqlite:${path}`
  const seeded = SqliteDb.open(url)
  let token = ''
  const revocable: { keyId: string; token: string }[] = []
  try {
    await migrate(seeded)
    const services = createServices({
      db: seeded,
      clock: systemClock,
      config: loadConfig({}, { databaseUrl: url, workers: false }),
    })
    const key = await services.keyAdmin.issue({
      workspace: 'ops',
      tier: 'enterprise',
      limitPerHour: 1e9,
      burstLimit: 1e9,
    })
    token = key.token
    for (let i = 0; i < options.revocable; i++) {
      const other = await services.keyAdmin.issue({ workspace: 'ops' })
      revocable.push({ keyId: other.key_id, token: other.token })
    }
    const agent = await services.agents.create(key.workspace_id, {
      name: 'backlog',
      behavior: 'autonomous',
      capabilities: [],
    })
    const { run } = await services.runs.start(
      key.workspace_id,
      agent.id,
      {},
      { keyId: key.key_id, identity: key.identity, scopes: key.scopes },
    )
    await cloneRuns(seeded, run.id, options.backlog - 1, { idPrefix: 'run_q', status: 'queued' })
    await services.changes.flush()
  } finally {
    await seeded.close()
  }

  const reader = new Database(path, { readonly: true })
  const queued = () =>
    (reader.prepare("SELECT COUNT(*) AS c FROM runs WHERE status = 'queued'").get() as { c: number }).c
  const server = await startReplica(0, url)
  let ingesting = true
  let batches = 0
  const ingest = async (n: number) => {
    for (let i = 0; ingesting; i++) {
      const res = await fetch(`${server.url}/v1/grid/connectors/ops-${n}/ingest`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          records: Array.from({ length: options.ingestBatch }, (_, r) => ({
            id: `${n}-${i}-${r}`,
            ts: '2026-11-27T06:00:00Z',
            source: 'ops',
            policy_class: 'internal',
            body: { r },
          })),
        }),
      })
      await res.arrayBuffer()
      if (res.status !== 202) throw new Error(`ingest: ${res.status}`)
      batches++
    }
  }
  const clients = Promise.all(Array.from({ length: options.ingestClients }, (_, n) => ingest(n)))
  let stopped: Promise<void> | undefined
  const stop = () => {
    stopped ??= (async () => {
      ingesting = false
      try {
        await clients
      } finally {
        reader.close()
        server.kill('SIGTERM')
        await server.exited
      }
    })()
    return stopped
  }
  try {
    const deadline = Date.now() + 60_000
    while (queued() > options.backlog - 200 || batches < 20) {
      if (Date.now() > deadline) throw new Error(`no load after 60 s: ${queued()} queued, ${batches} batches`)
      await new Promise((r) => setTimeout(r, 20))
    }
  } catch (err) {
    await stop().catch(() => undefined)
    throw err
  }
  return {
    url,
    server,
    revocable,
    queued,
    batches: () => batches,
    status: async (path, bearer) => {
      const res = await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${bearer}` } })
      await res.arrayBuffer()
      return res.status
    },
    stop,
  }
}
