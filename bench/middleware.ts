/**
 * What the limits middleware costs per request: a trivial POST route measured bare, behind auth + rate limit +
 * body guard (no Idempotency-Key), and behind the same with a fresh Idempotency-Key each time (claim + store).
 * In-process through `app.request`, so the figures are the middleware's, not the network's.
 *
 *   npx tsx bench/middleware.ts [iterations] [sqlite|postgres-url]
 */
import { performance } from 'node:perf_hooks'
import { OpenAPIHono } from '@hono/zod-openapi'
import { loadConfig } from '../src/config.js'
import { systemClock } from '../src/domain/clock.js'
import { errorResponse, toApiError } from '../src/http/errors.js'
import { auth } from '../src/http/middleware/auth.js'
import { bodyGuard } from '../src/http/middleware/body.js'
import { idempotency } from '../src/http/middleware/idempotency.js'
import { rateLimit } from '../src/http/middleware/rate-limit.js'
import { requestId } from '../src/http/middleware/request-id.js'
import { createServices } from '../src/services.js'
import { migrate } from '../src/store/migrations/index.js'
import { openDb } from '../src/store/open.js'
import type { AppEnv } from '../src/surface/context.js'
import { throwawaySqliteUrl } from './support/throwaway-db.js'

const iterations = Math.min(Number(process.argv[2] ?? 3000), 50_000)
const databaseUrl = process.argv[3] ?? throwawaySqliteUrl()

const db = await openDb(databaseUrl)
await migrate(db)
const config = loadConfig({}, { databaseUrl, workers: false })
const services = await createServices({ db, clock: systemClock, config })
const { token } = await services.keyAdmin.issue({
  workspace: 'bench',
  tier: 'enterprise',
  limitPerHour: 1e9,
  burstLimit: 1e9,
})

const handler = (c: { json: (b: unknown, s: 201) => Response }) => c.json({ ok: true }, 201)

const bare = new OpenAPIHono<AppEnv>()
bare.post('/x', handler)

const guarded = new OpenAPIHono<AppEnv>()
guarded.onError((err, c) => errorResponse(c, toApiError(err)))
guarded.use(
  '*',
  requestId(),
  auth(services.keys),
  rateLimit(services.limits),
  bodyGuard(config.maxBodyBytes),
  idempotency(services.idempotency),
)
guarded.post('/x', handler)

const body = JSON.stringify({ name: 'bench', capabilities: ['a', 'b'], behavior: 'autonomous' })
const baseHeaders = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }

async function measure(name: string, send: (i: number) => Response | Promise<Response>): Promise<number> {
  for (let i = 0; i < Math.min(200, iterations); i++) await send(-i - 1) // warm up
  const started = performance.now()
  for (let i = 0; i < iterations; i++) {
    const res = await send(i)
    if (res.status !== 201) throw new Error(`${name}: unexpected ${res.status} ${await res.text()}`)
  }
  const perRequestUs = ((performance.now() - started) * 1000) / iterations
  return perRequestUs
}

const results: [string, number][] = []
results.push([
  'bare route',
  await measure('bare', () => bare.request('/x', { method: 'POST', body, headers: baseHeaders })),
])
results.push([
  'middleware, no Idempotency-Key',
  await measure('no-key', () => guarded.request('/x', { method: 'POST', body, headers: baseHeaders })),
])
results.push([
  'middleware, fresh Idempotency-Key',
  await measure('key', (i) =>
    guarded.request('/x', {
      method: 'POST',
      body,
      headers: { ...baseHeaders, 'idempotency-key': `bench-${i}` },
    }),
  ),
])
results.push([
  'middleware, replayed Idempotency-Key',
  await measure('replay', () =>
    guarded.request('/x', {
      method: 'POST',
      body,
      headers: { ...baseHeaders, 'idempotency-key': 'bench-0' },
    }),
  ),
])

const base = results[0]?.[1] ?? 1
console.log(`store: ${db.dialect}, iterations: ${iterations}`)
console.log('case'.padEnd(40), 'µs/request'.padStart(12), 'overhead µs'.padStart(12))
for (const [name, us] of results) {
  console.log(name.padEnd(40), us.toFixed(1).padStart(12), (us - base).toFixed(1).padStart(12))
}
await services.stop()
await db.close()
