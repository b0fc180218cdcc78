/**
 * Where a request spends its CPU (a cached GET /v1/runs/{id}; a keyed POST with `--post`; ingest records with
 * `--ingest`), side by side: each side is a server child (bench/http-targets.ts)
 * under `node --cpu-prof`, loaded in alternated blocks of a fixed number of requests (order rotating each round, so
 * whatever else loads the machine loads every side alike). Only the samples taken during the blocks are summed (no
 * start-up, no warm-up), per package and per function, in µs per request; CPU per request from schedstat too.
 *
 *   npx tsx bench/profile-get.ts [--out <dir>] [--rounds N] [--requests N] [--sides on,off,bare] [--b-root <dir>]
 *     [--postgres] [--post | --ingest] [--pin]
 *
 * Sides: `on` the reference server as deployed (metrics, request log), `off` the same with AGENTOPS_METRICS=off and
 * AGENTOPS_LOG_LEVEL=silent, `bare` bare Hono, `old` the reference server as deployed from the checkout `--b-root`.
 * `sqlite` is `on` on SQLite whatever the store of the others. `floor` is bare Hono whose POST makes the durable writes a
 * keyed POST of the reference makes on SQLite (bench:http's floor): against it, `--post` shows the server's own work.
 * `--postgres`: the reference sides on a throwaway PostgreSQL (the tests' harness), each on a database of its own;
 * the CPU of the backends serving that database is then counted per request too (schedstat of their processes), as
 * the server's statements cost there as well, on the same cores.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import autocannon from 'autocannon'
import { createDatabase, type PostgresServer, startPostgres } from '../test/support/postgres.js'
import type { TargetInfo } from './http-targets.js'
import { pinBenchProcess } from './support/cpu-pinning.js'
import { printDifference, printSummary, type Summary, summarise, type Window } from './support/cpuprofile.js'
import { cpuNanoseconds } from './support/proc-cpu.js'
import { keyedAgentCreate, runRead } from './support/requests.js'
import { ROOT, startServerChild, stopServerChild } from './support/server-child.js'

const args = process.argv.slice(2)
const option = (name: string, fallback: string) => {
  const i = args.indexOf(name)
  return i >= 0 ? (args[i + 1] ?? fallback) : fallback
}
const out = resolve(option('--out', mkdtempSync(join(tmpdir(), 'agentops-profile-'))))
const rounds = Math.max(1, Number(option('--rounds', '6')))
const perBlock = Math.max(100, Number(option('--requests', args.includes('--ingest') ? '20000' : '5000')))
const bRoot = resolve(option('--b-root', ROOT))
const names = option('--sides', args.includes('--b-root') ? 'on,old,bare' : 'on,off,bare').split(',')
const top = Number(option('--top', '30'))
const CONNECTIONS = 50
/**
 * `--pin`: each server on a core of its own and this process (autocannon) and PostgreSQL on the others, as bench:http
 * places them (bench/support/cpu-pinning.ts); unpinned, the scheduler places them.
 */
const cpus = pinBenchProcess(args.includes('--pin'))
/** `--post`: POST /v1/agents with a fresh Idempotency-Key on every request (the write path) instead of the GET. */
const post = args.includes('--post')
/**
 * `--ingest`: 500-record ingest batches from 4 clients, each to its own connector (bench:http's ingest), instead of
 * the GET; figures are then per record, and `--requests` counts records.
 */
const ingest = args.includes('--ingest')
const INGEST_BATCH = 500
const INGEST_CLIENTS = 4
let ingestBatches = 0

/** Sends about `records` records as 500-record batches from 4 clients, each accepted whole; how many were sent. */
async function ingestLoad(url: string, token: string, records: number): Promise<number> {
  const batches = Math.max(INGEST_CLIENTS, Math.round(records / INGEST_BATCH))
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
  let next = 0
  await Promise.all(
    Array.from({ length: INGEST_CLIENTS }, async (_, client) => {
      while (next < batches) {
        next += 1
        const batch = ++ingestBatches
        const body = JSON.stringify({
          records: Array.from({ length: INGEST_BATCH }, (_, i) => ({
            id: `b${batch}-r${i}`,
            ts: new Date(Date.UTC(2026, 0, 1, 0, 0, 0, i)).toISOString(),
            source: 'bench',
            policy_class: 'internal',
            body: { n: i, text: 'a short payload' },
          })),
        })
        const res = await fetch(`${url}/v1/grid/connectors/profile-${client}/ingest`, {
          method: 'POST',
          headers,
          body,
        })
        const answer = (await res.json()) as { accepted?: number }
        if (res.status !== 202 || answer.accepted !== INGEST_BATCH)
          throw new Error(`ingest answered ${res.status}: ${JSON.stringify(answer).slice(0, 300)}`)
      }
    }),
  )
  return batches * INGEST_BATCH
}
const pg: PostgresServer | undefined = args.includes('--postgres') ? await startPostgres() : undefined

interface Side {
  name: string
  pid: number
  info: TargetInfo
  stop: () => Promise<void>
  windows: Window[]
  requests: number
  cpuNs: number
  /** PostgreSQL: the side's database, and the CPU its backends spent in the blocks. */
  database?: string
  pgCpuNs: number
}

/** CPU nanoseconds so far of each backend connected to `database`, by process id (those that ended are left out). */
async function backendCpu(database: string): Promise<Map<number, number>> {
  const { default: postgres } = await import('postgres')
  const admin = postgres((pg as PostgresServer).url, { max: 1, onnotice: () => {} })
  try {
    const rows = await admin.unsafe<{ pid: number }[]>(
      'SELECT pid FROM pg_stat_activity WHERE datname = $1',
      [database],
    )
    const cpu = new Map<number, number>()
    for (const { pid } of rows) {
      try {
        cpu.set(pid, cpuNanoseconds(pid))
      } catch {
        // A backend that ended meanwhile has no more time to add.
      }
    }
    return cpu
  } finally {
    await admin.end()
  }
}

/** bench/http-targets.ts's arguments for a side: which server, and its database when not SQLite. */
function targetArgs(name: string, url: string | undefined): string[] {
  if (name === 'bare') return ['bare']
  if (name === 'floor') return ['bare-sqlite']
  return url ? ['reference', url] : ['reference']
}

async function start(name: string): Promise<Side> {
  const dir = join(out, name)
  mkdirSync(dir, { recursive: true })
  const off = name === 'off' ? { AGENTOPS_METRICS: 'off', AGENTOPS_LOG_LEVEL: 'silent' } : {}
  const url =
    pg && name !== 'bare' && name !== 'floor' && name !== 'sqlite' ? await createDatabase(pg.url) : undefined
  const { child, ...info } = await startServerChild<TargetInfo>({
    script: 'http-targets.ts',
    args: targetArgs(name, url),
    root: name === 'old' ? bRoot : ROOT,
    nodeArgs: ['--cpu-prof', '--cpu-prof-interval', '50', '--cpu-prof-dir', dir],
    env: { AGENTOPS_LOG_LEVEL: 'info', AGENTOPS_METRICS: 'on', ...off },
    name,
    cpus: cpus.server,
  })
  return {
    name,
    pid: child.pid ?? 0,
    info,
    stop: () => stopServerChild(child),
    windows: [],
    requests: 0,
    cpuNs: 0,
    database: url && new URL(url).pathname.slice(1),
    pgCpuNs: 0,
  }
}

const nowUs = () => Number(process.hrtime.bigint() / 1000n)

async function load(side: Side, amount: number, record: boolean): Promise<void> {
  const { url, token } = side.info
  const before = cpuNanoseconds(side.pid)
  const backendsBefore = record && side.database ? await backendCpu(side.database) : undefined
  const fromUs = nowUs()
  const done = ingest ? await ingestLoad(url, token, amount) : await autocannonLoad(side, amount)
  const toUs = nowUs()
  if (!record) return
  side.windows.push({ fromUs, toUs })
  side.requests += done
  side.cpuNs += cpuNanoseconds(side.pid) - before
  if (backendsBefore && side.database) {
    // Backends that were there before and after the block (a replaced connection's new backend is left out).
    for (const [pid, after] of await backendCpu(side.database))
      side.pgCpuNs += after - (backendsBefore.get(pid) ?? after)
  }
}

/** `amount` GETs (or keyed POSTs) from 50 connections; how many were made. */
async function autocannonLoad(side: Side, amount: number): Promise<number> {
  const { url } = side.info
  const r = (await autocannon({
    url,
    connections: CONNECTIONS,
    amount,
    requests: [post ? keyedAgentCreate(side.info) : runRead(side.info)],
  })) as autocannon.Result
  if (r.non2xx > 0 || r.errors > 0) throw new Error(`${side.name}: ${r.non2xx} non-2xx, ${r.errors} errors`)
  return r.requests.total
}

const sides: Side[] = []
for (const name of names) sides.push(await start(name))
for (const side of sides) await load(side, ingest ? 30_000 : 3000, false)
for (let r = 0; r < rounds; r++) {
  for (let i = 0; i < sides.length; i++) await load(sides[(r + i) % sides.length] as Side, perBlock, true)
}
for (const side of sides) await side.stop()
await pg?.stop()

const profiles = new Map<string, string>()
for (const side of sides) {
  const dir = join(out, side.name)
  // CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile: the main thread is 0 (a worker, such as SQLite's WAL
  // checkpointer, writes its own).
  const file = readdirSync(dir).find((f) => /\.0\.\d+\.cpuprofile$/.test(f))
  if (!file || !existsSync(join(dir, file))) throw new Error(`${side.name}: no profile in ${dir}`)
  const path = join(dir, file)
  profiles.set(side.name, path)
  console.log(
    `\n##### ${side.name}: ${side.requests} requests, ${(side.cpuNs / 1e3 / side.requests).toFixed(1)} µs CPU/req ` +
      `(schedstat, all threads)${side.database ? `, PostgreSQL backends ${(side.pgCpuNs / 1e3 / side.requests).toFixed(1)} µs/req` : ''} — ${path}`,
  )
  printSummary(`${side.name} by package`, summarise(path, 'package', side.windows), side.requests, 20)
  printSummary(`${side.name} by function`, summarise(path, 'function', side.windows), side.requests, top)
}
// Each side against the last one (bare Hono, by default), function by function.
const last = sides[sides.length - 1] as Side
const of = (side: Side, grouping: 'function' | 'package'): Summary =>
  summarise(profiles.get(side.name) as string, grouping, side.windows)
for (const side of sides.slice(0, -1)) {
  for (const grouping of ['package', 'function'] as const) {
    printDifference(
      `${side.name} − ${last.name}, by ${grouping}`,
      of(side, grouping),
      side.requests,
      of(last, grouping),
      last.requests,
      grouping === 'package' ? 20 : top,
    )
  }
}
