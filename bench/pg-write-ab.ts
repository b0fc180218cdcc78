/**
 * PostgreSQL's write side, two checkouts compared in one run: the reference server of `--base <dir>` (a checkout of
 * the earlier code with its node_modules) and of this checkout, each in its own process on its own database of one
 * throwaway cluster (test/support/postgres.ts), measured in alternated rounds so both see the same machine. Made
 * for a shared machine, where req/s says little: per request (POST /v1/agents with a fresh Idempotency-Key) and
 * per record (ingest, 500-record batches from 4 clients) it prints the server's CPU and its PostgreSQL backends'
 * CPU (both from /proc), the socket writes to PostgreSQL and the statements in them under load, and the writes of
 * a keyed POST made alone (its round trips).
 *
 *   npx tsx bench/pg-write-ab.ts --base <dir> [--rounds 4] [--seconds 4] [--batches 10]
 *
 * Loopback only; every loop is bounded.
 */

import type { ChildProcess } from 'node:child_process'
import { existsSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import postgres from 'postgres'
import { createDatabase, startPostgres } from '../test/support/postgres.js'
import type { TargetInfo } from './http-targets.js'
import { withFreshIdempotencyKey } from './support/fresh-key.js'
import { cpuSeconds } from './support/proc-cpu.js'
import { ROOT, startServerChild, stopServerChild } from './support/server-child.js'

const args = process.argv.slice(2)
const option = (name: string): string | undefined => {
  const i = args.indexOf(name)
  return i >= 0 ? args[i + 1] : undefined
}
const base = option('--base')
if (!base) throw new Error('--base <dir>: the checkout to compare with')
const ROUNDS = Math.min(20, Number(option('--rounds') ?? 4))
const SECONDS = Math.min(30, Number(option('--seconds') ?? 4))
const BATCHES = Math.min(50, Number(option('--batches') ?? 10))
const ALONE = 40

interface Side {
  name: string
  info: TargetInfo
  child: ChildProcess
  pid: number
  database: string
  countFile: string
}

async function main(): Promise<void> {
  const pg = await startPostgres()
  const admin = postgres(pg.url, { max: 1, onnotice: () => {} })
  const port = Number(new URL(pg.url).port)
  const sides: Side[] = []
  try {
    for (const [name, root] of [
      ['base', base],
      ['this', ROOT],
    ] as const) {
      const url = await createDatabase(pg.url)
      const countFile = join(tmpdir(), `pg-write-ab-${name}-${process.pid}.json`)
      const started = await startServerChild<TargetInfo>({
        script: 'http-targets.ts',
        args: ['reference', url],
        root,
        name,
        nodeArgs: ['--import', join(ROOT, 'bench', 'support', 'count-pg-writes.mjs')],
        env: {
          AGENTOPS_LOG_LEVEL: 'info',
          AGENTOPS_COUNT_PG_PORT: String(port),
          AGENTOPS_COUNT_FILE: countFile,
        },
      })
      const { child, ...info } = started
      sides.push({
        name,
        info,
        child,
        pid: child.pid ?? 0,
        database: new URL(url).pathname.slice(1),
        countFile,
      })
    }

    const backendCpu = async (s: Side): Promise<number> => {
      const rows = await admin<
        { pid: number }[]
      >`SELECT pid FROM pg_stat_activity WHERE datname = ${s.database}`
      // A backend that ended meanwhile counts as nothing.
      return rows.reduce((sum, r) => sum + (cpuSeconds(r.pid) || 0), 0)
    }
    const counts = async (s: Side): Promise<{ writes: number; syncs: number }> => {
      rmSync(s.countFile, { force: true })
      process.kill(s.pid, 'SIGUSR2')
      // The child writes the file when its event loop gets to the signal: on a loaded machine that takes a while.
      for (let i = 0; i < 200 && !existsSync(s.countFile); i++) await new Promise((r) => setTimeout(r, 25))
      return JSON.parse(readFileSync(s.countFile, 'utf8')) as { writes: number; syncs: number }
    }
    const commits = async (s: Side): Promise<number> => {
      const [row] = await admin<
        { n: string }[]
      >`SELECT xact_commit::text AS n FROM pg_stat_database WHERE datname = ${s.database}`
      return Number(row?.n ?? 0)
    }
    /** Runs `work`, returning per-op figures of server CPU, backend CPU, writes, statements and commits. */
    const measured = async (s: Side, work: () => Promise<number>) => {
      const c0 = await counts(s)
      const x0 = await commits(s)
      const [s0, b0] = [cpuSeconds(s.pid), await backendCpu(s)]
      const ops = await work()
      const [s1, b1] = [cpuSeconds(s.pid), await backendCpu(s)]
      const c1 = await counts(s)
      const x1 = await commits(s)
      return {
        ops,
        serverUs: ((s1 - s0) * 1e6) / ops,
        backendUs: ((b1 - b0) * 1e6) / ops,
        writes: (c1.writes - c0.writes) / ops,
        statements: (c1.syncs - c0.syncs) / ops,
        commits: (x1 - x0) / ops,
      }
    }

    const postLoad = (s: Side, seconds: number, connections: number, amount?: number) =>
      autocannon({
        url: s.info.url,
        connections,
        ...(amount ? { amount } : { duration: seconds }),
        timeout: 30,
        requests: [
          withFreshIdempotencyKey({
            method: 'POST',
            path: '/v1/agents',
            headers: { authorization: `Bearer ${s.info.token}`, 'content-type': 'application/json' },
            body: JSON.stringify({ name: 'ab', behavior: 'autonomous', capabilities: ['a'] }),
          }),
        ],
      }) as Promise<autocannon.Result>
    const checked = (r: autocannon.Result) => {
      if (r.non2xx + r.errors + r.timeouts > 0) {
        throw new Error(`non-2xx ${r.non2xx}, errors ${r.errors}, timeouts ${r.timeouts}`)
      }
      return r
    }

    let batchSeq = 0
    const ingest = async (s: Side): Promise<number> => {
      const headers = { authorization: `Bearer ${s.info.token}`, 'content-type': 'application/json' }
      await Promise.all(
        Array.from({ length: 4 }, async (_, client) => {
          for (let b = 0; b < BATCHES; b++) {
            const batch = ++batchSeq
            const res = await fetch(`${s.info.url}/v1/grid/connectors/ab-${client}/ingest`, {
              method: 'POST',
              headers,
              body: JSON.stringify({
                records: Array.from({ length: 500 }, (_, i) => ({
                  id: `b${batch}-r${i}`,
                  ts: new Date(Date.UTC(2026, 0, 1, 0, 0, 0, i)).toISOString(),
                  source: 'bench',
                  policy_class: 'internal',
                  body: { n: i, text: 'a short payload' },
                })),
              }),
            })
            if (res.status !== 202) throw new Error(`ingest answered ${res.status}: ${await res.text()}`)
            await res.arrayBuffer()
          }
        }),
      )
      return 4 * BATCHES * 500
    }

    // Warm-up: JIT, prepared statements, connections.
    for (const s of sides) {
      checked(await postLoad(s, 2, 50))
      await ingest(s)
    }

    const fmt = (n: number, d = 0) => n.toFixed(d).padStart(7)
    console.log(
      'round side   | POST: rps   server µs  PG µs  writes stmts commits | alone: writes stmts | ingest/record: server µs  PG µs  writes/batch',
    )
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? sides : [...sides].reverse()
      for (const s of order) {
        let rps = 0
        const post = await measured(s, async () => {
          const r = checked(await postLoad(s, SECONDS, 50))
          rps = r.requests.average
          return r.requests.total
        })
        const alone = await measured(s, async () => {
          const r = checked(await postLoad(s, 0, 1, ALONE))
          return r.requests.total
        })
        const rec = await measured(s, () => ingest(s))
        console.log(
          `${String(round).padStart(5)} ${s.name.padEnd(6)} | ${fmt(rps)} ${fmt(post.serverUs)} ${fmt(post.backendUs)} ${fmt(post.writes, 2)} ${fmt(post.statements, 2)} ${fmt(post.commits, 2)} | ${fmt(alone.writes, 2)} ${fmt(alone.statements, 2)} | ${fmt(rec.serverUs, 1)} ${fmt(rec.backendUs, 1)} ${fmt(rec.writes * 500, 2)}`,
        )
      }
    }
  } finally {
    await Promise.all(sides.map((s) => stopServerChild(s.child)))
    await admin.end()
    await pg.stop()
  }
}

await main()
