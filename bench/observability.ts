/**
 * What metrics and the request log cost per request, paired: the whole reference app (createApp) on one store,
 * built twice — with metrics and a request log line per request (pino, JSON, to /dev/null through the same
 * asynchronous destination stdout uses), and with both off — driven in alternating blocks through `app.request`,
 * so drift on a shared machine hits both sides alike. Prints µs per request for each side, per route, and the
 * overhead; the median block pair decides.
 *
 *   npx tsx bench/observability.ts [rounds] [requests-per-block]
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { destination, pino } from 'pino'
import { loadConfig } from '../src/config.js'
import { systemClock } from '../src/domain/clock.js'
import { createApp } from '../src/http/app.js'
import { createMetrics } from '../src/observability/metrics.js'
import { createServices } from '../src/services.js'
import { openDb } from '../src/store/db.js'
import { migrate } from '../src/store/migrations/index.js'

const rounds = Math.min(Number(process.argv[2] ?? 30), 500)
const perBlock = Math.min(Number(process.argv[3] ?? 500), 20_000)

const databaseUrl = `sqlite:${join(mkdtempSync(join(tmpdir(), 'agentops-bench-obs-')), 'bench.db')}`
const db = await openDb(databaseUrl)
await migrate(db)
const config = loadConfig({}, { databaseUrl, workers: false })
const logger = pino({ level: 'info' }, destination({ dest: '/dev/null', sync: false }))
const observed = createApp(
  await createServices({ db, clock: systemClock, config, logger, metrics: createMetrics() }),
)
const plain = await createServices({ db, clock: systemClock, config, logger: pino({ level: 'silent' }) })
const quiet = createApp(plain)

const { token } = await plain.keys.issue({
  workspace: 'bench',
  tier: 'enterprise',
  limitPerHour: 1e12,
  burstLimit: 1e12,
})
const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
const agent = (await (
  await quiet.request('/v1/agents', {
    method: 'POST',
    headers,
    body: JSON.stringify({ name: 'bench', behavior: 'autonomous', capabilities: [] }),
  })
).json()) as { agent_id: string }
const run = (await (
  await quiet.request(`/v1/agents/${agent.agent_id}/runs`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ inputs: {}, mode: 'dry_run' }),
  })
).json()) as { run_id: string }

type App = typeof quiet
const routes: { label: string; send: (app: App) => Response | Promise<Response> }[] = [
  { label: 'GET /v1/runs/{run_id}', send: (app) => app.request(`/v1/runs/${run.run_id}`, { headers }) },
  {
    label: 'POST /v1/agents',
    send: (app) =>
      app.request('/v1/agents', {
        method: 'POST',
        headers,
        body: '{"name":"bench","behavior":"autonomous","capabilities":["a"]}',
      }),
  },
]

async function block(app: App, send: (app: App) => Response | Promise<Response>): Promise<number> {
  const started = performance.now()
  for (let i = 0; i < perBlock; i++) await (await send(app)).arrayBuffer()
  return ((performance.now() - started) * 1000) / perBlock
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN

console.log(`bench:observability — ${rounds} rounds of ${perBlock} requests per side, alternating`)
for (const route of routes) {
  // Warm both sides (JIT, caches, bound metric children) before anything is timed.
  await block(observed, route.send)
  await block(quiet, route.send)
  const on: number[] = []
  const off: number[] = []
  const ratio: number[] = []
  for (let r = 0; r < rounds; r++) {
    // The order inside a pair alternates too, so neither side always runs second.
    const [first, second] = r % 2 === 0 ? [observed, quiet] : [quiet, observed]
    const a = await block(first, route.send)
    const b = await block(second, route.send)
    const [withObs, without] = first === observed ? [a, b] : [b, a]
    on.push(withObs)
    off.push(without)
    ratio.push(withObs / without)
  }
  const overhead = (median(ratio) - 1) * 100
  console.log(
    `${route.label.padEnd(24)} on ${median(on).toFixed(1).padStart(7)} µs/req   off ${median(off).toFixed(1).padStart(7)} µs/req   overhead ${overhead >= 0 ? '+' : ''}${overhead.toFixed(1)}% (median of ${rounds} paired blocks)`,
  )
}
logger.flush()
await db.close()
