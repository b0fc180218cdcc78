/**
 * Where PostgreSQL spends its CPU while the reference server answers keyed POSTs (bench:http's `POST /v1/agents` with
 * a fresh Idempotency-Key, 50 connections): every postgres process's CPU (schedstat) over a 5 s load, per request,
 * grouped by what the process is (pg_stat_activity's backend type and the server's connection name:
 * `agentops-deferred` the keyed units' commits, `agentops-pipeline` the hot path's single statements,
 * `agentops-changes` the change feed's LISTEN, the WAL writer...). A throwaway cluster of the tests' harness, one
 * database, the server on the compiled build (bench/http-targets.ts).
 *
 *   npx tsx bench/pg-backends.ts [--rounds N] [--seconds S]
 */
import { readdirSync, readFileSync } from 'node:fs'
import autocannon from 'autocannon'
import postgres from 'postgres'
import { createDatabase, startPostgres } from '../test/support/postgres.js'
import type { TargetInfo } from './http-targets.js'
import { cpuNanoseconds } from './support/proc-cpu.js'
import { keyedAgentCreate } from './support/requests.js'
import { startServerChild, stopServerChild } from './support/server-child.js'

const args = process.argv.slice(2)
const option = (name: string, fallback: number) => {
  const i = args.indexOf(name)
  return i >= 0 ? Number(args[i + 1] ?? fallback) : fallback
}
const rounds = Math.max(1, option('--rounds', 2))
const seconds = Math.max(1, option('--seconds', 5))

/** CPU time of a process so far, in ns (0 once it is gone). */
function cpuNs(pid: number): number {
  try {
    return cpuNanoseconds(pid)
  } catch {
    return 0
  }
}

/** Every process of this machine named postgres. */
function postgresPids(): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map(Number)
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres'
      } catch {
        return false
      }
    })
}

const pg = await startPostgres()
const url = await createDatabase(pg.url)
const admin = postgres(pg.url, { max: 1, onnotice: () => {} })
const target = await startServerChild<TargetInfo>({
  script: 'http-targets.ts',
  args: ['reference', url],
  name: 'reference',
})
const load = (s: number) =>
  new Promise<number>((resolve, reject) =>
    autocannon(
      { url: target.url, connections: 50, duration: s, requests: [keyedAgentCreate(target)] },
      (err, result) => (err ? reject(err) : resolve(result.requests.total)),
    ),
  )

/** What each postgres process is: its backend type and connection name, for those pg_stat_activity lists. */
async function labels(): Promise<Map<number, string>> {
  const rows = await admin<{ pid: number; backend_type: string; app: string }[]>`
    SELECT pid, backend_type, coalesce(application_name, '') AS app FROM pg_stat_activity`
  return new Map(rows.map((r) => [Number(r.pid), r.app ? `${r.backend_type} ${r.app}` : r.backend_type]))
}

try {
  await load(3)
  for (let round = 1; round <= rounds; round++) {
    const before = new Map(postgresPids().map((pid) => [pid, cpuNs(pid)]))
    const requests = await load(seconds)
    const names = await labels()
    const spent = new Map<string, number>()
    for (const pid of postgresPids()) {
      const label = names.get(pid) ?? 'other (postmaster, checkpointer, background writer)'
      spent.set(label, (spent.get(label) ?? 0) + cpuNs(pid) - (before.get(pid) ?? cpuNs(pid)))
    }
    const total = [...spent.values()].reduce((a, b) => a + b, 0)
    console.log(
      `round ${round}: ${requests} keyed POSTs, PostgreSQL ${(total / requests / 1e3).toFixed(1)} µs of CPU a request`,
    )
    for (const [label, ns] of [...spent.entries()].sort((a, b) => b[1] - a[1]))
      if (ns / requests / 1e3 >= 0.5)
        console.log(`  ${(ns / requests / 1e3).toFixed(1).padStart(7)} µs  ${label}`)
  }
} finally {
  await stopServerChild(target.child)
  await admin.end()
  await pg.stop()
}
