/**
 * How a backlog of queued runs affects the server: drain rate (runs finished per second) and the latency of
 * GET /v1/runs/{id} while N runs are queued, for N = 100, 10,000 and 100,000, on SQLite and on PostgreSQL (when
 * one can be started: test/support/postgres.ts). Target: drain >= 500 runs/s and GET p50 <= 3 ms at every size,
 * i.e. neither depends on the backlog.
 *
 *   npm run bench:queue -- [--sizes 100,10000,100000] [--seconds <window>] [--warm-up <runs>]
 *                           [--no-sqlite] [--no-postgres] [--profile <dir>] [--trace <file>]
 *
 * Per store and size: a fresh database; the backlog is written straight into the store (copies of one run made
 * through the service, many rows per statement: test/support/run-backlog.ts); then the server starts in its own
 * process (default settings: 4 runs driven at once) and drains it, while this process asks for runs of the backlog
 * one GET at a time over one keep-alive connection. The backlog stays at its size: the server's process
 * (bench/queue-server.ts) appends queued copies at the back every 10 ms, as many as were drained, like runs clients
 * keep submitting. Each GET asks for a random run of the backlog as last polled (every 20 ms, the two ends of
 * runs_claim): queued or being driven. The server first drains --warm-up runs (default 2,000) of that same backlog
 * (its start and JIT compilation are not timed); the window then lasts --seconds (default 5) at every size. GETs
 * are counted in the window only; "fewest queued seen" is the shortest backlog a poll of the window saw.
 * Loopback only; every loop is bounded.
 *
 * Why this design (2026-11-27). The first one (main before then) seeded the backlog plus 200 warm-up runs of a
 * higher priority, let it drain down, and ended the window when the queue was empty or after 5 s, GETs asking for
 * the backlog's first 5,000 runs. At 100 queued its window was the first 0.2 s of a drain (about 45 GETs), so the
 * 100-run figure measured how a drain starts right after 200 runs, not a queue of 100: GETs took 2-5 ms while the
 * drain lasted and under 1 ms once it was over, and the first 250 ms of a 10,000-run window were as slow as the
 * whole 100-run one. The server was still compiling its drain and read paths then (node --trace-opt: about 110
 * functions optimized when the 200 warm-up runs were done, 300 after 1,200 more, 680 after 5,800); and at 10,000
 * the queue fell to about half its size within the window. Now every size is measured at its size, after the same
 * warm-up, over the same window.
 *
 * --profile writes a V8 CPU profile of each server process (node --cpu-prof) into <dir>: the drain path's hot spots.
 * --trace appends one line per GET of the window to <file>: store, size, ms since the window opened, latency ms, id.
 */
import { appendFileSync, mkdtempSync } from 'node:fs'
import { Agent } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import type { Db } from '../src/store/db.js'
import { openDb } from '../src/store/open.js'
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
const WARM_UP_RUNS = Math.min(100_000, Math.max(0, Number(option('--warm-up') ?? 2_000)))
const PROFILE_DIR = option('--profile')
const TRACE_FILE = option('--trace')
/** Warm-up and window each end within this, however slow the machine. */
const PHASE_LIMIT_MS = 120_000
const POLL_MS = 20
const TARGET_DRAIN = 500
const TARGET_P50_MS = 3
/** Every run of the backlog is `run_q` and its number, in queue order (seq); bench/queue-server.ts names them so too. */
const PREFIX = 'run_q'
const idOf = (n: number) => `${PREFIX}${String(n).padStart(16, '0')}`

/**
 * A key, an agent, one run through the service, then `size` copies of it straight into the store, `run_q` 1 to
 * `size`. The run itself is set paused, so it is never claimed (runs_claim holds queued and running runs only) and
 * stays the queued template of every copy made later.
 */
function seed(databaseUrl: string, size: number): Promise<{ token: string; template: string }> {
  return seedStore(databaseUrl, 'bench', async (services, key, db) => {
    const agent = await services.agents.create(key.workspace_id, {
      name: 'queue-bench',
      behavior: 'autonomous',
      capabilities: [],
    })
    const template = await startRun(services.runs, key, agent.id)
    await cloneRuns(db, template, size, { idPrefix: PREFIX, status: 'queued' })
    await db.run(`UPDATE runs SET status = 'paused' WHERE id = $1`, [template])
    return { token: key.token, template }
  })
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
  lowest: number
}

/** The numbers of the first and last runs queued or being driven: the two ends of runs_claim, one probe each. */
async function ends(db: Db): Promise<{ first: number; last: number } | undefined> {
  const order = (direction: string) =>
    `SELECT id FROM runs WHERE status IN ('queued', 'running') ORDER BY priority ${direction === 'ASC' ? 'DESC' : 'ASC'}, seq ${direction} LIMIT 1`
  const first = await db.one<{ id: string }>(order('ASC'))
  const last = await db.one<{ id: string }>(order('DESC'))
  if (!first || !last) return undefined
  return { first: Number(first.id.slice(PREFIX.length)), last: Number(last.id.slice(PREFIX.length)) }
}

async function measure(store: string, databaseUrl: string, size: number): Promise<Figures> {
  const seedStarted = performance.now()
  const { token, template } = await seed(databaseUrl, size)
  const seedMs = performance.now() - seedStarted
  const db = await openDb(databaseUrl)
  const { url, child } = await startServerChild<{ url: string }>({
    script: 'queue-server.ts',
    args: [databaseUrl, template, String(size)],
    nodeArgs: PROFILE_DIR ? ['--cpu-prof', '--cpu-prof-dir', PROFILE_DIR] : [],
  })
  /** Numbers of the runs queued or being driven, as last polled. */
  const backlog = { first: 1, last: size }
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  let done = false
  try {
    let deadline = performance.now() + PHASE_LIMIT_MS
    let from: number | undefined
    let firstAtOpen = 0
    /** The fewest runs queued or being driven that a poll of the window saw. */
    let lowest = size
    const latencies: number[] = []
    const trace: string[] = []
    const getter = (async () => {
      while (!done && performance.now() < deadline) {
        // A run of the backlog as last polled; the last one polled when none was left (a drained run: it exists).
        const n = Math.min(
          backlog.last,
          backlog.first + Math.floor(Math.random() * (backlog.last - backlog.first + 1)),
        )
        const t = performance.now()
        const status = await get(agent, `${url}/v1/runs/${idOf(n)}`, token)
        if (status !== 200) throw new Error(`GET /v1/runs/${idOf(n)} answered ${status}`)
        if (from !== undefined) {
          const ms = performance.now() - t
          latencies.push(ms)
          if (TRACE_FILE)
            trace.push(`${store}\t${size}\t${(t - from).toFixed(2)}\t${ms.toFixed(3)}\t${idOf(n)}`)
        }
      }
    })()
    while (performance.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode}`)
      const now = await ends(db)
      // None left: every run up to the last polled one is drained (the server tops the backlog up again).
      if (now) Object.assign(backlog, now)
      else backlog.first = backlog.last + 1
      if (from !== undefined) lowest = Math.min(lowest, now ? now.last - now.first + 1 : 0)
      if (from === undefined && backlog.first - 1 >= WARM_UP_RUNS) {
        from = performance.now()
        firstAtOpen = backlog.first
        deadline = from + WINDOW_MS
      }
      await new Promise((r) => setTimeout(r, POLL_MS))
    }
    if (from === undefined)
      throw new Error(`the server did not drain ${WARM_UP_RUNS} warm-up runs within 120 s`)
    const seconds = (performance.now() - from) / 1000
    const drained = backlog.first - firstAtOpen
    done = true
    await getter
    latencies.sort((a, b) => a - b)
    const at = (q: number) =>
      latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN
    if (TRACE_FILE) appendFileSync(TRACE_FILE, trace.map((l) => `${l}\n`).join(''))
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
      lowest,
    }
  } finally {
    done = true
    agent.destroy()
    await stopServerChild(child)
    await db.close()
  }
}

const results: Figures[] = []
for (const size of args.includes('--no-sqlite') ? [] : SIZES) {
  const dir = mkdtempSync(join(tmpdir(), 'agentops-queue-bench-'))
  results.push(await measure('SQLite', `sqlite:${join(dir, 'queue.db')}`, size))
}
if (!args.includes('--no-postgres')) {
  await onPostgres(async (newDatabase) => {
    for (const size of SIZES) results.push(await measure('PostgreSQL', await newDatabase(), size))
  })
}

console.log(
  '\n| store | queued | fewest queued seen | drained | window | drain runs/s | GET /v1/runs/{id} p50 | p99 | GETs | targets met |',
)
console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---|')
for (const r of results) {
  const met = r.drainPerSecond >= TARGET_DRAIN && r.p50 <= TARGET_P50_MS
  const n = (x: number) => x.toLocaleString('en-US')
  console.log(
    `| ${r.store} | ${n(r.size)} | ${n(r.lowest)} | ${n(r.drained)} | ${r.seconds.toFixed(1)} s | ${Math.round(r.drainPerSecond)} | ${r.p50.toFixed(2)} ms | ${r.p99.toFixed(2)} ms | ${r.gets} | ${met ? 'yes' : 'no'} |`,
  )
}
console.log(
  `\ntargets: drain >= ${TARGET_DRAIN} runs/s and GET p50 <= ${TARGET_P50_MS} ms at every size; "fewest queued seen": the` +
    ' backlog is topped up every 10 ms and polled every 20 ms; this is the shortest a poll of the window saw (queued or being driven)',
)
