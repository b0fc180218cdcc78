/**
 * The shipped client (client/src over client/generated) against the real reference server: every helper of the
 * hand-written layer, through the transport a user gets from `new AgentOps(...)`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import {
  AgentOps,
  AgentOpsError,
  isApiError,
  paginate,
  retryingFetch,
  subscribeStream,
  TERMINAL_RUN_STATUSES,
  verifyWebhookSignature,
} from '../../client/src/index.js'
import { bodySignature } from '../../src/domain/webhooks/signing.js'
import { startTestServer, type TestServer } from '../support/server.js'

const MISSING_RUN = 'run_00000000000000000000000000'

describe('the shipped client against the reference server', () => {
  let t: TestServer
  let token: string
  let ops: AgentOps
  let agentId: string

  beforeAll(async () => {
    t = await startTestServer()
    token = (await t.createKey({ scopes: ['*'] })).token
    ops = new AgentOps({ baseUrl: t.baseUrl, token })
    await ops.registerTool({
      body: {
        name: 'search',
        provider: 'builtin:echo',
        policy_binding: { envelope: 'default', required_scopes: [] },
      },
    })
    const { data: agent } = await ops.createAgent({
      body: { name: 'researcher', behavior: 'autonomous', capabilities: ['search'] },
    })
    agentId = agent.agent_id
  })
  afterAll(() => t.close())

  it('starts a run with a minimal body, waits for a terminal status and reads the trace both ways', async () => {
    const { data: run } = await ops.startRun({ path: { agent_id: agentId }, body: {} })
    expect(run.status).toBe('queued')
    const done = await ops.waitForRun(run.run_id, { intervalMs: 50, timeoutMs: 20_000 })
    expect(TERMINAL_RUN_STATUSES).toContain(done.status)
    expect(done.status).toBe('succeeded')
    const paged = []
    for await (const frame of ops.traceFrames(run.run_id, 2)) paged.push(frame)
    expect(paged.length).toBeGreaterThan(2)
    expect(paged.map((f) => f.seq)).toEqual(paged.map((_, i) => i + 1))
    const streamed = []
    for await (const frame of ops.followTrace(run.run_id)) streamed.push(frame)
    expect(streamed).toEqual(paged)
    const resumed = []
    for await (const frame of ops.followTrace(run.run_id, { afterSeq: 2 })) resumed.push(frame)
    expect(resumed).toEqual(paged.slice(2))
  })

  it('follows a live trace until the run ends', async () => {
    await ops.registerTool({
      body: {
        name: 'slow',
        provider: 'builtin:delay',
        config: { delay_ms: 300 },
        policy_binding: { envelope: 'default', required_scopes: [] },
      },
    })
    const { data: run } = await ops.startRun({
      path: { agent_id: agentId },
      body: { inputs: { plan: ['slow'] } },
    })
    const kinds = []
    for await (const frame of ops.followTrace(run.run_id)) kinds.push(frame.kind)
    expect(kinds).toContain('tool.call')
    const { data: after } = await ops.getRun({ path: { run_id: run.run_id } })
    expect(after.status).toBe('succeeded')
  })

  it('throws AgentOpsError with a narrowable code: 404 not_found, 409 idempotency_key_reused', async () => {
    const missing = await ops.getRun({ path: { run_id: MISSING_RUN } }).catch((e: unknown) => e)
    expect(isApiError(missing, 'not_found')).toBe(true)
    if (!(missing instanceof AgentOpsError)) throw new Error('expected an AgentOpsError')
    expect(missing.status).toBe(404)
    expect(missing.known).toBe(true)
    expect(missing.requestId).toMatch(/^req_/)

    const headers = { 'Idempotency-Key': `reuse-${Date.now()}` }
    await ops.startRun({ path: { agent_id: agentId }, body: { inputs: { a: 1 } }, headers })
    const reused = await ops
      .startRun({ path: { agent_id: agentId }, body: { inputs: { a: 2 } }, headers })
      .catch((e: unknown) => e)
    expect(reused).toBeInstanceOf(AgentOpsError)
    if (reused instanceof AgentOpsError && reused.is('idempotency_key_reused')) {
      expect(reused.status).toBe(409)
    } else throw new Error(`expected idempotency_key_reused, got ${String(reused)}`)
  })

  it('narrows policy_denied detail and keeps unknown codes as strings', () => {
    const denied = new AgentOpsError(403, 'policy_denied', 'no', {
      envelope: 'default',
      violation: 'max_steps',
      observed: 30,
      limit: 25,
      escalation_queue: 'ops-review',
    })
    if (denied.is('policy_denied')) expect(denied.detail.escalation_queue).toBe('ops-review')
    const future = AgentOpsError.fromResponse(new Response('', { status: 418 }), {
      error: { code: 'teapot_brewing', message: 'later', detail: {}, request_id: 'req_x' },
    })
    expect(future.code).toBe('teapot_brewing')
    expect(future.known).toBe(false)
    expect(future.is('not_found')).toBe(false)
  })

  it('iterates every page of a list', async () => {
    for (const name of ['p1', 'p2', 'p3'])
      await ops.registerTool({
        body: {
          name,
          provider: 'builtin:echo',
          policy_binding: { envelope: 'default', required_scopes: [] },
        },
      })
    const names: string[] = []
    for await (const tool of paginate((cursor) =>
      ops.listTools({ query: { limit: 2, ...(cursor ? { cursor } : {}) } }),
    ))
      names.push(tool.name)
    expect(names).toEqual(['search', 'slow', 'p1', 'p2', 'p3'])
  })

  it('sends one Idempotency-Key per POST, the same on every retry, and honours Retry-After', async () => {
    const seen: { key: string | null; status: number }[] = []
    const waits: number[] = []
    let failuresLeft = 2
    const flaky: typeof fetch = async (input, init) => {
      const request = new Request(input, init)
      if (failuresLeft-- > 0) {
        const status = failuresLeft === 1 ? 429 : 503
        seen.push({ key: request.headers.get('idempotency-key'), status })
        return new Response(
          JSON.stringify({ error: { code: 'x', message: 'x', detail: {}, request_id: 'r' } }),
          {
            status,
            headers: {
              'content-type': 'application/json',
              ...(status === 429 ? { 'retry-after': '2' } : {}),
            },
          },
        )
      }
      const response = await fetch(request)
      seen.push({ key: request.headers.get('idempotency-key'), status: response.status })
      return response
    }
    const flakyOps = new AgentOps({
      baseUrl: t.baseUrl,
      token,
      fetch: flaky,
      retry: { attempts: 4, baseDelayMs: 100, random: () => 0.5, sleep: async (ms) => void waits.push(ms) },
    })
    const { data: run } = await flakyOps.startRun({ path: { agent_id: agentId }, body: {} })
    expect(seen.map((s) => s.status)).toEqual([429, 503, 201])
    expect(new Set(seen.map((s) => s.key)).size).toBe(1)
    expect(seen[0]?.key).toMatch(/^[0-9a-f-]{36}$/)
    expect(waits).toEqual([2000, 100]) // Retry-After: 2 wins over the 50 ms backoff step; then 0.5 × 200 ms
    const { data: runs } = await ops.listAgentRuns({ path: { agent_id: agentId }, query: { limit: 200 } })
    expect(runs.data.filter((r) => r.run_id === run.run_id)).toHaveLength(1)
  })

  it('gives up after the configured attempts and surfaces the last answer as an error', async () => {
    let calls = 0
    const down: typeof fetch = async () => {
      calls++
      return new Response(
        JSON.stringify({ error: { code: 'unavailable', message: 'down', detail: {}, request_id: 'req_1' } }),
        { status: 503, headers: { 'content-type': 'application/json' } },
      )
    }
    const fetcher = retryingFetch(down, { attempts: 3, sleep: async () => {} })
    expect((await fetcher('http://127.0.0.1:1/v1/runs/x')).status).toBe(503)
    expect(calls).toBe(3)
    const downOps = new AgentOps({
      baseUrl: t.baseUrl,
      token,
      fetch: down,
      retry: { attempts: 2, sleep: async () => {} },
    })
    const error = await downOps.getRun({ path: { run_id: MISSING_RUN } }).catch((e: unknown) => e)
    expect(isApiError(error, 'unavailable')).toBe(true)
  })

  it('verifies webhook signatures: valid, tampered, stale and rotated secrets', () => {
    const body = {
      event: 'run.started',
      ts: '2026-11-23T06:00:00.000Z',
      run_id: 'run_1',
      data: { n: 1.5, s: 'é' },
    }
    const now = Date.now()
    const t0 = Math.floor(now / 1000)
    const signed = { ...body, signature: bodySignature(body, ['old-secret', 'new-secret'], t0) }
    expect(verifyWebhookSignature(JSON.stringify(signed), 'new-secret', { now })).toBe(true)
    expect(verifyWebhookSignature(signed, ['unrelated', 'old-secret'], { now })).toBe(true)
    expect(verifyWebhookSignature({ ...signed, run_id: 'run_2' }, 'new-secret', { now })).toBe(false)
    expect(verifyWebhookSignature(signed, 'wrong-secret', { now })).toBe(false)
    expect(verifyWebhookSignature(signed, 'new-secret', { now: now + 301_000 })).toBe(false)
    expect(verifyWebhookSignature('not json', 'new-secret')).toBe(false)
  })

  it('subscribes to the stream and resumes after a dropped connection without losing or repeating a message', async () => {
    const sockets: WebSocket[] = []
    const sub = subscribeStream({
      baseUrl: t.baseUrl,
      token,
      topics: ['connector:crm'],
      baseDelayMs: 20,
      connect: (url, key) => {
        const ws = new WebSocket(url, { headers: { authorization: `Bearer ${key}` } })
        sockets.push(ws)
        return ws
      },
    })
    const ingest = (id: string) =>
      ops.ingestBatch({
        path: { connector_id: 'crm' },
        body: {
          records: [
            { id, ts: new Date().toISOString(), source: 'crm', policy_class: 'internal', body: { id } },
          ],
        },
      })
    const iterator = sub[Symbol.asyncIterator]()
    const nextOfType = async (type: string) => {
      for (let i = 0; i < 20; i++) {
        const { value, done } = await iterator.next()
        if (done) throw new Error('stream ended')
        if (value.type === type) return value
      }
      throw new Error(`no ${type} message`)
    }
    await nextOfType('subscribed')
    await ingest('r1')
    await ingest('r2')
    expect((await nextOfType('record')).seq).toBe(1)
    expect((await nextOfType('record')).seq).toBe(2)
    sockets[0]?.terminate()
    await ingest('r3') // lands while the client is away: replayed through `since`
    await nextOfType('subscribed')
    const third = await nextOfType('record')
    expect(third.seq).toBe(3)
    expect(sockets.length).toBe(2)
    expect(sub.since).toEqual({ 'connector:crm': 3 })
    sub.close()
    expect((await iterator.next()).done).toBe(true)
  })
})
