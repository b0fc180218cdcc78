/**
 * Fan-out latency: one record committed on a connector topic, delivered to 1, 100 and 1,000 idle /v1/stream
 * subscribers of that topic, on SQLite and on PostgreSQL (started by the tests' harness, test/support/postgres.ts,
 * when it can be). The server runs in its own process (bench/http-targets.ts, as deployed: metrics and request log
 * on); the subscribers are WebSocket clients in this one.
 *
 *   npm run bench:fanout -- [--rounds <n>] [--no-postgres] [--subscribers 1,100,1000] [--profile <dir>]
 *
 * A round sends one POST …/ingest with one record and times, for every subscriber, the span from just before the
 * request is sent to the arrival of the record on its socket (so the figure includes the commit, the wake-up, the
 * one shared read and the writes to every socket, and this process's own reading of 1,000 frames). Rounds are
 * 100 ms apart, so the subscribers are idle when each starts. p50/p99/max are over every delivery of every round.
 * Loopback only; every loop and wait is bounded. --profile writes a V8 CPU profile of each server process into <dir>.
 */

import { cpus, loadavg } from 'node:os'
import { performance } from 'node:perf_hooks'
import WebSocket from 'ws'
import { createDatabase, startPostgres } from '../test/support/postgres.js'
import type { TargetInfo } from './http-targets.js'
import { cpuSeconds } from './support/proc-cpu.js'
import { startServerChild } from './support/server-child.js'

const args = process.argv.slice(2)
const option = (name: string): string | undefined => {
  const i = args.indexOf(name)
  return i >= 0 ? args[i + 1] : undefined
}
const ROUNDS = Math.min(200, Math.max(1, Number(option('--rounds') ?? 20)))
const COUNTS = (option('--subscribers') ?? '1,100,1000')
  .split(',')
  .map((n) => Math.min(5000, Math.max(1, Number(n))))
const CONNECTOR = 'fanout'
const TOPIC = `connector:${CONNECTOR}`
/** Sockets opened at once while connecting subscribers. */
const OPEN_CONCURRENCY = 50
const ROUND_TIMEOUT_MS = 10_000
const PAUSE_MS = 100
const profileDir = option('--profile')
const RECORD_SEQ = /"seq":(\d+)/

interface Row {
  store: string
  subscribers: number
  deliveries: number
  p50: number
  p99: number
  max: number
  /** Server CPU (user + system) per round: the ingest request, the wake-up, the read and every socket write. */
  cpuMs: number
}

function startReference(databaseUrl?: string) {
  return startServerChild<TargetInfo>({
    script: 'http-targets.ts',
    args: ['reference', ...(databaseUrl ? [databaseUrl] : [])],
    nodeArgs: profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : [],
    env: { AGENTOPS_LOG_LEVEL: 'info' },
  })
}

/** A subscriber: resolves once subscribed; `arrived` is told the time each record arrives. */
function subscribe(target: TargetInfo, arrived: (seq: number, at: number) => void): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${target.url.replace(/^http/, 'ws')}/v1/stream`, {
      headers: { authorization: `Bearer ${target.token}` },
    })
    const timer = setTimeout(() => reject(new Error('no subscribed ack within 10 s')), 10_000)
    ws.on('message', (data) => {
      const at = performance.now()
      const text = data.toString()
      // Not JSON.parse: 1,000 parses of a record with its proof would add this process's time to the figure.
      // A record message starts {"type":"record","topic":…,"seq":N (the stream's own field order).
      if (text.startsWith('{"type":"record"')) arrived(Number(RECORD_SEQ.exec(text)?.[1]), at)
      else if (text.startsWith('{"type":"subscribed"')) {
        clearTimeout(timer)
        resolve(ws)
      }
    })
    ws.once('open', () => ws.send(JSON.stringify({ type: 'subscribe', topics: [TOPIC] })))
    ws.once('error', (err) => {
      clearTimeout(timer)
      reject(err)
    })
  })
}

async function ingestOne(target: TargetInfo, seq: number): Promise<void> {
  const res = await fetch(`${target.url}/v1/grid/connectors/${CONNECTOR}/ingest`, {
    method: 'POST',
    headers: { authorization: `Bearer ${target.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      records: [
        { id: `f${seq}`, ts: '2026-11-24T06:00:00Z', source: 'bench', policy_class: 'public', body: { seq } },
      ],
    }),
  })
  if (res.status !== 202) throw new Error(`ingest answered ${res.status}: ${await res.text()}`)
  await res.arrayBuffer()
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] as number
}

/** Measures every subscriber count on one server, the sockets of a count kept open for the next, bigger one. */
async function measureStore(store: string, target: TargetInfo, pid: number | undefined): Promise<Row[]> {
  const rows: Row[] = []
  const sockets: WebSocket[] = []
  let seq = 0
  let sentAt = 0
  let pending = 0
  let roundDone: (() => void) | undefined
  const latencies: number[] = []
  const arrived = (recordSeq: number, at: number) => {
    if (recordSeq !== seq) return // a straggler of an earlier round (none is expected)
    latencies.push(at - sentAt)
    if (--pending === 0) roundDone?.()
  }
  try {
    for (const count of COUNTS) {
      while (sockets.length < count) {
        const batch = Math.min(OPEN_CONCURRENCY, count - sockets.length)
        sockets.push(...(await Promise.all(Array.from({ length: batch }, () => subscribe(target, arrived)))))
      }
      latencies.length = 0
      let cpuBefore = 0
      // One warm-up round (not counted): every subscriber has caught up and joined the topic's shared feed.
      for (let round = -1; round < ROUNDS; round++) {
        seq++
        pending = count
        const done = new Promise<void>((resolve, reject) => {
          const timer = setTimeout(
            () => reject(new Error(`${pending} of ${count} subscribers missed record ${seq}`)),
            ROUND_TIMEOUT_MS,
          )
          roundDone = () => {
            clearTimeout(timer)
            resolve()
          }
        })
        sentAt = performance.now()
        await ingestOne(target, seq)
        await done
        if (round === -1) {
          latencies.length = 0
          cpuBefore = cpuSeconds(pid) * 1000
        }
        await new Promise((r) => setTimeout(r, PAUSE_MS))
      }
      const sorted = [...latencies].sort((a, b) => a - b)
      rows.push({
        store,
        subscribers: count,
        deliveries: sorted.length,
        p50: percentile(sorted, 50),
        p99: percentile(sorted, 99),
        max: sorted.at(-1) ?? Number.NaN,
        cpuMs: (cpuSeconds(pid) * 1000 - cpuBefore) / ROUNDS,
      })
    }
  } finally {
    for (const ws of sockets) ws.terminate()
  }
  return rows
}

function printTable(rows: Row[]): void {
  const ms = (n: number) => n.toFixed(1).padStart(8)
  console.log(`\nfan-out: one record to N idle /v1/stream subscribers of its topic (${ROUNDS} rounds each)`)
  console.log(
    '| store      | subscribers | deliveries |   p50 ms |   p99 ms |   max ms | server CPU ms/event |',
  )
  console.log(
    '|------------|-------------|------------|----------|----------|----------|---------------------|',
  )
  for (const r of rows) {
    console.log(
      `| ${r.store.padEnd(10)} | ${String(r.subscribers).padStart(11)} | ${String(r.deliveries).padStart(10)} |${ms(r.p50)} |${ms(r.p99)} |${ms(r.max)} | ${r.cpuMs.toFixed(1).padStart(19)} |`,
    )
  }
  console.log(
    `load average at the end: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')} (${cpus().length} cores)`,
  )
}

function verdicts(rows: Row[]): void {
  const targets: [string, number][] = [
    ['SQLite', 50],
    ['PostgreSQL', 100],
  ]
  console.log('\ntargets (issue 23: one event to 1,000 idle subscribers)')
  for (const [store, limit] of targets) {
    const row = rows.find((r) => r.store === store && r.subscribers === 1000)
    if (!row) continue
    const verdict = row.p99 <= limit ? 'MET' : 'NOT MET'
    console.log(`  ${store} p99 ${row.p99.toFixed(1)} ms (target ≤ ${limit} ms): ${verdict}`)
  }
}

async function main(): Promise<void> {
  const rows: Row[] = []
  const sqlite = await startReference()
  try {
    rows.push(...(await measureStore('SQLite', sqlite, sqlite.child.pid)))
  } finally {
    sqlite.child.kill('SIGTERM')
  }
  if (!args.includes('--no-postgres')) {
    let stopPostgres: (() => Promise<void>) | undefined
    try {
      const server = await startPostgres()
      stopPostgres = server.stop
      const pg = await startReference(await createDatabase(server.url))
      try {
        rows.push(...(await measureStore('PostgreSQL', pg, pg.child.pid)))
      } finally {
        pg.child.kill('SIGTERM')
      }
    } catch (err) {
      console.log(`PostgreSQL skipped: ${(err as Error).message.split('\n')[0]}`)
    } finally {
      await stopPostgres?.()
    }
  }
  printTable(rows)
  verdicts(rows)
}

await main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
