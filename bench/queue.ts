/**
 * How a backlog of queued runs affects the server: drain rate (runs finished per second while the backlog is
 * there) and the latency of GET /v1/runs/{id} meanwhile, at 100, 10,000 and 100,000 queued runs, on SQLite and on
 * PostgreSQL (when one can be started: test/support/postgres.ts). Target: drain >= 500 runs/s and GET p50 <= 3 ms
 * at every size, i.e. neither depends on the backlog.
 *
 *   npm run bench:queue -- [--sizes 100,10000,100000] [--seconds <max drain window>] [--no-postgres]
 *                           [--profile <dir>]
 *
 * Per store and size: a fresh database; the backlog is written straight into the store (copies of one run made
 * through the service, many rows per statement: test/support/run-backlog.ts); then the server starts in its own
 * process (default settings: 4 runs driven at once) and drains it, while this process asks for random runs of the
 * backlog one GET at a time over one keep-alive connection. The server first drains 200 warm-up runs of a higher
 * priority (its start and JIT compilation are not timed); the window opens at the first poll (every 20 ms) that sees
 * them done, with the backlog whole, and ends when the queue is empty or after --seconds (default 5). GETs are
 * counted in the window only. Loopback only; every loop is bounded.
 *
 * --profile writes a V8 CPU profile of each server process (node --cpu-prof) into <dir>: the drain path's hot spots.
 */
import { mkdtempSync } from 'node:fs'
import { Agent } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { type Db, openDb } from '../src/store/db.js'
import { cloneRuns } from '../test/support/run-backlog.js'
import { onPostgres } from './support/postgres.js'
import { seedStore, startRun } from './support/seed.js'
import { getStatus as get, startServerChild, stopServerChild } from './support/server-child.js'

const args = process.argv.slice(2)
const option = (name: string): string | undefined => {
  const i = args.indexOf(name)
  return i >= 0 ? args[i + 1] : undefined
}
const SIZES = (option('--sizes') ?? '100,10000,100000')
  .split(',')
  .map(Number)
  .filter((n) => Number.isSafeInteger(n) && n >= 1 && n <= 1_000_000)
const WINDOW_MS = Math.min(60, Math.max(1, Number(option('--seconds') ?? 5))) * 1000
const PROFILE_DIR = option('--profile')
/** Drained before the window opens; bounded in time like everything else. */
const WARM_UP_RUNS = 200
const WARM_UP_LIMIT_MS = 60_000
const TARGET_DRAIN = 500
const TARGET_P50_MS = 3

interface Seeded {
  token: string
  ids: string[]
}

/** A key, an agent, one run through the service, then `size - 1` copies of it straight into the store. */
function seed(databaseUrl: string, size: number): Promise<Seeded> {
  return seedStore(databaseUrl, 'bench', async (services, key, db) => {
    const agent = await services.agents.create(key.workspace_id, {
      name: 'queue-bench',
      behavior: 'autonomous',
      capabilities: [],
    })
    const runId = await startRun(services.runs, key, agent.id)
    await cloneRuns(db, runId, size - 1, { idPrefix: 'run_q', status: 'queued' })
    // Claimed first (higher priority): the server's first runs, which pay for its JIT compilation, are not timed.
    await cloneRuns(db, runId, WARM_UP_RUNS, { idPrefix: 'run_w', status: 'queued' })
    await db.run(`UPDATE runs SET priority = 9 WHERE id LIKE 'run_w%'`)
    const ids = [runId]
    for (let i = 1; i < Math.min(size, 5_000); i++) ids.push(`run_q${String(i).padStart(16, '0')}`)
    return { token: key.token, ids }
  })
}

/** Whether any run is left to drive: the first entry of runs_claim, an O(log n) read whatever the backlog. */
async function anyLeft(db: Db): Promise<boolean> {
  return (await db.one(`SELECT id FROM runs WHERE status IN ('queued', 'running') LIMIT 1`)) !== undefined
}

/** Runs finished so far: one count at each end of the window (a scan; polling it would load the machine). */
async function finished(db: Db): Promise<number> {
  const row = await db.one<{ n: number | string }>(
    `SELECT COUNT(*) AS n FROM runs WHERE status NOT IN ('queued', 'running')`,
  )
  return Number(row?.n ?? 0)
}

/** Whether a warm-up run is left: priority 9 leads runs_claim, so this is one index probe. */
async function anyWarmUpLeft(db: Db): Promise<boolean> {
  return (
    (await db.one(`SELECT id FROM runs WHERE status IN ('queued', 'running') AND priority = 9 LIMIT 1`)) !==
    undefined
  )
}

interface Figures {
  store: string
  size: number
  drained: number
  seconds: number
  drainPerSecond: number
  gets: number
  p50: number
  p99: number
}

async function measure(store: string, databaseUrl: string, size: number): Promise<Figures> {
  const seedStarted = performance.now()
  const { token, ids } = await seed(databaseUrl, size)
  const seedMs = performance.now() - seedStarted
  const counter = await openDb(databaseUrl)
  const { url, child } = await startServerChild<{ url: string }>({
    script: 'queue-server.ts',
    args: [databaseUrl],
    nodeArgs: PROFILE_DIR ? ['--cpu-prof', '--cpu-prof-dir', PROFILE_DIR] : [],
  })
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  try {
    const started = performance.now()
    let deadline = started + WARM_UP_LIMIT_MS
    let done = false
    // The window: from the first poll that sees the warm-up runs drained to the end.
    let from: { at: number; finished: number } | undefined
    const latencies: number[] = []
    const getter = (async () => {
      let i = 0
      while (!done && performance.now() < deadline) {
        const id = ids[(i++ * 7919) % ids.length] as string
        const t = performance.now()
        const status = await get(agent, `${url}/v1/runs/${id}`, token)
        if (status !== 200) throw new Error(`GET /v1/runs/${id} answered ${status}`)
        if (from) latencies.push(performance.now() - t)
      }
    })()
    while (performance.now() < deadline) {
      if (!from && !(await anyWarmUpLeft(counter))) {
        from = { at: performance.now(), finished: await finished(counter) }
        deadline = from.at + WINDOW_MS
      }
      if (from && !(await anyLeft(counter))) break
      await new Promise((r) => setTimeout(r, 20))
    }
    if (!from) throw new Error(`the server did not drain ${WARM_UP_RUNS} warm-up runs within 60 s`)
    const seconds = (performance.now() - from.at) / 1000
    done = true
    await getter
    latencies.sort((a, b) => a - b)
    const at = (q: number) =>
      latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN
    const drained = (await finished(counter)) - from.finished
    console.error(`  ${store} ${size}: seeded in ${(seedMs / 1000).toFixed(1)} s`)
    return {
      store,
      size,
      drained,
      seconds,
      drainPerSecond: drained / seconds,
      gets: latencies.length,
      p50: at(0.5),
      p99: at(0.99),
    }
  } finally {
    agent.destroy()
    await stopServerChild(child)
    await counter.close()
  }
}

const results: Figures[] = []
for (const size of SIZES) {
  const dir = mkdtempSync(join(tmpdir(), 'agentops-queue-bench-'))
  results.push(await measure('SQLite', `sqlite:${join(dir, 'queue.db')}`, size))
}
if (!args.includes('--no-postgres')) {
  await onPostgres(async (newDatabase) => {
    for (const size of SIZES) results.push(await measure('PostgreSQL', await newDatabase(), size))
  })
}

console.log(
  '\n| store | queued | drained | window | drain runs/s | GET /v1/runs/{id} p50 | p99 | GETs | targets met |',
)
console.log('|---|---:|---:|---:|---:|---:|---:|---:|---|')
for (const r of results) {
  const met = r.drainPerSecond >= TARGET_DRAIN && r.p50 <= TARGET_P50_MS
  console.log(
    `| ${r.store} | ${r.size.toLocaleString('en-US')} | ${r.drained.toLocaleString('en-US')} | ${r.seconds.toFixed(1)} s | ${Math.round(r.drainPerSecond)} | ${r.p50.toFixed(2)} ms | ${r.p99.toFixed(2)} ms | ${r.gets} | ${met ? 'yes' : 'no'} |`,
  )
}
console.log(`\ntargets: drain >= ${TARGET_DRAIN} runs/s and GET p50 <= ${TARGET_P50_MS} ms at every size`)
