/**
 * Quotas under load (issue 44), on SQLite (the default store), one server in this process on loopback:
 *
 * 1. /healthz latency (p50, p99 of --probes sequential GETs) with no stream socket open, then with 3 sockets each
 *    subscribed to the most topics a connection may hold (the server's default, 100: connector topics, each read on
 *    every wake-up and fallback poll). Target: p99 under 50 ms on 2 cores.
 * 2. Idempotency storage of one workspace over --requests keyed POSTs (ingest batches of one record, 8 at a time),
 *    with the standard tier's idempotency_keys quota (10,000) and idempotency_bytes set to --bytes-quota: the bytes the
 *    store holds (its usage row and the answers' own sum) against the quota, and the answers by status and quota.
 *
 *   npm run bench:quotas -- [--probes 2000] [--requests 10000] [--bytes-quota 2097152]
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import WebSocket from 'ws'
import { startServer } from '../src/server.js'
import { LOOPBACK_TARGETS } from '../test/support/private-targets.js'

const args = process.argv.slice(2)
const option = (name: string, fallback: number, max: number): number => {
  const i = args.indexOf(name)
  const n = i >= 0 ? Number(args[i + 1]) : fallback
  return Number.isSafeInteger(n) && n >= 1 ? Math.min(n, max) : fallback
}
const PROBES = option('--probes', 2000, 100_000)
const REQUESTS = option('--requests', 10_000, 100_000)
const BYTES_QUOTA = option('--bytes-quota', 2 * 1024 * 1024, 2 ** 40)
const SOCKETS = 3
const TOPICS = 100

const dir = mkdtempSync(join(tmpdir(), 'agentops-quotas-'))
const server = await startServer({
  config: {
    port: 0,
    host: '127.0.0.1',
    databaseUrl: `sqlite:${join(dir, 'quotas.db')}`,
    privateTargets: LOOPBACK_TARGETS,
    logLevel: 'silent',
  },
})

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0

async function healthz(label: string): Promise<void> {
  const times: number[] = []
  for (let i = 0; i < PROBES; i++) {
    const started = performance.now()
    const res = await fetch(`${server.url}/healthz`)
    await res.arrayBuffer()
    times.push(performance.now() - started)
  }
  times.sort((a, b) => a - b)
  const ms = (v: number) => `${v.toFixed(2)} ms`
  console.log(
    `${label.padEnd(44)} p50 ${ms(quantile(times, 0.5))}   p99 ${ms(quantile(times, 0.99))}   max ${ms(times.at(-1) ?? 0)}`,
  )
}

async function openSubscribed(token: string, n: number): Promise<WebSocket> {
  const ws = new WebSocket(`${server.url.replace(/^http/, 'ws')}/v1/stream`, {
    headers: { authorization: `Bearer ${token}` },
  })
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve())
    ws.once('error', reject)
  })
  let acks = 0
  const done = new Promise<void>((resolve) => {
    ws.on('message', (d) => {
      const m = JSON.parse(d.toString()) as { type: string }
      if (m.type === 'subscribed' || m.type === 'error') acks++
      if (acks === TOPICS + 1) resolve()
    })
  })
  // One topic more than the quota, in messages of 50: the last is refused, so each socket holds exactly the maximum.
  const topics = Array.from({ length: TOPICS + 1 }, (_, i) => `connector:s${n}-${i}`)
  for (let i = 0; i < topics.length; i += 50)
    ws.send(JSON.stringify({ type: 'subscribe', topics: topics.slice(i, i + 50) }))
  await done
  return ws
}

try {
  const services = server.services
  console.log(
    `Quotas bench, ${new Date().toISOString()}, SQLite, one process (the machine may be shared: see load)`,
  )
  const streamKey = await services.keyAdmin.issue({
    workspace: 'bench-stream',
    tier: 'enterprise',
    limitPerHour: 10_000_000,
  })
  await healthz('/healthz, no socket')
  const sockets: WebSocket[] = []
  for (let i = 0; i < SOCKETS; i++) sockets.push(await openSubscribed(streamKey.token, i))
  const held = `${SOCKETS} sockets × ${TOPICS} topics`
  await new Promise((r) => setTimeout(r, 2_500)) // past one fallback poll of every topic
  await healthz(`/healthz, ${held}`)
  for (const ws of sockets) ws.close()

  const key = await services.keyAdmin.issue({
    workspace: 'bench-idempotency',
    tier: 'enterprise',
    limitPerHour: 10_000_000,
    burstLimit: 1_000_000,
    quotas: { idempotency_keys: 10_000, idempotency_bytes: BYTES_QUOTA },
  })
  const outcomes = new Map<string, number>()
  let next = 0
  const started = performance.now()
  const worker = async () => {
    while (next < REQUESTS) {
      const i = next++
      const res = await fetch(`${server.url}/v1/grid/connectors/bench/ingest`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key.token}`,
          'content-type': 'application/json',
          'idempotency-key': `bench-${i}`,
        },
        body: JSON.stringify({
          records: [
            { id: `r${i}`, ts: '2026-01-01T00:00:00Z', source: 'bench', policy_class: 'public', body: { i } },
          ],
        }),
      })
      const body = (await res.json()) as { error?: { detail?: { quota?: string } } }
      const outcome = res.status === 403 ? `403 ${body.error?.detail?.quota}` : String(res.status)
      outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1)
    }
  }
  await Promise.all(Array.from({ length: 8 }, worker))
  const seconds = (performance.now() - started) / 1000
  const usage = await services.quotas.usageOf(key.workspace_id, 'idempotency_bytes')
  const keys = await services.quotas.usageOf(key.workspace_id, 'idempotency_keys')
  const stored = await services.db.one<{ n: number | string; bytes: number | string | null }>(
    'SELECT COUNT(*) AS n, SUM(answer_bytes) AS bytes FROM idempotency_keys WHERE workspace_id = $1',
    [key.workspace_id],
  )
  console.log(`\n${REQUESTS} keyed ingest POSTs in ${seconds.toFixed(1)} s, 8 at a time`)
  console.log(`answers: ${[...outcomes].map(([o, n]) => `${o}: ${n}`).join(', ')}`)
  console.log(
    `stored answers: ${Number(stored?.n)} (usage row ${keys}, quota 10000); bytes: ${Number(stored?.bytes ?? 0)} ` +
      `(usage row ${usage}) of a ${BYTES_QUOTA}-byte quota`,
  )
  if (Number(stored?.bytes ?? 0) > BYTES_QUOTA || Number(stored?.bytes ?? 0) !== usage) process.exitCode = 1
} finally {
  await server.close()
  rmSync(dir, { recursive: true, force: true })
}
