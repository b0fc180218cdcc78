/**
 * A key's open stream connections (`stream_sockets_per_key`) and their topics (`stream_subscriptions_per_key`) are
 * counted in the store, across every connection and replica of the key: one past either is refused with
 * quota_exceeded naming the quota, its limit and its use (the upgrade as a plain HTTP 403, a topic per topic),
 * while the workspace's other keys are not held back; a closed socket frees its slot and topics at once.
 */
import { createClient } from 'graphql-ws'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { openClient, refusedUpgrade, streamUrl, type TestClient } from '../stream/client.js'
import { backends } from '../support/backends.js'
import { startTestServer, type TestServer } from '../support/server.js'

describe.each(backends())('stream quotas per key ($name)', (backend) => {
  let t: TestServer
  let workspaceCount = 0
  beforeAll(async () => {
    t = await startTestServer({ databaseUrl: await backend.freshUrl() })
  })
  afterAll(() => t.close())

  const workspaceName = () => `per-key-${backend.name}-${process.pid}-${++workspaceCount}`

  /** The key's live connections as the store counts them (closing is seen by the server a moment later). */
  const socketsOf = async (keyId: string) => (await t.services.streamSockets.usage(keyId)).sockets

  it("refuses the key's socket past its quota with 403 quota_exceeded, lets another key in, and frees a slot on close", async () => {
    const workspace = workspaceName()
    const first = await t.createKey({ workspace, quotas: { stream_sockets_per_key: 2 } })
    const other = await t.createKey({ workspace })
    const open: TestClient[] = [
      await openClient(t.baseUrl, first.token),
      await openClient(t.baseUrl, first.token),
    ]
    const refused = await refusedUpgrade(streamUrl(t.baseUrl), { authorization: `Bearer ${first.token}` })
    expect(refused.status).toBe(403)
    const envelope = JSON.parse(refused.body) as { error: { code: string; detail: unknown } }
    expect(envelope.error.code).toBe('quota_exceeded')
    expect(envelope.error.detail).toEqual({ quota: 'stream_sockets_per_key', limit: 2, used: 2 })
    // The quota is per key: the workspace's other key still connects, twice.
    open.push(await openClient(t.baseUrl, other.token), await openClient(t.baseUrl, other.token))
    expect(await socketsOf(first.key_id)).toBe(2)
    // Closing one of the first key's sockets gives its slot back as soon as the server sees the close.
    await open.shift()?.close()
    await expect.poll(() => socketsOf(first.key_id), { timeout: 5_000 }).toBe(1)
    open.push(await openClient(t.baseUrl, first.token))
    for (const c of open) await c.close()
    await expect.poll(() => socketsOf(first.key_id), { timeout: 5_000 }).toBe(0)
  })

  it("counts a key's topics across its sockets, refuses past the quota per topic, and takes one back on unsubscribe", async () => {
    const key = await t.createKey({
      workspace: workspaceName(),
      scopes: ['*'],
      quotas: { stream_subscriptions_per_key: 3 },
    })
    const a = await openClient(t.baseUrl, key.token)
    const b = await openClient(t.baseUrl, key.token)
    a.send({ type: 'subscribe', topics: ['connector:a1', 'connector:a2'] })
    await a.collect((m) => m.type === 'subscribed', 2)
    b.send({ type: 'subscribe', topics: ['connector:b1', 'connector:b2', 'connector:b3'] })
    const answered = await b.collect((m) => m.type === 'subscribed' || m.type === 'error', 3)
    expect(answered.filter((m) => m.type === 'subscribed').map((m) => m.topic)).toEqual(['connector:b1'])
    const refusals = answered.filter((m) => m.type === 'error')
    expect(refusals.map((m) => m.topic)).toEqual(['connector:b2', 'connector:b3'])
    for (const m of refusals) {
      expect(m.error.code).toBe('quota_exceeded')
      expect(m.error.detail).toEqual({ quota: 'stream_subscriptions_per_key', limit: 3, used: 3 })
    }
    expect((await t.services.streamSockets.usage(key.key_id)).subscriptions).toBe(3)
    // An unsubscribe on one socket makes room on the other; a topic already held takes nothing more.
    a.send({ type: 'unsubscribe', topics: ['connector:a1'] })
    await a.waitFor((m) => m.type === 'unsubscribed')
    b.send({ type: 'subscribe', topics: ['connector:b1', 'connector:b2'] })
    await b.collect((m) => m.type === 'subscribed', 3)
    expect(b.messages.filter((m) => m.type === 'error')).toHaveLength(2)
    expect((await t.services.streamSockets.usage(key.key_id)).subscriptions).toBe(3)
    // A closed socket's topics stop counting with it.
    await b.close()
    await expect.poll(async () => (await t.services.streamSockets.usage(key.key_id)).subscriptions).toBe(1)
    await a.close()
  })

  it('counts graphql-ws sockets and subscriptions against the same per-key quotas as /v1/stream', async () => {
    const key = await t.createKey({
      workspace: workspaceName(),
      scopes: ['*'],
      quotas: { stream_sockets_per_key: 2, stream_subscriptions_per_key: 1 },
    })
    const graphqlUrl = `${t.baseUrl.replace(/^http/, 'ws')}/v1/graphql`
    const stream = await openClient(t.baseUrl, key.token)
    stream.send({ type: 'subscribe', topics: ['runs'] })
    await stream.waitFor((m) => m.type === 'subscribed')
    // The key's second socket, authenticated in connection_init: its subscription finds the key's one topic held.
    const gql = createClient({
      url: graphqlUrl,
      webSocketImpl: WebSocket,
      connectionParams: { authorization: `Bearer ${key.token}` },
      retryAttempts: 0,
      lazy: false,
    })
    await new Promise<void>((resolve) => gql.on('connected', () => resolve()))
    const refusal = await new Promise<unknown>((resolve) => {
      gql.subscribe(
        { query: 'subscription { runEvents { seq } }' },
        { next: () => undefined, error: resolve, complete: () => resolve('completed') },
      )
    })
    expect(refusal).toEqual([
      expect.objectContaining({
        extensions: expect.objectContaining({
          code: 'quota_exceeded',
          detail: { quota: 'stream_subscriptions_per_key', limit: 1, used: 1 },
        }),
      }),
    ])
    // A third socket: refused at the upgrade when the token comes with it, closed 4403 when it comes in init.
    const refused = await refusedUpgrade(graphqlUrl, { authorization: `Bearer ${key.token}` })
    expect(refused.status).toBe(403)
    expect(JSON.parse(refused.body).error.detail).toEqual({
      quota: 'stream_sockets_per_key',
      limit: 2,
      used: 2,
    })
    const raw = new WebSocket(graphqlUrl, 'graphql-transport-ws')
    raw.once('open', () =>
      raw.send(
        JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${key.token}` } }),
      ),
    )
    const closed = await new Promise<{ code: number; reason: string }>((resolve) =>
      raw.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
    )
    expect(closed).toEqual({ code: 4403, reason: 'quota_exceeded: stream_sockets_per_key limit=2 used=2' })
    // Once the stream's socket closes, its slot and topic are free for graphql-ws.
    await stream.close()
    await expect.poll(() => socketsOf(key.key_id), { timeout: 5_000 }).toBe(1)
    const sub = await new Promise<unknown>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no answer')), 5_000)
      const stop = gql.subscribe(
        { query: 'subscription { runEvents { seq } }' },
        { next: () => undefined, error: reject, complete: () => resolve('completed') },
      )
      // A subscription that was admitted just waits for events: its topic counts, then it ends.
      void expect
        .poll(async () => (await t.services.streamSockets.usage(key.key_id)).subscriptions, {
          timeout: 4_000,
        })
        .toBe(1)
        .then(() => {
          clearTimeout(timer)
          stop()
          resolve('admitted')
        }, reject)
    })
    expect(sub).toBe('admitted')
    await expect.poll(async () => (await t.services.streamSockets.usage(key.key_id)).subscriptions).toBe(0)
    await gql.dispose()
  })
})

/** Two servers on one PostgreSQL database: a key's sockets opened through both at once are admitted exactly. */
describe.each(backends().filter((b) => b.name === 'postgres'))(
  'stream quotas per key across replicas ($name)',
  (backend) => {
    const servers: TestServer[] = []
    beforeAll(async () => {
      const databaseUrl = await backend.freshUrl()
      servers.push(await startTestServer({ databaseUrl }))
      servers.push(await startTestServer({ databaseUrl }))
    })
    afterAll(async () => {
      for (const s of servers) await s.close()
    })

    it('admits exactly the limit of sockets opened concurrently through two replicas, then frees them on close', async () => {
      const [one, two] = servers
      if (!one || !two) throw new Error('two servers expected')
      const limit = 5
      const key = await one.createKey({
        workspace: `replicas-${process.pid}`,
        quotas: { stream_sockets_per_key: limit },
      })
      const attempts = Array.from({ length: 16 }, (_, i) =>
        openClient((i % 2 === 0 ? one : two).baseUrl, key.token).then(
          (client) => ({ client }),
          (err: unknown) => ({ err }),
        ),
      )
      const outcomes = await Promise.all(attempts)
      const opened = outcomes.flatMap((o) => ('client' in o ? [o.client] : []))
      const refused = outcomes.flatMap((o) => ('err' in o ? [String(o.err)] : []))
      expect(opened).toHaveLength(limit)
      expect(refused).toHaveLength(16 - limit)
      for (const r of refused) expect(r).toContain('unexpected response 403')
      expect((await two.services.streamSockets.usage(key.key_id)).sockets).toBe(limit)
      // One closed on either replica frees a slot for the other.
      await opened.shift()?.close()
      await expect
        .poll(async () => (await one.services.streamSockets.usage(key.key_id)).sockets)
        .toBe(limit - 1)
      opened.push(await openClient(two.baseUrl, key.token))
      for (const c of opened) await c.close()
    })
  },
)
