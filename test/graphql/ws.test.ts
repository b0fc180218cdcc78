import { type Client, createClient } from 'graphql-ws'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { startTestServer, type TestServer } from '../support/server.js'
import { agentWithTool } from './helpers.js'

let t: TestServer
let token: string
const clients: Client[] = []

beforeAll(async () => {
  t = await startTestServer()
  token = (await t.createKey({ scopes: ['*'] })).token
})
afterEach(async () => {
  for (const c of clients.splice(0)) await c.dispose()
})
afterAll(() => t.close())

const wsUrl = () => `${t.baseUrl.replace('http', 'ws')}/v1/graphql`

function client(params: Record<string, unknown> | undefined, url = wsUrl()): Client {
  const c = createClient({
    url,
    webSocketImpl: WebSocket,
    connectionParams: params,
    retryAttempts: 0,
    lazy: true,
  })
  clients.push(c)
  return c
}

type Msg = {
  data?: Record<string, unknown> | null
  errors?: { message: string; extensions: Record<string, unknown> }[]
}

/** Collects results of one subscription until `enough` says stop (or 10 s pass: a bounded wait). */
function collect(c: Client, query: string, enough: (all: Msg[]) => boolean) {
  const seen: Msg[] = []
  let stop: () => void = () => {}
  const done = new Promise<Msg[]>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out with ${JSON.stringify(seen)}`)), 10_000)
    const finish = () => {
      clearTimeout(timer)
      resolve(seen)
    }
    stop = c.subscribe(
      { query },
      {
        next: (m) => {
          seen.push(m as Msg)
          if (enough(seen)) {
            stop()
            finish()
          }
        },
        error: (err) => {
          clearTimeout(timer)
          reject(err)
        },
        complete: finish,
      },
    )
  })
  return { done, stop: () => stop() }
}

const eventsOf = (all: Msg[]) =>
  all.map((m) => (m.data?.runEvents as { event: { event: string; run_id: string } } | undefined)?.event)

/** The id of a run whose start and success the subscription both saw. */
function wholeRun(all: Msg[]): string | undefined {
  const events = eventsOf(all)
  const started = new Set(events.filter((e) => e?.event === 'run.started').map((e) => e?.run_id))
  return events.find((e) => e?.event === 'run.succeeded' && started.has(e.run_id))?.run_id
}

/** Calls `produce` every 250 ms until `done` settles: at most 20 times, within collect's own 10 s bound. */
async function untilSettled(done: Promise<unknown>, produce: () => Promise<void>): Promise<void> {
  let settled = false
  const watch = done.then(
    () => {
      settled = true
    },
    () => {
      settled = true
    },
  )
  for (let i = 0; i < 20 && !settled; i++) {
    await produce()
    await Promise.race([watch, new Promise((r) => setTimeout(r, 250))])
  }
}

describe('subscriptions over graphql-ws', () => {
  it('runEvents: live events of the workspace, as on the stream topic runs', async () => {
    const agentId = await agentWithTool(t, token, 'ws-echo')
    const c = client({ authorization: `Bearer ${token}` })
    const sub = collect(
      c,
      'subscription { runEvents { type topic seq event } }',
      (all) => wholeRun(all) !== undefined,
    )
    // No since is "from now on", and a subscription is not acknowledged: runs are started until one is seen whole
    // (a fixed sleep before the first one lost it when the subscription went live later under load).
    await untilSettled(sub.done, () =>
      t.request('POST', `/v1/agents/${agentId}/runs`, { token, body: {} }).then(() => undefined),
    )
    const all = await sub.done
    const first = all[0]?.data?.runEvents as { type: string; topic: string; seq: number }
    expect(first).toMatchObject({ type: 'event', topic: 'runs' })
    const seqs = all.map((m) => (m.data?.runEvents as { seq: number } | undefined)?.seq ?? 0)
    expect([...seqs].sort((a, b) => a - b)).toEqual(seqs)
    const runId = wholeRun(all)
    const kinds = eventsOf(all)
      .filter((e) => e?.run_id === runId)
      .map((e) => e?.event)
    expect(kinds[0]).toBe('run.started')
    expect(kinds.at(-1)).toBe('run.succeeded')
  })

  it('runEvents(since: 0) replays what already happened, in seq order', async () => {
    const c = client({ authorization: `Bearer ${token}` })
    const sub = collect(c, 'subscription { runEvents(since: 0) { seq event } }', (all) =>
      eventsOf(all).some((e) => e?.event === 'run.succeeded'),
    )
    const all = await sub.done
    expect(eventsOf(all)[0]?.event).toBe('run.started')
  })

  it('connectorRecords: records with lineage as they land, access_token in the URL', async () => {
    const c = client(undefined, `${wsUrl()}?access_token=${token}`)
    const records = (all: Msg[]) =>
      all.map((m) => m.data?.connectorRecords as { seq: number; record: { id: string } } | undefined)
    const batches: { ids: string[]; root: string }[] = []
    const whole = (all: Msg[]) => {
      const seen = new Set(records(all).map((r) => r?.record.id))
      return batches.find((b) => b.ids.every((id) => seen.has(id)))
    }
    const sub = collect(
      c,
      'subscription { connectorRecords(connector_id: "crm") { type topic seq record { id body lineage { batch_root } } } }',
      (all) => whole(all) !== undefined,
    )
    // As for runEvents: batches of two land until the live subscription has seen one whole.
    await untilSettled(sub.done, async () => {
      const n = batches.length
      const body = {
        records: [1, 2].map((i) => ({
          id: `b${n}-r${i}`,
          ts: '2026-11-23T06:00:00Z',
          source: 's',
          policy_class: 'public',
          body: { i },
        })),
      }
      const ingest = await t.request('POST', '/v1/grid/connectors/crm/ingest', { token, body })
      expect(ingest.status).toBe(202)
      batches.push({ ids: body.records.map((r) => r.id), root: ingest.body.lineage_root })
    })
    const all = await sub.done
    const batch = whole(all)!
    const got = all
      .map((m) => m.data?.connectorRecords)
      .filter((r) => batch.ids.includes((r as { record: { id: string } }).record.id))
    const seq = (got[0] as { seq: number }).seq
    expect(got).toEqual(
      [1, 2].map((i) => ({
        type: 'record',
        topic: 'connector:crm',
        seq: seq + i - 1,
        record: { id: batch.ids[i - 1], body: { i }, lineage: { batch_root: batch.root } },
      })),
    )
    // Every record pushed, including those of batches seen in part, is in commit order.
    const seqs = records(all).map((r) => r?.seq ?? 0)
    expect([...seqs].sort((a, b) => a - b)).toEqual(seqs)
  })

  it('a topic outside the key scopes is policy_denied with the stream detail', async () => {
    const narrow = (await t.createKey({ scopes: ['stream:connector:crm'] })).token
    const c = client({ authorization: `Bearer ${narrow}` })
    const all = await collect(c, 'subscription { runEvents { seq } }', () => true).done
    expect(all[0]?.errors?.[0]?.extensions).toMatchObject({
      code: 'policy_denied',
      status: 403,
      detail: { violation: 'missing_scope', limit: ['stream:runs'], observed: ['stream:connector:crm'] },
    })
  })

  it('refuses a bad token at the upgrade with 401 and the envelope, and a missing one at connection_init', async () => {
    const refused = await new Promise<{ status: number; body: string }>((resolve) => {
      const ws = new WebSocket(wsUrl(), 'graphql-transport-ws', { headers: { authorization: 'Bearer nope' } })
      ws.on('unexpected-response', (_req, incoming) => {
        let body = ''
        incoming.on('data', (d: Buffer) => {
          body += d.toString()
        })
        incoming.on('end', () => resolve({ status: incoming.statusCode ?? 0, body }))
      })
    })
    expect(refused.status).toBe(401)
    expect(JSON.parse(refused.body).error.code).toBe('unauthenticated')

    const closed = await new Promise<number>((resolve) => {
      const ws = new WebSocket(wsUrl(), 'graphql-transport-ws')
      ws.on('open', () => ws.send(JSON.stringify({ type: 'connection_init', payload: {} })))
      ws.on('close', (code) => resolve(code))
    })
    expect(closed).toBe(4401)
  })

  it('counts each subscribe against the rate limit and refuses bad documents without closing', async () => {
    const key = await t.createKey({ tier: 'enterprise', limitPerHour: 2, burstLimit: 2, scopes: ['*'] })
    const c = client({ authorization: `Bearer ${key.token}` })
    const bad = await collect(c, 'subscription { runEvents(since: -1) { seq } }', () => true).done
    expect(bad[0]?.errors?.[0]?.extensions).toMatchObject({ code: 'invalid_request', status: 400 })
    const unknown = await collect(c, 'subscription { nope }', () => true).done.catch((e: unknown) => e)
    expect(JSON.stringify(unknown)).toContain('invalid_request')
    const limited = await collect(c, 'subscription { runEvents { seq } }', () => true).done.catch(
      (e: unknown) => e,
    )
    expect(JSON.stringify(limited)).toContain('rate_limited')
  })

  it('refuses text no store can keep in a string literal or a variable, before any store is read', async () => {
    const c = client({ authorization: `Bearer ${token}` })
    const literal = await collect(
      c,
      'subscription { connectorRecords(connector_id: "a\\u0000b") { seq } }',
      () => true,
    ).done.catch((e: unknown) => e)
    expect(JSON.stringify(literal)).toContain('invalid_request')
    expect(JSON.stringify(literal)).toContain('U+0000')
    const variable = await new Promise<unknown>((resolve) => {
      c.subscribe(
        {
          query: 'subscription($c: ID!) { connectorRecords(connector_id: $c) { seq } }',
          variables: { c: 'a\u0000b' },
        },
        { next: resolve, error: resolve, complete: () => resolve('completed') },
      )
    })
    expect(JSON.stringify(variable)).toContain('variables.c')
  })

  it('gives a slow client 10 s to send connection_init, not graphql-ws default 3 s', async () => {
    const ws = new WebSocket(wsUrl(), 'graphql-transport-ws', {
      headers: { authorization: `Bearer ${token}` },
    })
    const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)))
    await new Promise((resolve, reject) => {
      ws.once('open', resolve)
      ws.once('error', reject)
    })
    // Past the library's default: a server with it has closed the socket (4408) by now.
    const early = await Promise.race([
      closed,
      new Promise<'open'>((resolve) => setTimeout(() => resolve('open'), 3_500)),
    ])
    expect(early).toBe('open')
    ws.close()
    await closed
  })

  it('leaves /v1/stream to the stream and answers 404 on other paths', async () => {
    const stream = await new Promise<string>((resolve, reject) => {
      const ws = new WebSocket(`${t.baseUrl.replace('http', 'ws')}/v1/stream?access_token=${token}`)
      ws.on('open', () => ws.send(JSON.stringify({ type: 'ping' })))
      ws.on('message', (d) => {
        resolve(JSON.parse(d.toString()).type)
        ws.close()
      })
      ws.on('error', reject)
    })
    expect(stream).toBe('pong')
    const status = await new Promise<number>((resolve) => {
      const ws = new WebSocket(`${t.baseUrl.replace('http', 'ws')}/v1/nowhere`, {
        headers: { authorization: `Bearer ${token}` },
      })
      ws.on('unexpected-response', (_req, incoming) => resolve(incoming.statusCode ?? 0))
    })
    expect(status).toBe(404)
  })
})

describe('a revoked key on an open graphql-ws socket', () => {
  let fast: TestServer
  beforeAll(async () => {
    fast = await startTestServer({ config: { streamHeartbeatMs: 150 } })
  })
  afterAll(() => fast.close())

  it("closes the socket with 4401 and REST's 401 message once the key is revoked, as /v1/stream does", async () => {
    const key = await fast.createKey({ scopes: ['*'] })
    const url = `${fast.baseUrl.replace('http', 'ws')}/v1/graphql`
    const ws = new WebSocket(url, 'graphql-transport-ws', {
      headers: { authorization: `Bearer ${key.token}` },
    })
    const acked = new Promise<void>((resolve) =>
      ws.on('message', (d) => {
        if (JSON.parse(d.toString()).type === 'connection_ack') resolve()
      }),
    )
    const closed = new Promise<string>((resolve) =>
      ws.on('close', (code, reason) => resolve(`${code} ${reason}`)),
    )
    ws.on('open', () => ws.send(JSON.stringify({ type: 'connection_init', payload: {} })))
    await acked
    // Still open a while later while the key is good.
    await new Promise((r) => setTimeout(r, 500))
    expect(ws.readyState).toBe(WebSocket.OPEN)
    await fast.services.keyAdmin.revoke(key.key_id)
    const code = await Promise.race([
      closed,
      new Promise<string>((r) => setTimeout(() => r('still open'), 5_000)),
    ])
    expect(code).toBe('4401 The bearer token has been revoked')
  })
})

describe('a since older than the replay window', () => {
  let small: TestServer
  beforeAll(async () => {
    small = await startTestServer({ config: { streamMaxReplay: 3 } })
  })
  afterAll(() => small.close())

  it("announces a gap, then replays the newest records within the stream's window (AGENTOPS_STREAM_MAX_REPLAY)", async () => {
    const key = await small.createKey({ scopes: ['*'] })
    const records = [1, 2, 3, 4, 5].map((i) => ({
      id: `r${i}`,
      ts: '2026-11-23T06:00:00Z',
      source: 's',
      policy_class: 'public',
      body: { i },
    }))
    const ingest = await small.request('POST', '/v1/grid/connectors/old/ingest', {
      token: key.token,
      body: { records },
    })
    expect(ingest.status).toBe(202)
    const c = client(
      { authorization: `Bearer ${key.token}` },
      `${small.baseUrl.replace('http', 'ws')}/v1/graphql`,
    )
    const sub = collect(
      c,
      'subscription { connectorRecords(connector_id: "old", since: 0) { type seq from to record { id } } }',
      (all) => all.length >= 4,
    )
    const got = (await sub.done).map((m) => m.data?.connectorRecords)
    expect(got).toEqual([
      { type: 'gap', seq: null, from: 1, to: 2, record: null },
      ...[3, 4, 5].map((i) => ({ type: 'record', seq: i, from: null, to: null, record: { id: `r${i}` } })),
    ])
  })
})
