import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket, { WebSocketServer } from 'ws'
import { listenOnTestPort, listenPort } from '../../test/support/ports.js'
import { bodySignedDialect } from '../mutants/dialects/body-signed.js'
import { plannedFromSteps } from '../mutants/dialects/declared.js'
import { GATEWAY_PREFIX, STREAM_PREFIX, underGatewayPrefix } from '../mutants/dialects/path-prefix.js'
import { Secrets } from '../mutants/dialects/wire.js'
import { extensionOperations } from '../mutants/dialects.js'
import { createMutants } from '../mutants/mutants.js'
import { editJson, HOOK_PREFIX, MutantProxy } from '../mutants/proxy.js'
import { dialectLine, judge, unprovenChecks } from '../mutants/run.js'
import { ALL_CHECKS } from '../src/checks/index.js'
import { resolveConfig } from '../src/config.js'
import type { CheckResult } from '../src/types.js'

let upstream: Server
let receiver: Server
let upstreamUrl: string
let receiverUrl: string
const received: string[] = []
/** The SSE answer's second event waits for this: the test lets it go once it saw the first through the proxy. */
let secondEvent: Promise<void> = Promise.resolve()
/** When the SSE answer's first event was written (Date.now()). */
let firstWritten = 0

async function listen(server: Server): Promise<string> {
  await listenOnTestPort(server)
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

beforeAll(async () => {
  upstream = createServer((req, res) => {
    if (req.url?.endsWith('/trace/stream')) {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write('id: 1\nevent: frame\ndata: {"seq":1}\n\n')
      firstWritten = Date.now()
      void secondEvent.then(() => res.end('id: 2\nevent: frame\ndata: {"seq":2}\n\nevent: end\ndata: {}\n\n'))
      return
    }
    if (req.url === '/slow') {
      setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'), 400)
      return
    }
    res.writeHead(200, { 'content-type': 'application/json', ratelimit: '"burst";r=1;t=1' })
    res.end(
      JSON.stringify({
        path: req.url,
        auth: req.headers.authorization ?? null,
        status: 'cancelled',
        awaiting: [],
      }),
    )
  })
  receiver = createServer((req, res) => {
    let body = ''
    req.on('data', (c) => {
      body += c
    })
    req.on('end', () => {
      received.push(`${req.url} ${body}`)
      res.end('ok')
    })
  })
  upstreamUrl = await listen(upstream)
  receiverUrl = await listen(receiver)
})

afterAll(async () => {
  for (const s of [upstream, receiver]) {
    s.closeAllConnections()
    await new Promise<void>((r) => s.close(() => r()))
  }
})

describe('mutant proxy', () => {
  it('passes through without a mutant, and applies request and answer rewrites with one', async () => {
    const proxy = new MutantProxy(upstreamUrl, () => receiverUrl, { primary: 'p' })
    await proxy.listen(await listenPort())
    try {
      const clean = (await (await fetch(`${proxy.url}/v1/runs/run_1`)).json()) as Record<string, unknown>
      expect(clean).toMatchObject({ path: '/v1/runs/run_1', auth: null, awaiting: [] })
      proxy.mutant = createMutants().find((m) => m.id === 'missing-token-accepted')
      expect(((await (await fetch(`${proxy.url}/v1/agents`)).json()) as Record<string, unknown>).auth).toBe(
        'Bearer p',
      )
      proxy.mutant = createMutants().find((m) => m.id === 'cancel-leaves-approvals')
      const run = (await (await fetch(`${proxy.url}/v1/runs/run_1`)).json()) as Record<string, unknown[]>
      expect(run.awaiting).toHaveLength(1)
      proxy.mutant = createMutants().find((m) => m.id === 'missing-ratelimit-header')
      expect((await fetch(`${proxy.url}/v1/tools/tool_1`)).headers.get('ratelimit')).toBeNull()
      expect((await fetch(`${proxy.url}/v1/tools`)).headers.get('ratelimit')).not.toBeNull()
    } finally {
      await proxy.close()
    }
  })

  it('forwards webhook deliveries to the receiver, rewritten by the mutant', async () => {
    const proxy = new MutantProxy(upstreamUrl, () => receiverUrl, { primary: 'p' })
    await proxy.listen(await listenPort())
    try {
      proxy.mutant = createMutants().find((m) => m.id === 'signature-malformed')
      const body = JSON.stringify({ event: 'run.started', signature: `t=1,v1=${'a'.repeat(64)}` })
      await fetch(`${proxy.url}${HOOK_PREFIX}/hooks`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json' },
      })
      expect(received.at(-1)).toBe(`/hooks {"event":"run.started","signature":"sha256=${'a'.repeat(64)}"}`)
    } finally {
      await proxy.close()
    }
  })

  it('standing alone, relays deliveries to the loopback receiver the suite registered, whatever other URLs a check probes', async () => {
    const proxy = new MutantProxy(upstreamUrl, () => proxy.relayedReceiver, { primary: 'p' }, true)
    await proxy.listen(await listenPort())
    try {
      const register = async (url: string) => {
        const res = await fetch(`${proxy.url}/v1/webhooks`, {
          method: 'POST',
          body: JSON.stringify({ url, events: ['run.started'], secret: 's' }),
          headers: { 'content-type': 'application/json' },
        })
        return res.text()
      }
      await register(`${receiverUrl}/hooks/relayed`)
      expect(proxy.relayedReceiver).toBe(receiverUrl)
      // A check's probes (a registration the deployment refuses, an unroutable host) are passed on untouched.
      await register('https://example.com/h')
      await register('https://conformance.invalid/hooks')
      expect(proxy.relayedReceiver).toBe(receiverUrl)
      await fetch(`${proxy.url}${HOOK_PREFIX}/hooks/relayed`, {
        method: 'POST',
        body: '{"event":"run.started"}',
      })
      expect(received.at(-1)).toBe('/hooks/relayed {"event":"run.started"}')
    } finally {
      await proxy.close()
    }
  })

  it('bounds how long an answer takes, but not how long an event stream lives', async () => {
    const proxy = new MutantProxy(upstreamUrl, () => receiverUrl, { primary: 'p' })
    proxy.answerMs = 150
    await proxy.listen(await listenPort())
    let release = () => {}
    secondEvent = new Promise((r) => (release = r))
    try {
      expect((await fetch(`${proxy.url}/slow`)).status).toBe(502)
      const res = await fetch(`${proxy.url}/v1/runs/run_1/trace/stream`)
      // The stream's second event comes well past the bound: the relay carries it, and the end, through.
      setTimeout(release, 400)
      expect(await res.text()).toBe(
        'id: 1\nevent: frame\ndata: {"seq":1}\n\nid: 2\nevent: frame\ndata: {"seq":2}\n\nevent: end\ndata: {}\n\n',
      )
    } finally {
      secondEvent = Promise.resolve()
      await proxy.close()
    }
  })

  it('sends a request once more when the connection it reused was closed under it before any answer', async () => {
    // A deployment that drops a kept-alive connection as the next request arrives on it (the race of a server closing
    // it idle): a POST without a key then went back 502, as the fresh-clone CI once saw.
    const requests = new Map<object, number>()
    const answered: string[] = []
    const closing = createServer((req, res) => {
      const n = (requests.get(req.socket) ?? 0) + 1
      requests.set(req.socket, n)
      if (n > 1) {
        req.socket.destroy()
        return
      }
      req.resume()
      req.on('end', () => {
        answered.push(`${req.method} ${req.url}`)
        res.writeHead(201, { 'content-type': 'application/json' }).end('{}')
      })
    })
    const proxy = new MutantProxy(await listen(closing), () => receiverUrl, { primary: 'p' })
    await proxy.listen(await listenPort())
    try {
      const post = () =>
        fetch(`${proxy.url}/v1/destinations`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{"kind":"slack"}',
        })
      expect((await post()).status).toBe(201)
      expect((await post()).status).toBe(201)
      expect(answered).toEqual(['POST /v1/destinations', 'POST /v1/destinations'])
    } finally {
      await proxy.close()
      closing.closeAllConnections()
      await new Promise((r) => closing.close(r))
    }
  })

  it('relays an event stream event by event as it comes, each through the mutant, held to its poll when it has one', async () => {
    const proxy = new MutantProxy(upstreamUrl, () => receiverUrl, { primary: 'p' })
    await proxy.listen(await listenPort())
    /** The stream's text through the proxy, and when each event arrived (Date.now()). */
    const read = async () => {
      let release = () => {}
      secondEvent = new Promise((r) => (release = r))
      const res = await fetch(`${proxy.url}/v1/runs/run_1/trace/stream`)
      const events: { text: string; at: number }[] = []
      const decoder = new TextDecoder()
      for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
        events.push({ text: decoder.decode(chunk, { stream: true }), at: Date.now() })
        // The second event is written only once the first came through: a proxy that waited for the end hangs.
        if (events.length === 1) setTimeout(release, 20)
      }
      return events
    }
    try {
      const clean = await read()
      expect(clean[0]?.text).toBe('id: 1\nevent: frame\ndata: {"seq":1}\n\n')
      expect(clean.map((e) => e.text).join('')).toBe(
        'id: 1\nevent: frame\ndata: {"seq":1}\n\nid: 2\nevent: frame\ndata: {"seq":2}\n\nevent: end\ndata: {}\n\n',
      )
      proxy.mutant = createMutants().find((m) => m.id === 'sse-trace-without-end-event')
      expect((await read()).map((e) => e.text).join('')).not.toContain('event: end')
      proxy.mutant = createMutants().find((m) => m.id === 'trace-stream-keep-alive-every-poll')
      expect(
        (await read())
          .map((e) => e.text)
          .join('')
          .match(/: keep-alive/g),
      ).toHaveLength(3)
      proxy.mutant = createMutants().find((m) => m.id === 'trace-stream-frames-on-a-poll')
      const polled = await read()
      expect(polled.map((e) => e.text).join('')).toContain('data: {"seq":2}')
      // The first event left the proxy at the first tick of its 1 s clock after it was written, not before.
      expect(polled[0]?.at).toBeGreaterThanOrEqual(firstWritten - (firstWritten % 1000) + 1000)
    } finally {
      secondEvent = Promise.resolve()
      await proxy.close()
    }
  })

  it("serves a dialect behind a gateway's path prefixes: REST and GraphQL under one, the stream under its own, anything else the gateway's 404", async () => {
    // A deployment with a stream: each socket is told the path it was opened at.
    const deployment = createServer((req, res) => res.end(JSON.stringify({ path: req.url })))
    const sockets = new WebSocketServer({ server: deployment })
    sockets.on('connection', (ws, req) => ws.send(JSON.stringify({ path: req.url })))
    const proxy = new MutantProxy(await listen(deployment), () => receiverUrl, { primary: 'p' })
    await proxy.listen(await listenPort())
    const opened = (url: string) =>
      new Promise<string>((resolve) => {
        const ws = new WebSocket(url)
        ws.once('message', (data) => {
          resolve(String(data))
          ws.close()
        })
        ws.once('unexpected-response', (_req, res) => resolve(`refused ${res.statusCode}`))
        ws.once('error', () => undefined)
      })
    try {
      const dialect = underGatewayPrefix(bodySignedDialect())
      proxy.mutant = dialect
      const config = resolveConfig([]).config
      config.baseUrl = proxy.url
      config.streamUrl = proxy.url.replace(/^http/, 'ws')
      config.graphqlUrl = `${proxy.url}/v1/graphql`
      dialect.configure?.(config)
      expect(config.baseUrl).toBe(`${proxy.url}${GATEWAY_PREFIX}`)
      expect(config.graphqlUrl).toBe(`${proxy.url}${GATEWAY_PREFIX}/v1/graphql`)
      expect(config.streamUrl).toBe(`${proxy.url.replace(/^http/, 'ws')}${STREAM_PREFIX}`)
      const inside = await fetch(`${config.baseUrl}/v1/runs/run_1?limit=2`)
      expect(await inside.json()).toEqual({ path: '/v1/runs/run_1?limit=2' })
      const outside = await fetch(`${proxy.url}/v1/runs/run_1`)
      expect(outside.status).toBe(404)
      expect(await outside.json()).toEqual({ message: 'no route for GET /v1/runs/run_1' })
      expect(await opened(`${config.streamUrl}/v1/stream?access_token=t`)).toBe(
        JSON.stringify({ path: '/v1/stream?access_token=t' }),
      )
      expect(await opened(`${config.baseUrl.replace(/^http/, 'ws')}/v1/graphql`)).toBe(
        JSON.stringify({ path: '/v1/graphql' }),
      )
      // The stream only under its own prefix: a client that made its URL from the REST one is refused.
      expect(await opened(`${config.baseUrl.replace(/^http/, 'ws')}/v1/stream`)).toBe('refused 404')
      expect(await opened(`${proxy.url.replace(/^http/, 'ws')}/v1/stream`)).toBe('refused 404')
      expect((await fetch(`${proxy.url}${STREAM_PREFIX}/v1/agents`)).status).toBe(404)
      expect(await (await fetch(`${proxy.url}${STREAM_PREFIX}/v1/stream`)).json()).toEqual({
        path: '/v1/stream',
      })
    } finally {
      await proxy.close()
      sockets.close()
      deployment.closeAllConnections()
      await new Promise<void>((r) => deployment.close(() => r()))
    }
  })

  it('editJson leaves non-JSON answers alone', () => {
    const text = { status: 200, headers: { 'content-type': 'text/plain' }, body: 'hi' }
    expect(editJson(text, () => ({ x: 1 }))).toBe(text)
  })
})

describe('mutants', () => {
  const ids = new Set(ALL_CHECKS.map((c) => c.id))

  it('every mutant targets existing checks and runs them', () => {
    for (const m of createMutants()) {
      expect(m.targets.length, m.id).toBeGreaterThan(0)
      for (const t of m.targets) expect(ids.has(t), `${m.id} → ${t}`).toBe(true)
      const run = m.run ?? m.targets
      for (const t of m.targets)
        expect(
          run.some((p) => t.startsWith(p)),
          `${m.id} does not run ${t}`,
        ).toBe(true)
    }
  })

  it('has unique mutant ids and targets every check at least once', () => {
    const mutants = createMutants()
    expect(new Set(mutants.map((m) => m.id)).size).toBe(mutants.length)
    expect(unprovenChecks(mutants).map((c) => c.id)).toEqual([])
    expect(unprovenChecks([]).length).toBe(ALL_CHECKS.length)
  })

  it('the foreign dialect hides exactly the contract’s extension operations', () => {
    const ops = extensionOperations(new URL('../../openapi/agent-operations.yaml', import.meta.url).pathname)
    const hidden = (method: string, path: string) =>
      ops.some((o) => o.method === method && o.pattern.test(path))
    expect(hidden('POST', '/v1/runs/run_1/steps/step_1/approval')).toBe(true)
    expect(hidden('GET', '/v1/grid/connectors/c1/records')).toBe(true)
    expect(hidden('GET', '/v1/webhooks/whk_1/deliveries')).toBe(true)
    expect(hidden('POST', '/v1/agents/agt_1/runs')).toBe(false)
    expect(hidden('GET', '/v1/runs/run_1/trace')).toBe(false)
    expect(hidden('POST', '/v1/webhooks')).toBe(false)
    expect(hidden('GET', '/v1/tools')).toBe(false)
  })

  it('a mutant is killed only by a target that passed clean and fails under it', () => {
    const r = (id: string, outcome: CheckResult['outcome']): CheckResult => ({
      id,
      title: id,
      level: 'core',
      family: 'x',
      clauses: [],
      outcome,
      exchanges: [],
      durationMs: 0,
    })
    const mutant = { id: 'm', description: '', targets: ['a.one', 'a.two'] }
    const clean = new Map([
      ['a.one', r('a.one', 'pass')],
      ['a.two', r('a.two', 'fail')],
    ])
    expect(judge(mutant, clean, [r('a.one', 'pass'), r('a.two', 'fail')]).killed).toBe(false)
    const verdict = judge(mutant, clean, [r('a.one', 'fail'), r('a.two', 'fail')])
    expect(verdict).toMatchObject({ killed: true, caughtBy: ['a.one'], missed: ['a.two'] })
    expect(verdict.note).toMatch(/a\.two/)
  })

  it('a dialect may fail a profile check that fills a gap, never one that quotes a spec sentence', () => {
    const r = (id: string, level: CheckResult['level'], gap?: string): CheckResult => ({
      id,
      title: id,
      level,
      family: 'x',
      clauses: ['S7.3'],
      outcome: 'fail',
      message: `${id} failed`,
      ...(gap === undefined ? {} : { gap }),
      exchanges: [],
      durationMs: 0,
    })
    const dialect = { id: 'd', description: 'a legal deployment', targets: [] }
    const choice = dialectLine(dialect, [r('x.choice', 'profile', '§7 codes not shown')])
    expect(choice.failures).toBe(0)
    expect(choice.line).toMatch(/no spec sentence broken; 1 profile checks where the spec is silent/)
    const sentence = dialectLine(dialect, [r('x.choice', 'profile', '§7'), r('x.sentence', 'profile')])
    expect(sentence.failures).toBe(1)
    expect(sentence.line).toMatch(/SPEC SENTENCES FAILED x\.sentence \(x\.sentence failed\)/)
    expect(dialectLine(dialect, [r('x.core', 'core')]).failures).toBe(1)
  })

  it("a dialect's core check that skips counts against it, unless it does not apply to the dialect's choice", () => {
    const skipped = (notApplicable: boolean): CheckResult => ({
      id: 'x.core',
      title: 'x.core',
      level: 'core',
      family: 'x',
      clauses: ['S4.6'],
      outcome: 'skip',
      message: 'a trace served as a stream',
      ...(notApplicable ? { notApplicable } : {}),
      exchanges: [],
      durationMs: 0,
    })
    const dialect = { id: 'd', description: 'a legal deployment', targets: [] }
    expect(dialectLine(dialect, [skipped(false)]).failures).toBe(1)
    expect(dialectLine(dialect, [skipped(false)]).line).toMatch(/core SKIPPED or PARTIAL x\.core skip/)
    expect(dialectLine(dialect, [skipped(true)]).failures).toBe(0)
  })
})

describe("a dialect's subscription secrets", () => {
  const subscribe = (url: string, secret: string) => ({
    method: 'POST',
    path: '/v1/webhooks',
    headers: {},
    body: JSON.stringify({ url, events: ['run.started'], secret }),
  })
  const delivery = (path: string) => ({
    method: 'POST',
    path: `${HOOK_PREFIX}${path}`,
    headers: {},
    body: '{}',
  })

  it('are found for every delivery after a check subscribed a url that is not a URL', () => {
    const secrets = new Secrets()
    secrets.learn(subscribe('http://127.0.0.1:1/hooks/first', 's1'))
    secrets.learn(subscribe('not a url', 'refused'))
    secrets.learn(subscribe('http://127.0.0.1:1/hooks/second', 's2'))
    expect(secrets.forDelivery(delivery('/hooks/first'))).toBe('s1')
    expect(secrets.forDelivery(delivery('/hooks/second'))).toBe('s2')
    expect(secrets.forDelivery(delivery('/hooks/third'))).toBeUndefined()
  })
})

describe("the declared-choices dialect's run starts", () => {
  it('plan from inputs.steps, and leave inputs that are not an object for the deployment to refuse', () => {
    expect(JSON.parse(plannedFromSteps('{"inputs":{"steps":["a"],"x":1},"mode":"live"}'))).toEqual({
      inputs: { x: 1, plan: ['a'] },
      mode: 'live',
    })
    expect(JSON.parse(plannedFromSteps('{"mode":"live"}'))).toEqual({ mode: 'live', inputs: { plan: [] } })
    // A legal deployment answers these 400 (§7): the rewrite must not make them valid (validation.fuzz-400).
    for (const body of ['{"inputs":null,"mode":"live"}', '{"inputs":[],"mode":"live"}', '{"inputs":"x"}'])
      expect(plannedFromSteps(body)).toBe(body)
  })
})
