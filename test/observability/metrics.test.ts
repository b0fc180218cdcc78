/**
 * `GET /metrics`: what each family counts after real traffic, that no label value carries tenant data (ids,
 * names, tokens, raw paths), and the three ways it is served (API port before auth, own bearer token, own port).
 */
import { randomUUID } from 'node:crypto'
import { request as httpRequest } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createAgent, registerTool, startRun, waitForRun } from '../runs/helpers.js'
import { openClient, type TestClient } from '../stream/client.js'
import { backends } from '../support/backends.js'
import { startTestServer, type TestServer } from '../support/server.js'
import { families, type Series, scrape, seriesValue } from './helpers.js'

const ID = /[a-z]+_[0-9a-z]{26}/

describe('metrics after real traffic', () => {
  let t: TestServer
  let token: string
  let text: string
  let series: Series[]
  /** Every value a tenant chose or was given: none may appear in a label. */
  const tenantValues: string[] = []
  let stream: TestClient

  beforeAll(async () => {
    t = await startTestServer({ config: { maxBodyBytes: 4096 } })
    const workspace = `tenant-${randomUUID()}`
    const key = await t.createKey({ workspace, tier: 'pro' })
    const limited = await t.createKey({ tier: 'enterprise', limitPerHour: 100, burstLimit: 1 })
    const connector = `conn-${randomUUID().slice(0, 8)}`
    tenantValues.push(workspace, key.token, key.key_id, key.workspace_id, limited.key_id, connector)
    token = key.token

    // A run through a tool: a policy decision, a claim, a finished run.
    await registerTool(t, token, { name: 'search' })
    const agent = await createAgent(t, token, 'autonomous', ['search'])
    const run = await startRun(t, token, agent, { inputs: { q: 'metrics' } })
    tenantValues.push(agent, run.run_id)
    await waitForRun(t, token, run.run_id, (r) => r.status === 'succeeded')

    // Idempotency: first, replay, conflict.
    const body = { name: 'idem', behavior: 'autonomous' }
    const idem = { 'idempotency-key': `k-${randomUUID()}` }
    expect((await t.request('POST', '/v1/agents', { token, body, headers: idem })).status).toBe(201)
    expect((await t.request('POST', '/v1/agents', { token, body, headers: idem })).status).toBe(201)
    const reused = { token, body: { ...body, name: 'other' }, headers: idem }
    expect((await t.request('POST', '/v1/agents', reused)).status).toBe(409)

    // Three unknown ids on one route, and one path no route matches.
    for (let i = 0; i < 3; i++) {
      const id = `agt_${randomUUID().replace(/-/g, '').slice(0, 26)}`
      tenantValues.push(id)
      expect((await t.request('GET', `/v1/agents/${id}`, { token })).status).toBe(404)
    }
    const stray = `/v1/nothing-here/${randomUUID()}`
    tenantValues.push(stray)
    expect((await t.request('GET', stray, { token, unchecked: true })).status).toBe(404)

    // Body-limit and validation refusals.
    const big = { name: 'x'.repeat(5000), behavior: 'autonomous' }
    expect((await t.request('POST', '/v1/agents', { token, body: big })).status).toBe(413)
    expect((await t.request('POST', '/v1/agents', { token, body: { behavior: 'nope' } })).status).toBe(400)

    // A rate-limit refusal (burst of 1).
    expect((await t.request('GET', '/v1/agents', { token: limited.token })).status).toBe(200)
    expect((await t.request('GET', '/v1/agents', { token: limited.token })).status).toBe(429)

    // Ingest: one record accepted, one rejected.
    const batch = {
      records: [
        { id: 'r1', ts: '2026-01-01T00:00:00Z', source: 's', policy_class: 'internal', body: { a: 1 } },
        { id: 'r2', ts: 'not a time', source: 's', policy_class: 'internal', body: {} },
      ],
    }
    const ingested = await t.request('POST', `/v1/grid/connectors/${connector}/ingest`, {
      token,
      body: batch,
    })
    expect(ingested.status, ingested.text).toBe(202)
    expect(ingested.body).toMatchObject({ accepted: 1, rejected: 1 })

    // A stream socket with a subscription, open while scraped.
    stream = await openClient(t.baseUrl, token)
    stream.send({ type: 'subscribe', topics: ['runs'] })
    await stream.waitFor((m) => m.type === 'subscribed')

    ;({ text, series } = await scrape(t.baseUrl))
  })
  afterAll(async () => {
    await stream?.close()
    await t.close()
  })

  it('counts requests by method, route template and status class', () => {
    const count = 'agentops_http_request_duration_seconds_count'
    expect(
      seriesValue(series, count, { method: 'GET', route: '/v1/agents/{agent_id}', status_class: '4xx' }),
    ).toBe(3)
    expect(seriesValue(series, count, { method: 'GET', route: 'unmatched', status_class: '4xx' })).toBe(1)
    expect(
      seriesValue(series, count, { method: 'POST', route: '/v1/agents', status_class: '2xx' }),
    ).toBeGreaterThanOrEqual(3)
    expect(seriesValue(series, count, { method: 'GET', route: '/v1/agents', status_class: '4xx' })).toBe(1)
    // A status class is bound on its first answer: none of this traffic failed on the server's side.
    const fiveXx = series.filter((s) => s.name === count && s.labels.status_class === '5xx')
    expect(fiveXx).toEqual([])
    expect(seriesValue(series, 'agentops_http_requests_in_flight')).toBe(0)
  })

  it('counts a request in flight until its answer is ready (here: its body still arriving)', async () => {
    const body = JSON.stringify({ name: 'slow-body', behavior: 'autonomous' })
    const req = httpRequest(`${t.baseUrl}/v1/agents`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
      },
    })
    const answered = new Promise<number>((resolve, reject) => {
      req.on('response', (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode ?? 0))
      })
      req.on('error', reject)
    })
    req.write(body.slice(0, 10))
    const inFlight = async () =>
      seriesValue((await scrape(t.baseUrl)).series, 'agentops_http_requests_in_flight')
    // Bounded wait for the request's head to reach the server; the scrape itself is not counted.
    const deadline = Date.now() + 5_000
    let during = await inFlight()
    while (during === 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 10))
      during = await inFlight()
    }
    expect(during).toBe(1)
    req.end(body.slice(10))
    expect(await answered).toBe(201)
    expect(await inFlight()).toBe(0)
  })

  it('counts refusals by error code, rate limits by tier and idempotency answers', () => {
    expect(seriesValue(series, 'agentops_http_errors_total', { code: 'payload_too_large' })).toBe(1)
    expect(seriesValue(series, 'agentops_http_errors_total', { code: 'invalid_request' })).toBe(1)
    expect(seriesValue(series, 'agentops_http_errors_total', { code: 'not_found' })).toBe(4)
    expect(seriesValue(series, 'agentops_http_errors_total', { code: 'rate_limited' })).toBe(1)
    expect(seriesValue(series, 'agentops_rate_limit_refusals_total', { tier: 'enterprise' })).toBe(1)
    expect(seriesValue(series, 'agentops_rate_limit_refusals_total', { tier: 'pro' })).toBe(0)
    expect(seriesValue(series, 'agentops_idempotency_answers_total', { outcome: 'replayed' })).toBe(1)
    expect(seriesValue(series, 'agentops_idempotency_answers_total', { outcome: 'conflict' })).toBe(1)
  })

  it('counts runs, policy decisions, ingest and sockets', () => {
    expect(
      seriesValue(series, 'agentops_policy_decisions_total', { decision: 'allow' }),
    ).toBeGreaterThanOrEqual(1)
    expect(seriesValue(series, 'agentops_run_duration_seconds_count', { outcome: 'succeeded' })).toBe(1)
    expect(seriesValue(series, 'agentops_run_claim_latency_seconds_count')).toBe(1)
    // Its one run has finished (runs in each state: run-metrics.test.ts).
    for (const status of ['queued', 'running', 'awaiting_approval']) {
      expect(seriesValue(series, 'agentops_runs', { status })).toBe(0)
    }
    expect(seriesValue(series, 'agentops_ingest_records_total', { result: 'accepted' })).toBe(1)
    expect(seriesValue(series, 'agentops_ingest_records_total', { result: 'rejected' })).toBe(1)
    expect(seriesValue(series, 'agentops_ingest_batch_duration_seconds_count')).toBe(1)
    expect(seriesValue(series, 'agentops_sockets_open', { transport: 'stream' })).toBe(1)
    expect(seriesValue(series, 'agentops_socket_subscriptions', { transport: 'stream', topic: 'runs' })).toBe(
      1,
    )
    expect(
      seriesValue(series, 'agentops_socket_messages_sent_total', { transport: 'stream' }),
    ).toBeGreaterThanOrEqual(1)
    // No subscription, so nothing in the outbox (a waiting delivery: webhook-metrics.test.ts).
    expect(seriesValue(series, 'agentops_webhook_outbox_depth')).toBe(0)
    expect(seriesValue(series, 'agentops_store_pool_connections', { state: 'total' })).toBe(1)
  })

  it("includes prom-client's Node metrics (event-loop lag, heap, GC)", () => {
    const names = families(text)
    for (const name of [
      'nodejs_eventloop_lag_seconds',
      'nodejs_heap_size_used_bytes',
      'nodejs_gc_duration_seconds',
    ]) {
      expect(names).toContain(name)
    }
  })

  it('carries no tenant data in any label value: routes are templates, never paths', () => {
    const values = new Set(series.flatMap((s) => Object.values(s.labels)))
    const leaks = [...values].filter((v) => ID.test(v) || tenantValues.some((tenant) => v.includes(tenant)))
    expect(leaks).toEqual([])
    const routes = new Set(series.map((s) => s.labels.route).filter((r) => r !== undefined))
    for (const route of routes) expect(route).toMatch(/^(unmatched|\/[a-z0-9/_.{}-]*)$/)
    // A label set per route template × method × status class: bounded whatever ids clients send.
    expect(routes.size).toBeLessThan(20)
  })
})

/** Keyed requests overlap only on PostgreSQL: SQLite runs them one at a time, so none is ever in progress there. */
const postgres = backends().find((b) => b.name === 'postgres')

describe.skipIf(!postgres)('idempotency answers under a burst on one key, on PostgreSQL', () => {
  it('counts every 409 idempotency_key_in_progress and every replay (test/idempotency/idempotency.test.ts)', async () => {
    const t = await startTestServer({ databaseUrl: await postgres!.freshUrl() })
    try {
      const { token } = await t.createKey()
      // A route whose work runs inside the key's claim (POST /v1/agents answers as its claim instead, in one
      // round trip, which a burst rarely overlaps).
      const tool = (name: string) => ({
        name,
        provider: 'builtin:echo',
        config: {},
        idempotent: true,
        output_schema: {},
        policy_binding: { envelope: 'default', required_scopes: [] },
      })
      let inProgress = 0
      let replayed = 0
      // 50 simultaneous identical POSTs with one key: those arriving while the first runs are refused. A burst
      // that happens to be answered in turn is tried again with a fresh key (bounded).
      for (let round = 0; round < 5 && inProgress === 0; round++) {
        const answers = await Promise.all(
          Array.from({ length: 50 }, () =>
            t.request('POST', '/v1/tools', {
              token,
              headers: { 'Idempotency-Key': `burst-${round}` },
              body: tool(`concurrent-${round}`),
            }),
          ),
        )
        const busy = answers.filter((a) => a.status === 409)
        expect(busy.length + answers.filter((a) => a.status === 201).length).toBe(50)
        for (const b of busy) expect(b.body.error.code).toBe('idempotency_key_in_progress')
        inProgress += busy.length
        replayed += answers.filter((a) => a.headers.get('idempotent-replayed') === 'true').length
      }
      expect(inProgress).toBeGreaterThan(0)
      const { series } = await scrape(t.baseUrl)
      const answers = (outcome: string) =>
        seriesValue(series, 'agentops_idempotency_answers_total', { outcome })
      expect(answers('in_progress')).toBe(inProgress)
      expect(answers('replayed')).toBe(replayed)
      expect(answers('conflict')).toBe(0)
      expect(seriesValue(series, 'agentops_http_errors_total', { code: 'idempotency_key_in_progress' })).toBe(
        inProgress,
      )
    } finally {
      await t.close()
    }
  })
})

describe('how /metrics is served', () => {
  it('answers before authentication on the API port by default, and not when turned off', async () => {
    const off = await startTestServer({ config: { metrics: false } })
    try {
      expect((await fetch(`${off.baseUrl}/metrics`)).status).toBe(404)
      expect((await fetch(`${off.baseUrl}/readyz`)).status).toBe(200)
    } finally {
      await off.close()
    }
  })

  it('asks for its own bearer token when AGENTOPS_METRICS_TOKEN is set (never an API key)', async () => {
    const t = await startTestServer({ config: { metricsToken: 'scrape-secret' } })
    try {
      const { token } = await t.createKey()
      const none = await fetch(`${t.baseUrl}/metrics`)
      expect(none.status).toBe(401)
      expect(none.headers.get('www-authenticate')).toBe('Bearer realm="metrics"')
      expect(((await none.json()) as { error: { code: string } }).error.code).toBe('unauthenticated')
      expect(
        (await fetch(`${t.baseUrl}/metrics`, { headers: { authorization: `Bearer ${token}` } })).status,
      ).toBe(401)
      await scrape(t.baseUrl, { authorization: 'Bearer scrape-secret' })
    } finally {
      await t.close()
    }
  })

  it('moves to its own port with AGENTOPS_METRICS_PORT; the API port then has no /metrics', async () => {
    const t = await startTestServer({ config: { metricsPort: 0 } })
    try {
      const metricsUrl = t.server.metricsUrl as string
      expect(metricsUrl).toBeDefined()
      expect(metricsUrl).not.toBe(t.baseUrl)
      expect((await fetch(`${t.baseUrl}/metrics`)).status).toBe(404)
      expect(families((await scrape(metricsUrl)).text)).toContain('agentops_http_request_duration_seconds')
      expect((await fetch(`${metricsUrl}/readyz`)).status).toBe(200)
      expect((await fetch(`${metricsUrl}/v1/agents`)).status).toBe(404)
    } finally {
      await t.close()
    }
  })
})
