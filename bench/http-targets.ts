/**
 * The servers `bench/http.ts` measures, each started in its own process so the load generator never shares an
 * event loop with the server it drives. Run as `node --import tsx bench/http-targets.ts <kind> [database-url]`;
 * the process prints one JSON line (`{url, token, runId}`) on stdout once it listens on 127.0.0.1.
 *
 *   reference  the reference server as `npm start` runs it (the compiled build in dist/, ./support/compiled-server.ts;
 *              store from the database URL), with an enterprise key, an agent and a run
 *   bare       bare Hono on @hono/node-server: the same routes answering the same fields (the contract's Run and
 *              Agent), with a bearer check and nothing else
 *   floor      the reference server observed by ./support/floor-observer.ts (a library-free request line and
 *              histogram) instead of its own observer: the lower bound of what observation costs
 *   bare-sqlite  bare Hono whose POST /v1/agents also makes the durable writes a fresh keyed POST of the reference
 *              makes on SQLite (./support/bare-sqlite-writes.ts): what the framework and the store cost together,
 *              before any of the server's own work
 */
import { serve } from '@hono/node-server'
import { Hono } from 'hono'
import type { SurfaceObserver } from '../src/surface/observe.js'
import { LOOPBACK_TARGETS } from '../test/support/private-targets.js'
import { bareSqliteWrites } from './support/bare-sqlite-writes.js'
import { compiledServer } from './support/compiled-server.js'
import { FloorObserver } from './support/floor-observer.js'
import { throwawaySqliteUrl } from './support/throwaway-db.js'

export interface TargetInfo {
  url: string
  token: string
  runId: string
}

const RUN_ID = 'run_01jbenchbenchbenchbenchbe0'
const BARE_TOKEN = 'aok_bench_token'

async function startReference(databaseUrl: string, observer?: SurfaceObserver): Promise<TargetInfo> {
  const { startServer } = await compiledServer()
  const server = await startServer({
    ...(observer ? { observer } : {}),
    config: {
      port: 0,
      host: '127.0.0.1',
      databaseUrl,
      privateTargets: LOOPBACK_TARGETS,
      webhookPollMs: 1000,
    },
  })
  // Enterprise with rate limits and quotas no run of the bench can reach, so neither a 429 nor a 403 quota_exceeded
  // distorts the figures (a keyed POST run creates some 100,000 agents and stores as many answers).
  const { token } = await server.services.keyAdmin.issue({
    workspace: 'bench',
    tier: 'enterprise',
    limitPerHour: 1e9,
    burstLimit: 1e9,
    quotas: { agents: 1e9, idempotency_keys: 1e9, idempotency_bytes: 1e12 },
  })
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
  const agent = await fetch(`${server.url}/v1/agents`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ name: 'bench', behavior: 'autonomous', capabilities: [] }),
  })
  const agentId = ((await agent.json()) as { agent_id: string }).agent_id
  const run = await fetch(`${server.url}/v1/agents/${agentId}/runs`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ inputs: {}, mode: 'live', trace_level: 'summary' }),
  })
  if (run.status !== 201) throw new Error(`seeding the run failed: ${run.status} ${await run.text()}`)
  const runId = ((await run.json()) as { run_id: string }).run_id
  return { url: server.url, token, runId }
}

async function startBare(
  writes?: (body: Record<string, unknown>, key: string) => Promise<string>,
): Promise<TargetInfo> {
  const app = new Hono()
  const authorised = (header: string | undefined) => header === `Bearer ${BARE_TOKEN}`
  app.get('/v1/runs/:id', (c) => {
    if (!authorised(c.req.header('authorization'))) return c.json({ error: 'unauthenticated' }, 401)
    // Every field of the contract's Run, as the reference answers the bench's run: the same bytes on the wire.
    const id = c.req.param('id')
    const now = new Date().toISOString()
    return c.json({
      run_id: id,
      agent_id: 'agt_01jbenchbenchbenchbenchbe0',
      task_id: null,
      status: 'succeeded',
      mode: 'live',
      trace_level: 'summary',
      inputs: {},
      policy_envelope: 'default',
      priority: 3,
      trace_url: `/v1/runs/${id}/trace`,
      created_at: now,
      started_at: now,
      finished_at: now,
      plan: { steps_total: 0, steps_completed: 0, steps_pending: 0, steps_escalated: 0 },
      awaiting: [],
      trace_cursor: 'AbmWE1gPp_hsZugKYyOSw2kAJL84kBhKT7aCXzA',
      outcome: { status: 'succeeded', results: [], error: null },
    })
  })
  app.post('/v1/agents', async (c) => {
    if (!authorised(c.req.header('authorization'))) return c.json({ error: 'unauthenticated' }, 401)
    const body = (await c.req.json()) as Record<string, unknown>
    const agentId = writes
      ? await writes(body, c.req.header('idempotency-key') ?? '')
      : 'agt_01jbenchbenchbenchbenchbe0'
    // The contract's Agent, as the reference answers it.
    const now = new Date().toISOString()
    return c.json(
      {
        agent_id: agentId,
        ...body,
        policy_envelope: 'default',
        status: 'idle',
        active_runs: 0,
        created_at: now,
        updated_at: now,
      },
      201,
    )
  })
  const url = await new Promise<string>((resolve) => {
    serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) =>
      resolve(`http://127.0.0.1:${info.port}`),
    )
  })
  return { url, token: BARE_TOKEN, runId: RUN_ID }
}

const [kind, databaseUrl] = process.argv.slice(2)
const info =
  kind === 'bare'
    ? await startBare()
    : kind === 'bare-sqlite'
      ? await startBare(await bareSqliteWrites(databaseUrl ?? throwawaySqliteUrl()))
      : await startReference(
          databaseUrl ?? throwawaySqliteUrl(),
          kind === 'floor' ? new FloorObserver() : undefined,
        )
process.stdout.write(`${JSON.stringify(info)}\n`)
// The parent ends this process with SIGTERM when it is done.
process.on('SIGTERM', () => process.exit(0))
