/**
 * Destinations: one event to 1,000 destinations of mixed types (Slack, PagerDuty and CloudEvents to one loopback HTTP
 * receiver, NATS JetStream to a real nats-server started by the tests' harness), the span from the event's commit to
 * each arrival at the receiver, on SQLite; then NATS publish throughput.
 *
 *   npx tsx bench/destinations.ts [--rounds <n>] [--destinations <n>] [--concurrency <n>] [--publishes <n>]
 *     [--warmup <n>] [--types slack,pagerduty,cloudevents,nats] [--inline-receiver] [--profile <file.cpuprofile>]
 *
 * A round commits one run.failed event (every destination lists it) and waits for all arrivals: HTTP requests at
 * the receiver, messages on a core NATS subscription of the stream's subjects. The HTTP receiver runs in a process
 * of its own (bench/support/arrival-receiver.mjs), as a real one would on another machine, so its work does not
 * share the server's thread; `--inline-receiver` runs it in this process instead (how this was measured before
 * 2026-11-29 10:45). p50/p99/max are over every arrival of
 * every round; `--warmup <n>` runs n rounds first and leaves them out (a warm server; without it the first round
 * also measures the JIT compiling the outbox's paths). Each round prints its own figures and this process's CPU time
 * per arrival (user + system, every thread) and its main thread's busy time per arrival (event-loop utilisation:
 * the thread the outbox's claims, commits and sends share), which other load on the machine moves less than the
 * wall-clock spans.
 * `--types` makes the destinations of these types only, in turn (default all four: what each type costs per
 * send, compared by the CPU per arrival of runs with one type each).
 * `--profile <file>` writes a CPU profile of the rounds alone. `--concurrency` is the outbox's pool
 * (AGENTOPS_WEBHOOK_CONCURRENCY, default 64 as the server's).
 * NATS throughput: the transport alone, `--publishes` events with 64 in flight, each acknowledged by JetStream with
 * its Nats-Msg-Id (the outbox itself keeps one attempt in flight per destination, so one destination's publishes go
 * one after another). In-process; loopback only; every wait is bounded.
 */

import { fork } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { Session } from 'node:inspector/promises'
import type { AddressInfo } from 'node:net'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { jetstreamManager } from '@nats-io/jetstream'
import { connect } from '@nats-io/transport-node'
import { systemClock } from '../src/domain/clock.js'
import { DestinationService } from '../src/domain/destinations/service.js'
import { EventLog } from '../src/domain/events/log.js'
import { createDestinationTransports } from '../src/outbound/destinations/index.js'
import { natsTransport } from '../src/outbound/destinations/nats.js'
import { createOutboundHttp } from '../src/outbound/http.js'
import { migrate } from '../src/store/migrations/index.js'
import { openDb } from '../src/store/open.js'
import { createDestinationRepositories } from '../src/store/repos/destinations.js'
import { createRepositories } from '../src/store/repos/index.js'
import { startNats } from '../test/support/nats.js'
import { ANY_LOOPBACK_PORT } from '../test/support/private-targets.js'

const args = process.argv.slice(2)
const option = (name: string, fallback: number, max: number) => {
  const i = args.indexOf(name)
  return Math.min(max, Math.max(1, Number(i >= 0 ? args[i + 1] : fallback)))
}
const ROUNDS = option('--rounds', 5, 50)
/** Rounds run first and left out of the figures (a warm server: the JIT has compiled the outbox's paths). */
const WARMUP = args.includes('--warmup')
  ? Math.min(50, Math.max(0, Number(args[args.indexOf('--warmup') + 1])))
  : 0
const DESTINATIONS = option('--destinations', 1000, 5000)
const CONCURRENCY = option('--concurrency', 64, 1000)
const PUBLISHES = option('--publishes', 20_000, 200_000)
const INLINE_RECEIVER = args.includes('--inline-receiver')
const PROFILE = args.includes('--profile') ? args[args.indexOf('--profile') + 1] : undefined
const ROUND_TIMEOUT_MS = 60_000
const WS = 'ws_bench'

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN
const ms = (n: number) => `${n.toFixed(1)} ms`

const nats = await startNats()
const dir = mkdtempSync(join(tmpdir(), 'agentops-bench-dest-'))
/** Wall-clock milliseconds, comparable with the receiver process's. */
const wallNow = () => performance.timeOrigin + performance.now()
let arrivals: number[] = []
let inline: ReturnType<typeof createServer> | undefined
let receiverProcess: ReturnType<typeof fork> | undefined
let port: number
if (INLINE_RECEIVER) {
  const server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      arrivals.push(wallNow())
      res.writeHead(req.url?.startsWith('/pagerduty') ? 202 : 200).end('ok')
    })
  })
  inline = server
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  port = (server.address() as AddressInfo).port
} else {
  const child = fork(new URL('./support/arrival-receiver.mjs', import.meta.url))
  receiverProcess = child
  port = await new Promise<number>((r) => child.once('message', (m: { port: number }) => r(m.port)))
  child.on('message', (m: { arrivals?: number[] }) => {
    if (m.arrivals) arrivals.push(...m.arrivals)
  })
}
/** Collects the receiver process's arrivals since the last call (a no-op for the inline receiver). */
const collect = () =>
  new Promise<void>((resolve) => {
    const child = receiverProcess
    if (!child) return resolve()
    child.once('message', () => resolve())
    child.send({ take: true })
  })
const base = `http://127.0.0.1:${port}`
const nc = await connect({ servers: nats.url })
const jsm = await jetstreamManager(nc)
await jsm.streams.add({ name: 'BENCH', subjects: ['bench.>'] })
nc.subscribe('bench.>', {
  callback: () => {
    arrivals.push(wallNow())
  },
})

const db = await openDb(`sqlite:${join(dir, 'bench.db')}`)
await migrate(db)
const repos = createRepositories(db)
const events = new EventLog(repos.events, systemClock)
const outbound = createOutboundHttp({ privateTargets: ANY_LOOPBACK_PORT })
const own = createDestinationRepositories(db)
const service = new DestinationService(db, own.destinations, own.deliveries, systemClock, events, {
  outbound,
  transports: createDestinationTransports(outbound),
  timeoutMs: 10_000,
  retry: { baseMs: 5_000, maxAttempts: 8 },
  concurrency: CONCURRENCY,
  pollMs: 1_000,
  // Quotas are judged elsewhere; this measures the outbox alone.
  quotas: { take: async () => undefined, release: async () => undefined },
})
const ALL_TYPES = ['slack', 'pagerduty', 'cloudevents', 'nats'] as const
type BenchType = (typeof ALL_TYPES)[number]
const typesArg = args.includes('--types')
  ? (args[args.indexOf('--types') + 1] ?? '').split(',')
  : [...ALL_TYPES]
const types = ALL_TYPES.filter((t) => typesArg.includes(t))
if (types.length === 0) throw new Error(`--types: one or more of ${ALL_TYPES.join(', ')}`)
for (let i = 0; i < DESTINATIONS; i++) {
  const type: BenchType = types[i % types.length] ?? 'slack'
  const settings =
    type === 'slack'
      ? { secrets: { webhook_url: `${base}/slack/T/B/${i}` } }
      : type === 'pagerduty'
        ? {
            config: { url: `${base}/pagerduty` },
            secrets: { routing_key: 'R0UT1NGKEY0123456789abcdefABCDEF' },
          }
        : type === 'cloudevents'
          ? { config: { url: `${base}/ce` } }
          : { config: { servers: [nats.url], subject_prefix: 'bench' } }
  await service.create(WS, { type, name: `d${i}`, events: ['run.failed'], ...settings })
}
service.dispatcher.start()

// `--profile`: a CPU profile of the rounds alone (not the set-up or the NATS half), for Chrome DevTools or any
// .cpuprofile reader.
const profiler = PROFILE ? new Session() : undefined
if (profiler) {
  profiler.connect()
  await profiler.post('Profiler.enable')
  await profiler.post('Profiler.setSamplingInterval', { interval: 100 })
  await profiler.post('Profiler.start')
}
const latencies: number[] = []
/** This process's CPU time (user + system) per arrival in each round: a figure load moves less than wall time. */
const cpuPerDelivery: number[] = []
/** The main thread's busy time (event-loop utilisation) per arrival in each round. */
const mainBusy: number[] = []
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]?.toFixed(0)
for (let round = -WARMUP; round < ROUNDS; round++) {
  arrivals = []
  const cpuBefore = process.cpuUsage()
  const busyBefore = performance.eventLoopUtilization()
  await db.transaction((tx) =>
    events.append(tx, {
      workspaceId: WS,
      kind: 'run.failed',
      subjectId: `run_${round}`,
      data: { run_id: `run_${round}`, agent_id: 'agt_b', task_id: null, status: 'failed', outcome: null },
    }),
  )
  const committed = wallNow()
  events.notify()
  const deadline = Date.now() + ROUND_TIMEOUT_MS
  while (arrivals.length < DESTINATIONS && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 2))
    await collect()
  }
  if (arrivals.length < DESTINATIONS)
    console.log(`round ${round}: only ${arrivals.length} of ${DESTINATIONS} arrived`)
  const spans = arrivals.map((t) => t - committed).sort((a, b) => a - b)
  const cpu = process.cpuUsage(cpuBefore)
  const cpuPerArrival = (cpu.user + cpu.system) / Math.max(1, arrivals.length)
  const busyPerArrival =
    (performance.eventLoopUtilization(busyBefore).active * 1000) / Math.max(1, arrivals.length)
  console.log(
    `  ${round < 0 ? 'warm-up' : 'round'} ${round}: first ${ms(spans[0] ?? NaN)}, p50 ${ms(pct(spans, 50))}, p99 ${ms(pct(spans, 99))}, max ${ms(spans.at(-1) ?? NaN)}; ` +
      `this process's CPU ${cpuPerArrival.toFixed(0)} µs per arrival, main thread busy ${busyPerArrival.toFixed(0)} µs`,
  )
  if (round < 0) {
    await new Promise((r) => setTimeout(r, 200))
    await collect()
    continue
  }
  cpuPerDelivery.push(cpuPerArrival)
  mainBusy.push(busyPerArrival)
  latencies.push(...arrivals.map((t) => t - committed))
  await new Promise((r) => setTimeout(r, 200))
  await collect()
}
await service.stop()
if (profiler && PROFILE) {
  const { profile } = await profiler.post('Profiler.stop')
  writeFileSync(PROFILE, JSON.stringify(profile))
  profiler.disconnect()
}
latencies.sort((a, b) => a - b)
console.log(
  `machine: ${cpus().length} cores, load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
)
console.log(
  `one event to ${DESTINATIONS} destinations (${types.join(', ')} in turn), SQLite, pool ${CONCURRENCY}, ` +
    `receiver ${INLINE_RECEIVER ? 'in this process' : 'in its own process'}, ${ROUNDS} rounds` +
    `${WARMUP > 0 ? ` after ${WARMUP} warm-up rounds` : ''}: ` +
    `commit→receiver p50 ${ms(pct(latencies, 50))}, p99 ${ms(pct(latencies, 99))}, max ${ms(latencies.at(-1) ?? NaN)} (${latencies.length} arrivals); ` +
    `per arrival, median of rounds: this process's CPU ${median(cpuPerDelivery)} µs, main thread busy ${median(mainBusy)} µs`,
)

// NATS throughput: the transport alone, 64 publishes in flight.
const transport = natsTransport()
// A NATS destination to publish as (made now when `--types` left NATS out; the dispatcher has stopped).
const destination =
  (await service.list(WS, 0, 200)).rows.find((d) => d.type === 'nats') ??
  (await service.create(WS, {
    type: 'nats',
    name: 'throughput',
    events: ['run.failed'],
    config: { servers: [nats.url], subject_prefix: 'bench' },
  }))
let next = 0
let failed = 0
const started = performance.now()
await Promise.all(
  Array.from({ length: 64 }, async () => {
    while (next < PUBLISHES) {
      const i = next++
      const result = await transport.send(
        destination,
        {
          deliveryId: `dlv_${i}`,
          kind: 'run.failed',
          payload: {
            id: `evt_bench_${i}`,
            event: 'run.failed',
            ts: new Date().toISOString(),
            run_id: `run_${i}`,
          },
        },
        { timeoutMs: 10_000 },
      )
      if (!result.ok) failed++
    }
  }),
)
const seconds = (performance.now() - started) / 1000
console.log(
  `NATS transport: ${PUBLISHES} JetStream publishes (64 in flight, each acknowledged): ${(PUBLISHES / seconds).toFixed(0)} events/s, ${failed} failed`,
)
await transport.close?.()

await nc.drain()
await db.close()
inline?.closeAllConnections()
if (inline) await new Promise<void>((r) => inline?.close(() => r()))
receiverProcess?.send({ stop: true })
await nats.stop()
rmSync(dir, { recursive: true, force: true })
