/**
 * Whether the read paths cost more as the data grows: latency (p50, p99) of GET /v1/runs/{id}, the agents page
 * (each agent with its live-run count), a page of one agent's runs from a random depth, a trace page, and a page
 * of a connector's records with their inclusion proofs from a random depth, at a small and a large store: 1,000
 * then 100,000 runs (every one of the same agent, 10 trace frames each) and 1,000 then 1,000,000 records in one
 * connector, on SQLite and on PostgreSQL (when one can be started: test/support/postgres.ts).
 *
 *   npm run bench:growth -- [--runs 1000,100000] [--records 1000,1000000] [--requests <n>] [--no-postgres]
 *
 * Per store and size: one template run goes through the service and the scheduler (4 echo tools: 10 frames), then
 * the store is grown straight through SQL, many rows per statement (test/support/run-backlog.ts, record-backlog.ts),
 * so a run of this script takes minutes, not hours; PostgreSQL's statistics are brought up to date as its
 * autovacuum would. Each size is a database of its own with a server of its own (default settings, in its own
 * process), all running at once: one client asks them in turn, one request at a time over one keep-alive connection
 * each, `--requests` times per request kind and size (default 300, after 50 not counted), each time for another
 * random run or page. So the sizes are compared a request apart, under the same load of a shared machine. Deep pages are asked for with cursors signed by the
 * server's cursor secret (AGENTOPS_CURSOR_SECRET, set for the run). Loopback only; every loop is bounded.
 *
 * Random runs: the server keeps 5,000 runs in memory, so at 1,000 runs GET /v1/runs/{id} is mostly answered from
 * memory and at 100,000 mostly from the store; that difference is the cache's, not an index's.
 */
import type { ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { Agent } from 'node:http'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { CursorKeyring } from '../src/domain/cursors.js'
import { openDb } from '../src/store/open.js'
import { appendRecords } from '../test/support/record-backlog.js'
import { cloneRuns } from '../test/support/run-backlog.js'
import { onPostgres } from './support/postgres.js'
import { seedStore, startRun } from './support/seed.js'
import { getStatus as get, startServerChild, stopServerChild } from './support/server-child.js'

const args = process.argv.slice(2)
const option = (name: string): string | undefined => {
  const i = args.indexOf(name)
  return i >= 0 ? args[i + 1] : undefined
}
const sizes = (name: string, fallback: string, max: number) =>
  (option(name) ?? fallback)
    .split(',')
    .map(Number)
    .filter((n) => Number.isSafeInteger(n) && n >= 1 && n <= max)
    .sort((a, b) => a - b)
const RUN_SIZES = sizes('--runs', '1000,100000', 1_000_000)
const RECORD_BATCH = 500
const RECORD_SIZES = sizes('--records', '1000,1000000', 10_000_000).map(
  (n) => Math.ceil(n / RECORD_BATCH) * RECORD_BATCH,
)
const REQUESTS = Math.min(5_000, Math.max(10, Number(option('--requests') ?? 300)))
const WARMUP = 50
const CONNECTOR = 'growth-connector'
const RUN_PREFIX = 'run_g'
const CURSOR_SECRET = randomBytes(32).toString('base64url')
const cursors = new CursorKeyring([CURSOR_SECRET])

interface Fixture {
  token: string
  workspaceId: string
  agentId: string
  templateRunId: string
  /** Runs and records in the store now. */
  runs: number
  records: number
}

interface Figure {
  store: string
  request: string
  runs: number
  records: number
  p50: number
  p99: number
}

/** A key, 20 agents (one with four echo tools), and one run of it driven to its end through the scheduler. */
function foundation(databaseUrl: string): Promise<Fixture> {
  return seedStore(databaseUrl, 'growth', async (services, key) => {
    const tools = ['echo-1', 'echo-2', 'echo-3', 'echo-4']
    for (const name of tools) {
      await services.tools.register(key.workspace_id, {
        name,
        provider: 'builtin:echo',
        policy_binding: { envelope: 'default', required_scopes: [] },
      })
    }
    const agent = await services.agents.create(key.workspace_id, {
      name: 'growth-busy',
      behavior: 'autonomous',
      capabilities: tools,
    })
    for (let i = 1; i < 20; i++) {
      await services.agents.create(key.workspace_id, {
        name: `growth-idle-${i}`,
        behavior: 'autonomous',
        capabilities: [],
      })
    }
    const runId = await startRun(services.runs, key, agent.id)
    services.scheduler.start()
    const deadline = performance.now() + 30_000
    while ((await services.runs.get(key.workspace_id, runId)).run.status !== 'succeeded') {
      if (performance.now() > deadline) throw new Error('the template run did not succeed within 30 s')
      await new Promise((r) => setTimeout(r, 20))
    }
    await services.scheduler.stop()
    return {
      token: key.token,
      workspaceId: key.workspace_id,
      agentId: agent.id,
      templateRunId: runId,
      runs: 1,
      records: 0,
    }
  })
}

/** Grows the store to `runs` runs and `records` records, many rows per statement. */
async function grow(databaseUrl: string, f: Fixture, runs: number, records: number): Promise<void> {
  const db = await openDb(databaseUrl)
  try {
    if (runs > f.runs) {
      await cloneRuns(db, f.templateRunId, runs - f.runs, {
        idPrefix: RUN_PREFIX,
        status: 'succeeded',
        firstNumber: f.runs,
        withFrames: true,
      })
      f.runs = runs
    }
    if (records > f.records) {
      await appendRecords(db, { workspaceId: f.workspaceId, connectorId: CONNECTOR }, records - f.records)
      f.records = records
    }
    if (db.dialect === 'postgres') await db.exec('ANALYZE')
  } finally {
    await db.close()
  }
}

const runId = (f: Fixture, n: number) =>
  n === 0 ? f.templateRunId : `${RUN_PREFIX}${String(n).padStart(16, '0')}`

const pick = (n: number) => Math.floor(Math.random() * n)

/** The request kinds, each a path for the i-th request (random run or depth). */
function requestKinds(f: Fixture): { name: string; path: () => string }[] {
  const ws = f.workspaceId
  return [
    { name: 'GET /v1/runs/{id}', path: () => `/v1/runs/${runId(f, pick(f.runs))}` },
    { name: 'GET /v1/agents?limit=20 (with live-run counts)', path: () => '/v1/agents?limit=20' },
    {
      name: 'GET /v1/agents/{id}/runs?limit=50, random depth',
      path: () => {
        // The agent's runs are seq 1..runs (the template first): a cursor after a random one of them.
        const after = pick(f.runs)
        const cursor = after === 0 ? '' : `&cursor=${cursors.encode(ws, 'runs', after)}`
        return `/v1/agents/${f.agentId}/runs?limit=50${cursor}`
      },
    },
    {
      name: 'GET /v1/runs/{id}/trace?limit=50',
      path: () => `/v1/runs/${runId(f, pick(f.runs))}/trace?limit=50`,
    },
    {
      name: 'GET /v1/grid/connectors/{id}/records?limit=100 (with proofs), random depth',
      path: () => {
        const after = pick(f.records)
        const cursor = after === 0 ? '' : `&cursor=${cursors.encode(ws, `records:${CONNECTOR}`, after)}`
        return `/v1/grid/connectors/${CONNECTOR}/records?limit=100${cursor}`
      },
    },
  ]
}

/**
 * Every size at once, each store in its own server: the client asks the servers in turn, one request each, so the
 * sizes are compared under the same load of the (shared) machine, a request apart.
 */
async function measure(store: string, stores: { url: string; fixture: Fixture }[]): Promise<Figure[]> {
  const servers: { url: string; child: ChildProcess; fixture: Fixture; agent: Agent }[] = []
  const figures: Figure[] = []
  try {
    for (const s of stores) {
      const { url, child } = await startServerChild<{ url: string }>({
        script: 'queue-server.ts',
        args: [s.url],
        env: { AGENTOPS_CURSOR_SECRET: CURSOR_SECRET },
      })
      servers.push({ url, child, fixture: s.fixture, agent: new Agent({ keepAlive: true, maxSockets: 1 }) })
    }
    const kinds = servers.map((s) => requestKinds(s.fixture))
    for (const [k, kind] of (kinds[0] ?? []).entries()) {
      const latencies = servers.map((): number[] => [])
      for (let i = 0; i < WARMUP + REQUESTS; i++) {
        for (const [n, server] of servers.entries()) {
          const path = (kinds[n]?.[k] ?? kind).path()
          const started = performance.now()
          const status = await get(server.agent, `${server.url}${path}`, server.fixture.token)
          if (status !== 200) throw new Error(`${path} answered ${status}`)
          if (i >= WARMUP) latencies[n]?.push(performance.now() - started)
        }
      }
      for (const [n, server] of servers.entries()) {
        const sorted = (latencies[n] ?? []).sort((a, b) => a - b)
        const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN
        const { runs, records } = server.fixture
        figures.push({ store, request: kind.name, runs, records, p50: at(0.5), p99: at(0.99) })
      }
    }
  } finally {
    for (const s of servers) {
      s.agent.destroy()
      await stopServerChild(s.child)
    }
  }
  return figures
}

/** One database per size, built side by side, then measured together. */
async function measureStore(store: string, newDatabase: () => Promise<string>): Promise<Figure[]> {
  const started = performance.now()
  const steps = Math.max(RUN_SIZES.length, RECORD_SIZES.length)
  const stores: { url: string; fixture: Fixture }[] = []
  for (let step = 0; step < steps; step++) {
    const runs = RUN_SIZES[Math.min(step, RUN_SIZES.length - 1)] ?? 1
    const records = RECORD_SIZES[Math.min(step, RECORD_SIZES.length - 1)] ?? RECORD_BATCH
    const url = await newDatabase()
    const fixture = await foundation(url)
    const grown = performance.now()
    await grow(url, fixture, runs, records)
    console.error(
      `  ${store}: ${runs.toLocaleString('en-US')} runs, ${records.toLocaleString('en-US')} records (grown in ${((performance.now() - grown) / 1000).toFixed(1)} s; load average ${loadavg()[0]?.toFixed(1)})`,
    )
    stores.push({ url, fixture })
  }
  const figures = await measure(store, stores)
  console.error(`  ${store}: done in ${((performance.now() - started) / 1000).toFixed(0)} s`)
  return figures
}

const load = { start: loadavg()[0] ?? NaN, max: loadavg()[0] ?? NaN }
const results: Figure[] = []
const sqliteDir = mkdtempSync(join(tmpdir(), 'agentops-growth-bench-'))
try {
  let n = 0
  results.push(...(await measureStore('SQLite', async () => `sqlite:${join(sqliteDir, `growth-${++n}.db`)}`)))
} finally {
  rmSync(sqliteDir, { recursive: true, force: true })
}
load.max = Math.max(load.max, loadavg()[0] ?? NaN)
if (!args.includes('--no-postgres')) {
  await onPostgres(async (newDatabase) => {
    results.push(...(await measureStore('PostgreSQL', newDatabase)))
  })
}
load.max = Math.max(load.max, loadavg()[0] ?? NaN)

// One row per store and request kind; one column pair per size, and the large size's p50 over the small one's.
const fmt = (ms: number) => `${ms.toFixed(2)} ms`
const sizeLabel = (r: Figure, request: string) =>
  request.includes('records')
    ? `${r.records.toLocaleString('en-US')} records`
    : `${r.runs.toLocaleString('en-US')} runs`
const stores = [...new Set(results.map((r) => r.store))]
const kinds = [...new Set(results.map((r) => r.request))]
console.log('\n| store | request | size | p50 | p99 | p50 vs the smallest size |')
console.log('|---|---|---:|---:|---:|---:|')
for (const store of stores) {
  for (const request of kinds) {
    const rows = results.filter((r) => r.store === store && r.request === request)
    const base = rows[0]?.p50 ?? NaN
    for (const r of rows) {
      console.log(
        `| ${store} | ${request} | ${sizeLabel(r, request)} | ${fmt(r.p50)} | ${fmt(r.p99)} | ${(r.p50 / base).toFixed(2)}× |`,
      )
    }
  }
}
console.log(
  `\n${REQUESTS} requests per row, one at a time; load average (1 min) ${load.start.toFixed(1)} at the start, up to ${load.max.toFixed(1)}`,
)
