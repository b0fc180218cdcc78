/**
 * The reference server over real HTTP, against what the framework alone costs and against a stateless mock.
 * In one run: the reference server on SQLite, on PostgreSQL when one can be started (the tests' own harness,
 * test/support/postgres.ts), bare Hono with the same routes answering the same fields, and `prism mock` of the contract (as run by
 * default, and quiet with `-v warn`). Each server runs in its own process; autocannon drives it from this one.
 * Loopback only, every loop bounded.
 *
 *   npm run bench:http -- [--duration <seconds>] [--rounds N] [--quick] [--no-postgres] [--no-prism]
 *                          [--profile <dir>] [--observability off] [--no-pin]
 *
 * The servers share one reserved core (the first this process may use), loaded one at a time, and this process
 * (autocannon) and a local PostgreSQL run on the others (bench/support/cpu-pinning.ts); `--no-pin` leaves placement
 * to the scheduler.
 *
 * Bare Hono and the reference server on each store run side by side, and their GETs (then their POSTs) are
 * measured in alternated rounds, the order rotating each round: whatever else loads the shared machine in a
 * round loads every side alike. A figure is the median of its rounds, and a ratio the median of its rounds' ratios
 * (both measured within a round, a few seconds apart); every round's ratio is printed with it.
 *
 * The reference server runs as deployed by default: metrics on and one JSON log line per request, written to its
 * stdout (a pipe this process drains, as a log collector would). `--observability off` starts it with
 * AGENTOPS_METRICS=off and AGENTOPS_LOG_LEVEL=silent, for the paired comparison of docs/performance.md (bench:observability).
 *
 * --profile writes a V8 CPU profile of each server process (node --cpu-prof) into <dir>, for reading in
 * Chrome DevTools or any .cpuprofile viewer; the figures of a profiled run are slower than usual.
 *
 * Figures: req/s, p50/p99 per route and target; the target ratios; ingest throughput (500-record batches from
 * 4 concurrent clients); webhook delivery latency (the committing request's answer to the receiver's first byte).
 */

import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { dirname, join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import { SERVER_NODE_OPTIONS, SERVER_V8_FLAGS } from '../src/cli/node-options.js'
import { createDatabase, startPostgres } from '../test/support/postgres.js'
import type { TargetInfo } from './http-targets.js'
import { competingSessions, competingSessionsWarning } from './support/competing-sessions.js'
import { onCores, pinBenchProcess, releaseBenchProcess, releaseDatabase } from './support/cpu-pinning.js'
import { cpuSeconds } from './support/proc-cpu.js'
import { keyedAgentCreate, median, runRead } from './support/requests.js'
import { startServerChild, stopServerChild, stopServerChildren } from './support/server-child.js'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
/** The framework and adapter both bare Hono and the reference server run on (one install, so one version each). */
const versionOf = (name: string): string =>
  (JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string })
    .version
const HONO_VERSION = versionOf('hono')
const NODE_SERVER_VERSION = versionOf('@hono/node-server')
const args = process.argv.slice(2)
const flag = (name: string) => args.includes(name)
const option = (name: string): string | undefined => {
  const i = args.indexOf(name)
  return i >= 0 ? args[i + 1] : undefined
}
const quick = flag('--quick')
/** A whole number option within [min, max], or its default when absent or not a number. */
function bounded(name: string, fallback: number, min: number, max: number): number {
  const value = Number(option(name) ?? fallback)
  return Number.isFinite(value) ? Math.min(max, Math.max(min, value)) : fallback
}
const duration = bounded('--duration', quick ? 2 : 3, 1, 120)
const rounds = Math.round(bounded('--rounds', quick ? 1 : 3, 1, 20))
const warmup = quick ? 1 : 2
const CONNECTIONS = 50
const profileDir = option('--profile')
const observability = option('--observability') === 'off' ? 'off' : 'on'
const OBSERVABILITY_OFF = { AGENTOPS_METRICS: 'off', AGENTOPS_LOG_LEVEL: 'silent' }
/** Before anything is started: PostgreSQL, started from this process, inherits its cores. */
const cpus = pinBenchProcess(!flag('--no-pin'))

interface Target extends TargetInfo {
  name: string
  child: ChildProcess
}

interface Figure {
  label: string
  rps: number
  /** Server CPU time per request (user + system), from /proc: steadier than req/s on a shared machine. */
  cpuUs: number
  p50: number
  p99: number
  non2xx: number
  errors: number
  /** Each round's req/s, in round order (one entry when measured once). */
  rounds: number[]
  /** Each round's p99, in round order: which round the worst p99 came from. */
  p99Rounds: number[]
}

/** Prism runs on its own binary; the reference and bare targets are server children (bench/support). */
const children: ChildProcess[] = []
function stopAll(): void {
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM')
  stopServerChildren()
}
process.on('exit', stopAll)

async function startTarget(
  name: string,
  kind: 'reference' | 'bare' | 'bare-sqlite',
  databaseUrl: string | undefined,
  cores: string | undefined,
): Promise<Target> {
  const target = await startServerChild<TargetInfo>({
    script: 'http-targets.ts',
    args: [kind, ...(databaseUrl ? [databaseUrl] : [])],
    nodeArgs: profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : [],
    name,
    env: { AGENTOPS_LOG_LEVEL: 'info', ...(observability === 'off' ? OBSERVABILITY_OFF : {}) },
    cpus: cores,
  })
  return { ...target, name }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as AddressInfo).port
      srv.close(() => resolve(port))
    })
  })
}

/**
 * `prism mock` of the contract. By default as a user runs it (the issue's 386 req/s was measured so), which logs
 * each request at Prism's default level (info); `quiet` adds `-v warn`, the faster Prism a CI job that silences it
 * gets, and the stricter comparison.
 */
async function startPrism(quiet: boolean): Promise<Target> {
  const port = await freePort()
  const [command, prismArgs] = onCores(cpus.server, join(ROOT, 'node_modules', '.bin', 'prism'), [
    'mock',
    'openapi/agent-operations.yaml',
    '--port',
    String(port),
    '--host',
    '127.0.0.1',
    ...(quiet ? ['-v', 'warn'] : []),
  ])
  const child = spawn(command, prismArgs, { cwd: ROOT, stdio: ['ignore', 'ignore', 'ignore'] })
  children.push(child)
  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 60_000
  for (;;) {
    if (child.exitCode !== null) throw new Error('prism exited before answering')
    try {
      await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1000) })
      break
    } catch {
      if (Date.now() > deadline) throw new Error('prism did not start within 60 s')
      await new Promise((r) => setTimeout(r, 200))
    }
  }
  // Prism checks the bearer's presence only; the run id must match the contract's pattern.
  return { name: 'prism mock', url, token: 'aok_prism', runId: 'run_01jbenchbenchbenchbenchbe', child }
}

type Request = autocannon.Request

function autocannonRun(t: Target, requests: Request[], seconds: number): Promise<autocannon.Result> {
  return autocannon({
    url: t.url,
    connections: CONNECTIONS,
    duration: seconds,
    requests,
    timeout: 30,
  }) as Promise<autocannon.Result>
}

/** One measurement, after a warm-up of `warmupSeconds` (none when the side was warmed before). */
async function load(t: Target, label: string, requests: Request[], warmupSeconds = warmup): Promise<Figure> {
  if (warmupSeconds > 0) await autocannonRun(t, requests, warmupSeconds)
  const cpuBefore = cpuSeconds(t.child.pid)
  const r = await autocannonRun(t, requests, duration)
  const cpuUs = ((cpuSeconds(t.child.pid) - cpuBefore) * 1e6) / Math.max(1, r.requests.total)
  return {
    label,
    rps: r.requests.average,
    cpuUs,
    p50: r.latency.p50,
    p99: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
    rounds: [r.requests.average],
    p99Rounds: [r.latency.p99],
  }
}

/**
 * The rounds of one side as one figure: the median of req/s, CPU and p50, the worst round's p99 (a bad round is not
 * hidden from a latency target), the refusals and errors of all of them.
 */
function medianFigure(label: string, measured: readonly Figure[]): Figure {
  const of = (pick: (f: Figure) => number) => median(measured.map(pick))
  return {
    label,
    rps: of((f) => f.rps),
    cpuUs: of((f) => f.cpuUs),
    p50: of((f) => f.p50),
    p99: Math.max(...measured.map((f) => f.p99)),
    non2xx: measured.reduce((n, f) => n + f.non2xx, 0),
    errors: measured.reduce((n, f) => n + f.errors, 0),
    rounds: measured.map((f) => f.rps),
    p99Rounds: measured.map((f) => f.p99),
  }
}

interface Side {
  /** Figure key prefix: `bare`, `sqlite`, `pg`. */
  key: string
  /** Label prefix: `bare Hono`, `reference SQLite`, … */
  label: string
  target: Target
}

/**
 * One route on every side in `rounds` alternated rounds (the order rotating each round), after one warm-up each;
 * sets `<side>.<route>` to the median figure of its rounds.
 */
async function alternate(
  sides: readonly Side[],
  route: string,
  title: (side: Side) => string,
  requests: (t: Target) => Request[],
  figures: Map<string, Figure>,
): Promise<void> {
  const measured = new Map<string, Figure[]>(sides.map((s) => [s.key, []]))
  for (const side of sides) await autocannonRun(side.target, requests(side.target), warmup)
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < sides.length; i++) {
      const side = sides[(i + round) % sides.length] as Side
      measured.get(side.key)?.push(await load(side.target, title(side), requests(side.target), 0))
    }
  }
  for (const side of sides) {
    const f = medianFigure(title(side), measured.get(side.key) ?? [])
    figures.set(`${side.key}.${route}`, f)
    printFigure(f)
  }
}

function getRun(t: Target): Request[] {
  return [runRead(t)]
}

function postAgent(t: Target): Request[] {
  return [keyedAgentCreate(t)]
}

/** 500-record batches from 4 concurrent clients, each to its own connector, for a bounded number of batches. */
async function ingest(
  t: Target,
): Promise<{ recordsPerSecond: number; rounds: number[]; batchP50: number; batches: number }> {
  const CLIENTS = 4
  const BATCH = 500
  const perClient = quick ? 10 : 30
  const batchBody = (client: number, batch: number) =>
    JSON.stringify({
      records: Array.from({ length: BATCH }, (_, i) => ({
        id: `c${client}-b${batch}-r${i}`,
        ts: new Date(Date.UTC(2026, 0, 1, 0, 0, 0, i)).toISOString(),
        source: 'bench',
        policy_class: 'internal',
        body: { n: i, text: 'a short payload' },
      })),
    })
  const headers = { authorization: `Bearer ${t.token}`, 'content-type': 'application/json' }
  const send = async (client: number, batch: number) => {
    const res = await fetch(`${t.url}/v1/grid/connectors/bench-${client}/ingest`, {
      method: 'POST',
      headers,
      body: batchBody(client, batch),
    })
    const answer = (await res.json()) as { accepted?: number }
    if (res.status !== 202 || answer.accepted !== BATCH) {
      throw new Error(`ingest answered ${res.status}: ${JSON.stringify(answer).slice(0, 300)}`)
    }
  }
  // Warm-up of the same shape for as long as the autocannon loads' (also creates the connectors): a server's first
  // seconds of ingest run its code unoptimised and its heap small, which the HTTP figures leave out too.
  const warmUntil = performance.now() + warmup * 1000
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, c) => {
      for (let b = 0; b < 100 && (b === 0 || performance.now() < warmUntil); b++) await send(c, -1 - b)
    }),
  )
  // In rounds like the HTTP figures (a round is about a second): the median round is the figure.
  const latencies: number[] = []
  const perRound: number[] = []
  for (let round = 0; round < rounds; round++) {
    const started = performance.now()
    await Promise.all(
      Array.from({ length: CLIENTS }, async (_, c) => {
        for (let b = round * perClient; b < (round + 1) * perClient; b++) {
          const t0 = performance.now()
          await send(c, b)
          latencies.push(performance.now() - t0)
        }
      }),
    )
    perRound.push((CLIENTS * perClient * BATCH) / ((performance.now() - started) / 1000))
  }
  return {
    recordsPerSecond: median(perRound),
    rounds: perRound,
    batchP50: percentile(latencies, 50),
    batches: latencies.length,
  }
}

/** agent.created deliveries to a loopback receiver: the POST's answer to the receiver's first byte. */
async function webhookLatency(t: Target): Promise<{ p50: number; p99: number; samples: number }> {
  const samples = quick ? 10 : 30
  let arrived: ((at: number) => void) | undefined
  const receiver = createServer((req, res) => {
    const at = performance.now()
    arrived?.(at)
    req.resume()
    req.on('end', () => res.writeHead(204).end())
  })
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()))
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`
  const headers = { authorization: `Bearer ${t.token}`, 'content-type': 'application/json' }
  const sub = await fetch(`${t.url}/v1/webhooks`, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      url: receiverUrl,
      events: ['agent.created'],
      secret: `whsec_${randomBytes(32).toString('base64')}`,
    }),
  })
  if (sub.status !== 201) throw new Error(`webhook subscription answered ${sub.status}: ${await sub.text()}`)
  const latencies: number[] = []
  for (let i = 0; i < samples; i++) {
    const delivered = new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no delivery within 10 s')), 10_000)
      arrived = (at) => {
        clearTimeout(timer)
        resolve(at)
      }
    })
    const res = await fetch(`${t.url}/v1/agents`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ name: `hook-${i}`, behavior: 'autonomous' }),
    })
    const answered = performance.now()
    await res.arrayBuffer()
    // A delivery may beat the answer to the client; that counts as zero latency.
    latencies.push(Math.max(0, (await delivered) - answered))
    arrived = undefined
  }
  await new Promise<void>((r) => receiver.close(() => r()))
  return { p50: percentile(latencies, 50), p99: percentile(latencies, 99), samples }
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0
}

function printFigure(f: Figure): void {
  const problems = f.non2xx + f.errors > 0 ? `  (non-2xx ${f.non2xx}, errors ${f.errors})` : ''
  console.log(
    `${f.label.padEnd(48)} ${f.rps.toFixed(0).padStart(7)} req/s  p50 ${String(f.p50).padStart(4)} ms  p99 ${String(f.p99).padStart(5)} ms  CPU ${f.cpuUs.toFixed(0).padStart(5)} µs/req${problems}${f.rounds.length > 1 ? `  (rounds ${f.rounds.map((r) => r.toFixed(0)).join(' / ')}; p99 ${f.p99Rounds.join(' / ')})` : ''}`,
  )
}

/**
 * A over B: the median of the rounds' ratios when both were measured in the same rounds (each round's pair a few
 * seconds apart), else the ratio of the two figures (Prism, measured once).
 */
function ratio(a: Figure | undefined, b: Figure | undefined): number {
  if (!a || !b) return Number.NaN
  if (a.rounds.length > 1 && a.rounds.length === b.rounds.length) {
    return median(a.rounds.map((r, i) => r / (b.rounds[i] as number)))
  }
  return a.rps / b.rps
}

/** `; rounds a / b / c` of an ingest, nothing for one round. */
function roundsOf(perRound: readonly number[]): string {
  return perRound.length > 1 ? `; rounds ${perRound.map((r) => r.toFixed(0)).join(' / ')}` : ''
}

/** Each round's A over B, printed beside a verdict taken from their median. */
function roundRatios(a: Figure | undefined, b: Figure | undefined): string {
  if (!a || !b || a.rounds.length < 2 || a.rounds.length !== b.rounds.length) return ''
  return `rounds ${a.rounds.map((r, i) => (r / (b.rounds[i] as number)).toFixed(2)).join(' / ')}`
}

function verdict(
  label: string,
  value: number,
  target: number,
  unit = '×',
  higherIsBetter = true,
  detail = '',
): void {
  const ok = Number.isNaN(value)
    ? 'n/a'
    : (higherIsBetter ? value >= target : value <= target)
      ? 'met'
      : 'MISSED'
  const shown = Number.isNaN(value) ? '—' : `${value.toFixed(unit === '×' ? 2 : 0)}${unit}`
  console.log(
    `${label.padEnd(52)} ${shown.padStart(10)}   target ${higherIsBetter ? '≥' : '≤'} ${target}${unit}   ${ok}${detail ? `   (${detail})` : ''}`,
  )
}

/** A ratio printed for what it tells, with no target of its own. */
function measured(label: string, value: number, detail = ''): void {
  const shown = Number.isNaN(value) ? '—' : `${value.toFixed(2)}×`
  console.log(`${label.padEnd(52)} ${shown.padStart(10)}   (no target)${detail ? `   (${detail})` : ''}`)
}

async function main(): Promise<void> {
  console.log(
    `bench:http — bare Hono ${HONO_VERSION} on @hono/node-server ${NODE_SERVER_VERSION}, the adapter the reference server runs on; ${CONNECTIONS} connections, ${rounds} alternated round(s) of ${duration} s per measurement after a ${warmup} s warm-up; reference server metrics and request log ${observability}; every server under node ${[...SERVER_NODE_OPTIONS, ...SERVER_V8_FLAGS].join(' ')}; ${cpus.server === undefined ? 'cores left to the scheduler' : `servers on core ${cpus.server}, autocannon and a local PostgreSQL on ${cpus.rest}`}`,
  )
  const competing = competingSessionsWarning(await competingSessions())
  if (competing) console.log(competing)
  const figures = new Map<string, Figure>()
  const measure = async (key: string, label: string, t: Target, reqs: Request[]) => {
    const f = await load(t, label, reqs)
    figures.set(key, f)
    printFigure(f)
  }

  const sides: Side[] = [
    {
      key: 'bare',
      label: 'bare Hono',
      target: await startTarget('bare Hono', 'bare', undefined, cpus.server),
    },
    {
      key: 'sqlite',
      label: 'reference SQLite',
      target: await startTarget('reference (SQLite)', 'reference', undefined, cpus.server),
    },
  ]
  let pgStop: (() => Promise<void>) | undefined
  let pgAdmin: string | undefined
  /** Whether that PostgreSQL runs as processes of this machine (its own binaries), which can be placed on cores. */
  let pgLocal = false
  if (!flag('--no-postgres')) {
    try {
      const server = await startPostgres()
      pgStop = server.stop
      pgAdmin = server.url
      pgLocal = server.via === 'local-binaries'
      const target = await startTarget(
        'reference (PostgreSQL)',
        'reference',
        await createDatabase(server.url),
        cpus.server,
      )
      sides.push({ key: 'pg', label: 'reference PostgreSQL', target })
    } catch (err) {
      console.log(`PostgreSQL skipped: ${(err as Error).message.split('\n')[0]}`)
    }
  }

  await alternate(sides, 'get', (s) => `${s.label} GET /v1/runs/{id}`, getRun, figures)
  // The POST also against bare Hono making the reference's own SQLite writes: the floor no server can go below.
  const postSides: Side[] = [
    ...sides,
    {
      key: 'bare-sqlite',
      label: 'bare Hono + SQLite writes',
      target: await startTarget('bare Hono + SQLite writes', 'bare-sqlite', undefined, cpus.server),
    },
  ]
  await alternate(
    postSides,
    'post',
    (s) => `${s.label} POST /v1/agents${s.key.startsWith('bare') ? '' : ' (fresh key)'}`,
    postAgent,
    figures,
  )
  // Prism on the servers' core too, measured once, not in rounds: its target is a factor of ten, not a few per cent.
  if (!flag('--no-prism')) {
    try {
      const prism = await startPrism(false)
      await measure('prism.get', 'prism mock GET /v1/runs/{id}', prism, getRun(prism))
      prism.child.kill('SIGTERM')
      const quiet = await startPrism(true)
      await measure('prism-quiet.get', 'prism mock -v warn GET /v1/runs/{id}', quiet, getRun(quiet))
      quiet.child.kill('SIGTERM')
    } catch (err) {
      console.log(`Prism skipped: ${(err as Error).message}`)
    }
  }
  await Promise.all(postSides.map((s) => stopServerChild(s.target.child)))
  // Ingest and delivery are the store's work more than the server's: fresh servers on a fresh database, each server
  // again on its own core, the clients and a local database free to use every core. With the database kept on the
  // clients' core, PostgreSQL's ingest measured 53,000-60,000 records/s in three runs, against 55,000-79,000 before
  // pinning.
  if (cpus.server !== undefined) {
    releaseBenchProcess()
    // A container's PostgreSQL was never placed (its process ids are not this machine's to move).
    if (pgAdmin && pgLocal) await releaseDatabase(pgAdmin)
  }

  const sqlite = await startTarget('reference (SQLite)', 'reference', undefined, cpus.server)
  const ingestSqlite = await ingest(sqlite)
  console.log(
    `${'reference SQLite ingest (500 × 4 clients)'.padEnd(44)} ${ingestSqlite.recordsPerSecond.toFixed(0).padStart(8)} records/s   batch p50 ${ingestSqlite.batchP50.toFixed(0)} ms (${ingestSqlite.batches} batches${roundsOf(ingestSqlite.rounds)})`,
  )
  const hookSqlite = await webhookLatency(sqlite)
  console.log(
    `${'reference SQLite webhook delivery'.padEnd(44)} p50 ${hookSqlite.p50.toFixed(1)} ms   p99 ${hookSqlite.p99.toFixed(1)} ms (${hookSqlite.samples} deliveries)`,
  )
  sqlite.child.kill('SIGTERM')

  let ingestPg: Awaited<ReturnType<typeof ingest>> | undefined
  if (pgAdmin) {
    const pgRef = await startTarget(
      'reference (PostgreSQL)',
      'reference',
      await createDatabase(pgAdmin),
      cpus.server,
    )
    ingestPg = await ingest(pgRef)
    console.log(
      `${'reference PostgreSQL ingest (500 × 4 clients)'.padEnd(44)} ${ingestPg.recordsPerSecond.toFixed(0).padStart(8)} records/s   batch p50 ${ingestPg.batchP50.toFixed(0)} ms (${ingestPg.batches} batches${roundsOf(ingestPg.rounds)})`,
    )
    pgRef.child.kill('SIGTERM')
  }

  console.log("\ntargets (ratios within this run; over rounds, the median of the rounds' ratios)")
  const f = (k: string) => figures.get(k)
  const versus = (label: string, a: string, b: string, target: number) =>
    verdict(label, ratio(f(a), f(b)), target, '×', true, roundRatios(f(a), f(b)))
  versus('GET run, SQLite / bare Hono', 'sqlite.get', 'bare.get', 0.6)
  versus('GET run, PostgreSQL / bare Hono', 'pg.get', 'bare.get', 0.5)
  versus('GET run, PostgreSQL / SQLite', 'pg.get', 'sqlite.get', 0.8)
  verdict('GET run, SQLite / Prism mock', ratio(f('sqlite.get'), f('prism.get')), 10)
  verdict('GET run, SQLite / Prism mock -v warn (stricter)', ratio(f('sqlite.get'), f('prism-quiet.get')), 10)
  versus('POST agent (fresh key), SQLite / bare Hono POST', 'sqlite.post', 'bare.post', 0.4)
  // Not a target: how much of the gap to bare Hono is the store's durable writes rather than the server's own work.
  measured(
    'POST, bare Hono + SQLite writes / bare Hono',
    ratio(f('bare-sqlite.post'), f('bare.post')),
    roundRatios(f('bare-sqlite.post'), f('bare.post')),
  )
  versus('POST agent (fresh key), SQLite / bare Hono + SQLite writes', 'sqlite.post', 'bare-sqlite.post', 0.5)
  verdict('POST agent (fresh key), SQLite p99', f('sqlite.post')?.p99 ?? Number.NaN, 100, ' ms', false)
  versus('POST agent (fresh key), PostgreSQL / SQLite', 'pg.post', 'sqlite.post', 0.9)
  verdict('POST agent (fresh key), PostgreSQL p99', f('pg.post')?.p99 ?? Number.NaN, 15, ' ms', false)
  console.log(
    '\nCPU-cost ratios (bare µs/req ÷ reference µs/req: the req/s ratio if each had the CPU to itself)',
  )
  const cpu = (a: string, b: string) => (f(a)?.cpuUs ?? Number.NaN) / (f(b)?.cpuUs ?? Number.NaN)
  verdict('GET run, SQLite, by CPU cost', cpu('bare.get', 'sqlite.get'), 0.6)
  verdict('GET run, PostgreSQL, by CPU cost (server process only)', cpu('bare.get', 'pg.get'), 0.3)
  verdict('GET run, SQLite vs Prism mock, by CPU cost', cpu('prism.get', 'sqlite.get'), 10)
  verdict('GET run, SQLite vs Prism mock -v warn, by CPU cost', cpu('prism-quiet.get', 'sqlite.get'), 10)
  verdict('POST agent (fresh key), SQLite, by CPU cost', cpu('bare.post', 'sqlite.post'), 0.4)
  measured('POST, bare Hono + SQLite writes, by CPU cost', cpu('bare.post', 'bare-sqlite.post'))
  // The server's own CPU only: PostgreSQL's backends share the load generator's core here, where a deployment gives
  // the database a machine of its own, so this is what the reference itself spends on PostgreSQL against SQLite.
  measured(
    'POST agent (fresh key), PostgreSQL / SQLite, by CPU cost (server process only)',
    cpu('sqlite.post', 'pg.post'),
  )
  console.log('')
  verdict('ingest, SQLite', ingestSqlite.recordsPerSecond, 50_000, ' rec/s')
  verdict('ingest, PostgreSQL', ingestPg?.recordsPerSecond ?? Number.NaN, 60_000, ' rec/s')
  verdict('webhook delivery p50, SQLite', hookSqlite.p50, 20, ' ms', false)

  stopAll()
  await pgStop?.()
}

await main().catch((err) => {
  console.error(err)
  stopAll()
  process.exitCode = 1
})
