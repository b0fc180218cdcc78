/**
 * `npm run chaos [-- --cycles 10 --clients 8 --store sqlite|postgres|both]`: kill -9 loops against real servers
 * under keyed POSTs, runs and ingest (test/support/chaos.ts), then the checks: every acknowledged write there once,
 * every replay byte-identical, every retried unanswered key exactly one resource. PostgreSQL is AGENTOPS_DATABASE_URL
 * when it names one, else a throwaway local cluster. Exits 1 when a promise broke.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { runChaos } from '../test/support/chaos.js'
import { createDatabase, type PostgresServer, startPostgres } from '../test/support/postgres.js'

const { values } = parseArgs({
  options: {
    cycles: { type: 'string', default: '10' },
    clients: { type: 'string', default: '8' },
    store: { type: 'string', default: 'both' },
  },
})
const cycles = Number(values.cycles)
const clients = Number(values.clients)
if (!Number.isInteger(cycles) || cycles < 1) throw new Error('--cycles must be a positive integer')
if (!Number.isInteger(clients) || clients < 1) throw new Error('--clients must be a positive integer')
if (!['sqlite', 'postgres', 'both'].includes(values.store))
  throw new Error('--store must be sqlite, postgres or both')

let failed = false
let postgres: PostgresServer | undefined
try {
  const stores: [string, () => Promise<string>][] = []
  if (values.store !== 'postgres') {
    stores.push([
      'sqlite',
      async () => `sqlite:${join(mkdtempSync(join(tmpdir(), 'agentops-chaos-')), 'db.sqlite')}`,
    ])
  }
  if (values.store !== 'sqlite') {
    stores.push([
      'postgres',
      async () => {
        const given = process.env.AGENTOPS_DATABASE_URL ?? ''
        if (/^postgres(ql)?:/.test(given)) return given
        postgres = await startPostgres()
        return createDatabase(postgres.url)
      },
    ])
  }
  for (const [name, url] of stores) {
    const began = Date.now()
    const report = await runChaos({
      databaseUrl: await url(),
      cycles,
      clients,
      loadMs: [300, 1500],
      log: (line) => console.log(`[${name}] ${line}`),
    })
    console.log(
      `[${name}] ${report.cycles} kill -9 cycles in ${((Date.now() - began) / 1000).toFixed(1)} s: ` +
        `${report.answered} answered, ${report.unanswered} unanswered and retried, ${report.replays} replays, ` +
        `${report.violations.length} broken promises`,
    )
    for (const v of report.violations) console.log(`[${name}]   ${v}`)
    if (report.violations.length > 0) failed = true
  }
} finally {
  await postgres?.stop()
}
process.exitCode = failed ? 1 : 0
