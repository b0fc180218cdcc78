/**
 * The client's resource namespaces: bodies without unwrapping, lists that page themselves, time-outs per client and
 * per call composed with a caller's signal, `constructEvent` on signed deliveries (made by the server's own signer,
 * and a real delivery to a local receiver), and every operation of the contract reachable from a namespace.
 */

import { readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import {
  AgentOps,
  constructEvent,
  isApiError,
  List,
  type WebhookEvent,
  WebhookVerificationError,
} from '../../client/src/index.js'
import { signDelivery } from '../../src/domain/webhooks/signing.js'
import { listenOnTestPort } from '../support/ports.js'
import { startTestServer, type TestServer } from '../support/server.js'

const ROOT = join(import.meta.dirname, '../..')
const POLICY = { envelope: 'default', required_scopes: [] as string[] }

/** A fetch that answers nothing until its request is aborted (then rejects with the abort reason). */
const hanging: typeof fetch = (input, init) =>
  new Promise((_, reject) => {
    const signal = new Request(input, init).signal
    if (signal.aborted) return reject(signal.reason)
    signal.addEventListener('abort', () => reject(signal.reason), { once: true })
  })

describe('the client resources against the reference server', () => {
  let t: TestServer
  let ops: AgentOps
  let token: string

  beforeAll(async () => {
    t = await startTestServer()
    token = (await t.createKey({ scopes: ['*'] })).token
    ops = new AgentOps({ baseUrl: t.baseUrl, token })
  })
  afterAll(() => t.close())

  it('resolves to response bodies: a resource, a page with data and next_cursor', async () => {
    const tool = await ops.tools.register({
      name: 'search',
      provider: 'builtin:echo',
      policy_binding: POLICY,
    })
    expect(tool.name).toBe('search')
    const agent = await ops.agents.create({ name: 'r', behavior: 'autonomous', capabilities: ['search'] })
    const run = await ops.runs.start(agent.agent_id)
    expect(run.status).toBe('queued')
    expect((await ops.runs.get(run.run_id)).run_id).toBe(run.run_id)
    const done = await ops.runs.wait(run.run_id, { intervalMs: 50, timeoutMs: 20_000 })
    expect(done.status).toBe('succeeded')
    const page = await ops.runs.list({ agent_id: agent.agent_id })
    expect(page.data.map((r) => r.run_id)).toEqual([run.run_id])
    expect(page.next_cursor).toBeNull()
    const frames = await ops.runs.trace(run.run_id, { limit: 2 }).toArray()
    expect(frames.map((f) => f.seq)).toEqual(frames.map((_, i) => i + 1))
    expect(frames.length).toBeGreaterThan(2)
    expect(await ops.health()).toMatchObject({ status: 'ok' })
  })

  it('pages every list with for await, from the first page or a given cursor', async () => {
    for (const name of ['p1', 'p2', 'p3', 'p4'])
      await ops.tools.register({ name, provider: 'builtin:echo', policy_binding: POLICY })
    const names: string[] = []
    for await (const tool of ops.tools.list({ limit: 2 })) names.push(tool.name)
    expect(names).toEqual(['search', 'p1', 'p2', 'p3', 'p4'])

    const tools = ops.tools.list({ limit: 2 })
    expect(tools).toBeInstanceOf(List)
    const first = await tools
    expect(first.data.map((x) => x.name)).toEqual(['search', 'p1'])
    expect(first.next_cursor).toEqual(expect.any(String))
    const rest: string[] = []
    for await (const tool of ops.tools.list({ limit: 2, cursor: first.next_cursor ?? '' }))
      rest.push(tool.name)
    expect(rest).toEqual(['p2', 'p3', 'p4'])
    const sizes: number[] = []
    for await (const page of ops.tools.list({ limit: 2 }).pages()) sizes.push(page.data.length)
    expect(sizes).toEqual([2, 2, 1])
    await expect(ops.tools.list({ limit: 2 }).toArray({ max: 4 })).rejects.toThrow(RangeError)
    expect(await ops.tools.list({ limit: 2 }).toArray({ max: 5 })).toHaveLength(5)
  })

  it('throws AgentOpsError from a namespace call; an Idempotency-Key per call is replayed, not applied twice', async () => {
    const missing = await ops.runs.get('run_00000000000000000000000000').catch((e: unknown) => e)
    expect(isApiError(missing, 'not_found')).toBe(true)
    const agent = await ops.agents.create({ name: 'idem', behavior: 'autonomous', capabilities: [] })
    const key = `idem-${Date.now()}`
    const a = await ops.runs.start(agent.agent_id, { inputs: { q: 1 } }, { idempotencyKey: key })
    const b = await ops.runs.start(agent.agent_id, { inputs: { q: 1 } }, { idempotencyKey: key })
    expect(b.run_id).toBe(a.run_id)
    const reused = await ops.runs
      .start(agent.agent_id, { inputs: { q: 2 } }, { idempotencyKey: key })
      .catch((e: unknown) => e)
    expect(isApiError(reused, 'idempotency_key_reused')).toBe(true)
  })

  it('times out per client and per call, composed with the caller signal', async () => {
    const slow = new AgentOps({ baseUrl: t.baseUrl, token, fetch: hanging, timeout: 30, retry: false })
    const byClient = await slow.runs.get('run_x').catch((e: unknown) => e)
    expect(byClient).toBeInstanceOf(DOMException)
    expect((byClient as DOMException).name).toBe('TimeoutError')
    // The flat SDK methods get the client's deadline too.
    const flat = await slow.getRun({ path: { run_id: 'run_x' } }).catch((e: unknown) => e)
    expect((flat as DOMException).name).toBe('TimeoutError')

    const patient = new AgentOps({ baseUrl: t.baseUrl, token, fetch: hanging, timeout: 0, retry: false })
    const byCall = await patient.tools.get('tool_x', { timeout: 30 }).catch((e: unknown) => e)
    expect((byCall as DOMException).name).toBe('TimeoutError')

    const controller = new AbortController()
    const pending = patient.agents.get('agent_x', { signal: controller.signal, timeout: 60_000 })
    controller.abort(new Error('caller gave up'))
    await expect(pending).rejects.toThrow('caller gave up')

    // A call's longer time-out wins over a shorter client default (the server answers in time).
    const strict = new AgentOps({ baseUrl: t.baseUrl, token, timeout: 1 })
    const fine = await strict.health({ timeout: 30_000 })
    expect(fine.status).toBe('ok')
  })

  it('constructEvent verifies the body signature and the Standard Webhooks headers and returns the typed event', () => {
    const now = Date.now()
    const event = { id: 'evt_1', event: 'run.succeeded', ts: '2026-11-24T10:00:00.000Z', run_id: 'run_1' }
    const signed = signDelivery('dlv_1', event, ['whsec_b2xkLXNlY3JldA==', 'new'], now)
    const parsed: WebhookEvent = constructEvent(signed.rawBody, signed.headers, 'new', { now })
    expect(parsed.id).toBe('evt_1')
    if (parsed.event === 'run.succeeded') expect(parsed.run_id).toBe('run_1')
    expect(
      constructEvent(
        Buffer.from(signed.rawBody),
        new Headers(signed.headers),
        ['x', 'whsec_b2xkLXNlY3JldA=='],
        { now },
      ).id,
    ).toBe('evt_1')
    // Without the headers (a proxy dropped them) the body's own signature still decides.
    expect(ops.webhooks.constructEvent(signed.rawBody, {}, 'new', { now }).id).toBe('evt_1')

    const reason = (f: () => unknown) => {
      try {
        f()
      } catch (e) {
        if (e instanceof WebhookVerificationError) return e.reason
        throw e
      }
      return 'accepted'
    }
    expect(reason(() => constructEvent('{', signed.headers, 'new', { now }))).toBe('invalid_json')
    expect(reason(() => constructEvent('[1]', signed.headers, 'new', { now }))).toBe('not_an_event')
    const unsigned = JSON.stringify(event)
    expect(reason(() => constructEvent(unsigned, {}, 'new', { now }))).toBe('missing_signature')
    expect(reason(() => constructEvent(signed.rawBody, signed.headers, 'wrong', { now }))).toBe(
      'signature_mismatch',
    )
    const tampered = signed.rawBody.replace('run_1', 'run_2')
    expect(reason(() => constructEvent(tampered, signed.headers, 'new', { now }))).toBe('signature_mismatch')
    expect(reason(() => constructEvent(signed.rawBody, signed.headers, 'new', { now: now + 301_000 }))).toBe(
      'signature_mismatch',
    )
    const otherId = { ...signed.headers, 'webhook-id': 'dlv_2' }
    expect(reason(() => constructEvent(signed.rawBody, otherId, 'new', { now }))).toBe(
      'header_signature_mismatch',
    )
    const reordered = JSON.stringify(JSON.parse(signed.rawBody), null, 2)
    // Re-serialised JSON keeps the body signature (canonical) but not the raw-bytes header signature.
    expect(reason(() => constructEvent(reordered, {}, 'new', { now }))).toBe('accepted')
    expect(reason(() => constructEvent(reordered, signed.headers, 'new', { now }))).toBe(
      'header_signature_mismatch',
    )
  })

  it('constructEvent accepts a real delivery from the server to a local receiver', async () => {
    const received: WebhookEvent[] = []
    let resolveFirst: () => void = () => {}
    const first = new Promise<void>((resolve) => {
      resolveFirst = resolve
    })
    const receiver: Server = createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        try {
          received.push(ops.webhooks.constructEvent(Buffer.concat(chunks), req.headers, 'receiver-secret'))
          res.writeHead(204).end()
          resolveFirst()
        } catch (e) {
          res.writeHead(400).end(String(e))
        }
      })
    })
    await listenOnTestPort(receiver)
    try {
      const address = receiver.address()
      if (address === null || typeof address === 'string') throw new Error('no port')
      await ops.webhooks.create({
        url: `http://127.0.0.1:${address.port}/hook`,
        events: ['agent.created'],
        secret: 'receiver-secret',
      })
      const agent = await ops.agents.create({ name: 'hooked', behavior: 'autonomous', capabilities: [] })
      await first
      expect(received[0]).toMatchObject({ event: 'agent.created', agent_id: agent.agent_id })
      expect(received[0]?.id).toEqual(expect.any(String))
    } finally {
      await new Promise((resolve) => receiver.close(resolve))
    }
  })
})

describe('every operation of the contract has a namespace method', () => {
  /** What the contract offers outside the namespaces, and where it is instead. */
  const ELSEWHERE: Record<string, string> = {
    streamRunTrace: 'runs.follow (SSE, resumed on reconnect)',
    getGraphql: 'graphql() (POST)',
    getGraphqlSchema: 'a document, not an API call',
    getOpenApiDocument: 'a document, not an API call',
    getApiReference: 'an HTML page',
    getApiReferenceScript: 'a script',
    handleSlackInteraction: "Slack's signed callback, not a client call",
  }

  it('calls each namespace method and sees each remaining operationId answered', async () => {
    const contract = parse(readFileSync(join(ROOT, 'openapi/agent-operations.yaml'), 'utf8')) as {
      paths: Record<string, Record<string, { operationId?: string }>>
    }
    const routes: { method: string; pattern: RegExp; id: string }[] = []
    for (const [path, item] of Object.entries(contract.paths))
      for (const [method, op] of Object.entries(item))
        if (op.operationId)
          routes.push({
            method: method.toUpperCase(),
            pattern: new RegExp(`^${path.replace(/\{[^}]+\}/g, '[^/]+')}$`),
            id: op.operationId,
          })
    const called = new Set<string>()
    const recording: typeof fetch = async (input, init) => {
      const request = new Request(input, init)
      const path = new URL(request.url).pathname
      const route = routes.find((r) => r.method === request.method && r.pattern.test(path))
      if (route) called.add(route.id)
      const body = request.method === 'DELETE' ? null : JSON.stringify({ data: [], next_cursor: null })
      return new Response(body, {
        status: request.method === 'DELETE' ? 204 : 200,
        headers: body ? { 'content-type': 'application/json' } : {},
      })
    }
    const fake = new AgentOps({ baseUrl: 'http://127.0.0.1:9', token: 't', fetch: recording, retry: false })
    const tool = { name: 'x', provider: 'builtin:echo', policy_binding: POLICY }
    await Promise.all([
      fake.agents.create({ name: 'a', behavior: 'autonomous', capabilities: [] }),
      fake.agents.get('a'),
      fake.agents.delete('a'),
      fake.agents.list().toArray(),
      fake.runs.start('a'),
      fake.runs.get('r'),
      fake.runs.list({ agent_id: 'a' }).toArray(),
      fake.runs.pause('r'),
      fake.runs.resume('r'),
      fake.runs.cancel('r'),
      fake.runs.decide('r', 's', { decision: 'approve' }),
      fake.runs.trace('r').toArray(),
      fake.tools.register(tool),
      fake.tools.get('t'),
      fake.tools.retire('t'),
      fake.tools.list().toArray(),
      fake.tasks.assign('a', { description: 't' }),
      fake.tasks.get('k'),
      fake.webhooks.create({ url: 'https://h.example/x', events: ['run.started'], secret: 's' }),
      fake.webhooks.get('w'),
      fake.webhooks.delete('w'),
      fake.webhooks.list().toArray(),
      fake.webhooks.rotateSecret('w', { secret: 'n' }),
      fake.webhooks.deliveries('w').toArray(),
      fake.webhooks.redeliver('w', 'd'),
      fake.destinations.create({ type: 'cloudevents', name: 'n', events: ['run.failed'], config: {} }),
      fake.destinations.get('d'),
      fake.destinations.update('d', { name: 'm' }),
      fake.destinations.delete('d'),
      fake.destinations.list().toArray(),
      fake.destinations.test('d'),
      fake.destinations.deliveries('d').toArray(),
      fake.destinations.redeliver('d', 'v'),
      fake.ingest.batch('c', { records: [] }),
      fake.ingest.records('c').toArray(),
      fake.graphql({ query: '{ __typename }' }),
      fake.health(),
    ])
    const all = routes.map((r) => r.id)
    const missing = all.filter((id) => !called.has(id) && !(id in ELSEWHERE))
    expect(missing).toEqual([])
    expect(Object.keys(ELSEWHERE).filter((id) => !all.includes(id))).toEqual([])
  })
})
