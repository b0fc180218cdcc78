/**
 * How much a server's CPU per request moves from one process to the next: N fresh reference servers of the same
 * code, one after another, each loaded with cached GET /v1/runs/{id} (50 connections, a 2 s warm-up, then
 * `--seconds`), printing req/s, the server's CPU per GET (schedstat, all threads) and, on PostgreSQL, the
 * statements it sent per GET (its own /metrics counters). The spread is what a single-shot benchmark inherits;
 * `--pin` runs each server on the first core this process may use and this process (and the local database it
 * starts) on the others, as bench:http does.
 *
 *   npx tsx bench/process-spread.ts [--processes N] [--seconds S] [--sqlite] [--pin]
 */
import autocannon from 'autocannon'
import { createDatabase, startPostgres } from '../test/support/postgres.js'
import type { TargetInfo } from './http-targets.js'
import { pinBenchProcess } from './support/cpu-pinning.js'
import { cpuNanoseconds } from './support/proc-cpu.js'
import { startServerChild, stopServerChild } from './support/server-child.js'

const args = process.argv.slice(2)
const option = (name: string, fallback: number) => {
  const i = args.indexOf(name)
  const value = i >= 0 ? Number(args[i + 1]) : fallback
  return Number.isFinite(value) ? value : fallback
}
const processes = Math.min(50, Math.max(1, option('--processes', 8)))
const seconds = Math.min(60, Math.max(1, option('--seconds', 4)))
const onSqlite = args.includes('--sqlite')
const cpus = pinBenchProcess(args.includes('--pin'))
const pg = onSqlite ? undefined : await startPostgres()

/** Statements the server has sent so far, by its statement-latency histogram's counts (PostgreSQL only). */
async function statementsSent(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text()
  let n = 0
  for (const line of text.split('\n')) {
    if (/^agentops_store_statement_duration_seconds_count\{/.test(line)) n += Number(line.split(' ').pop())
  }
  return n
}

const cpuPerGet: number[] = []
try {
  for (let i = 0; i < processes; i++) {
    const database = pg ? await createDatabase(pg.url) : undefined
    const { child, ...info } = await startServerChild<TargetInfo>({
      script: 'http-targets.ts',
      args: database ? ['reference', database] : ['reference'],
      env: { AGENTOPS_LOG_LEVEL: 'info' },
      name: `server ${i + 1}`,
      cpus: cpus.server,
    })
    const load = (d: number) =>
      autocannon({
        url: info.url,
        connections: 50,
        duration: d,
        requests: [
          {
            method: 'GET',
            path: `/v1/runs/${info.runId}`,
            headers: { authorization: `Bearer ${info.token}` },
          },
        ],
      })
    await load(2)
    const sent = pg ? await statementsSent(info.url) : 0
    const cpuBefore = cpuNanoseconds(child.pid as number)
    const r = await load(seconds)
    const us = (cpuNanoseconds(child.pid as number) - cpuBefore) / 1e3 / r.requests.total
    const statements = pg ? ((await statementsSent(info.url)) - sent) / r.requests.total : Number.NaN
    cpuPerGet.push(us)
    console.log(
      `process ${String(i + 1).padStart(2)}  ${r.requests.average.toFixed(0).padStart(6)} req/s  ${us.toFixed(1).padStart(5)} µs CPU/GET${pg ? `  statements/GET ${statements.toFixed(4)}` : ''}${r.non2xx ? `  non-2xx ${r.non2xx}` : ''}`,
    )
    await stopServerChild(child)
  }
} finally {
  await pg?.stop()
}
const sorted = [...cpuPerGet].sort((a, b) => a - b)
console.log(
  `${onSqlite ? 'SQLite' : 'PostgreSQL'}, ${cpus.server === undefined ? 'unpinned' : 'pinned'}: ${(sorted[0] as number).toFixed(1)} to ${(sorted[sorted.length - 1] as number).toFixed(1)} µs CPU per GET over ${processes} processes`,
)
