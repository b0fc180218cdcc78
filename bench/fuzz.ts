/**
 * 10,000 bad bodies per surface (REST JSON bodies, GraphQL documents and variables, stream frames, ingest batches) on
 * SQLite and on PostgreSQL (when one can be started: test/support/postgres.ts), printing the answers by status;
 * exits 1 when any is a 5xx (or, on the stream, internal_error or a 1011 close). The generators are the fuzz test's
 * (test/support/bad-bodies.ts), which runs a few from the same seed.
 *
 *   npm run bench:fuzz -- [--runs 10000] [--seed 44] [--no-postgres]
 *
 * One server per store in this process, on loopback; every loop is bounded by --runs.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startServer } from '../src/server.js'
import { fuzzSurfaces, SURFACES, serverErrors } from '../test/support/bad-bodies.js'
import { LOOPBACK_TARGETS } from '../test/support/private-targets.js'
import { onPostgres } from './support/postgres.js'

const args = process.argv.slice(2)
const option = (name: string): string | undefined => {
  const i = args.indexOf(name)
  return i >= 0 ? args[i + 1] : undefined
}
const RUNS = Math.min(100_000, Math.max(1, Number(option('--runs') ?? 10_000)))
const SEED = Number(option('--seed') ?? 44)

let failed = false

async function fuzzStore(store: string, databaseUrl: string): Promise<void> {
  const server = await startServer({
    config: { port: 0, host: '127.0.0.1', databaseUrl, privateTargets: LOOPBACK_TARGETS, logLevel: 'silent' },
  })
  try {
    const key = await server.services.keyAdmin.issue({
      workspace: 'fuzz',
      tier: 'enterprise',
      limitPerHour: 10_000_000,
      burstLimit: 1_000_000,
    })
    const agent = await server.services.agents.create(key.workspace_id, {
      name: 'target',
      behavior: 'autonomous',
    })
    const started = Date.now()
    const counts = await fuzzSurfaces(
      { baseUrl: server.url, token: key.token, agentId: agent.id },
      RUNS,
      SEED,
    )
    const errors = serverErrors(counts)
    console.log(
      `\n${store}: ${RUNS} bad bodies per surface, seed ${SEED}, ${((Date.now() - started) / 1000).toFixed(1)} s`,
    )
    console.log('surface   5xx   answers by status')
    for (const surface of SURFACES) {
      const byStatus = [...counts[surface]].sort(([a], [b]) => a - b).map(([s, n]) => `${s}: ${n}`)
      console.log(`${surface.padEnd(9)} ${String(errors[surface]).padStart(3)}   ${byStatus.join(', ')}`)
      if (errors[surface] > 0) failed = true
    }
  } finally {
    await server.close()
  }
}

const dir = mkdtempSync(join(tmpdir(), 'agentops-fuzz-'))
try {
  await fuzzStore('SQLite', `sqlite:${join(dir, 'fuzz.db')}`)
} finally {
  rmSync(dir, { recursive: true, force: true })
}
if (!args.includes('--no-postgres')) await onPostgres(async (fresh) => fuzzStore('PostgreSQL', await fresh()))
console.log(failed ? '\nFAILED: some bad body answered a server error' : '\n0 × 5xx on every surface')
process.exit(failed ? 1 : 0)
