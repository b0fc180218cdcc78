import { afterEach, describe, expect, it } from 'vitest'
import { ManualClock } from '../../src/domain/clock.js'
import { streamHubOf } from '../../src/stream/attach.js'
import { startTestServer, type TestServer } from '../support/server.js'
import { contractViolations, openClient, type TestClient } from './client.js'

const bigRecord = (id: string) => ({
  id,
  ts: '2026-11-23T06:00:00Z',
  source: 'bulk',
  policy_class: 'public',
  body: { blob: 'x'.repeat(18_000) },
})

describe('stream liveness', () => {
  let t: TestServer | undefined
  const clients: TestClient[] = []
  afterEach(async () => {
    for (const c of clients.splice(0)) await c.close().catch(() => {})
    await t?.close()
    t = undefined
    expect(contractViolations).toEqual([])
  })

  it('sends heartbeat messages and ping frames on the configured period', async () => {
    // A period long enough that a loaded machine's pauses do not pass for a dead peer (the test process also
    // answers the pings).
    t = await startTestServer({ config: { streamHeartbeatMs: 200 } })
    const key = await t.createKey({ scopes: ['stream:runs'] })
    const client = await openClient(t.baseUrl, key.token)
    clients.push(client)
    let pings = 0
    client.ws.on('ping', () => pings++)
    const beats = await client.collect((m) => m.type === 'heartbeat', 3, 10_000)
    for (const b of beats) expect(b.ts).toMatch(/^\d{4}-\d{2}-\d{2}T.*Z$/)
    expect(pings).toBeGreaterThanOrEqual(2)
    expect(client.ws.readyState).toBe(client.ws.OPEN)
  })

  it('closes with 4401 (after an unauthenticated error message) once the key is revoked or expires', async () => {
    const clock = new ManualClock(Date.UTC(2026, 10, 23, 6))
    t = await startTestServer({ clock, config: { streamHeartbeatMs: 40 } })
    const revoked = await t.createKey({ scopes: ['stream:runs'] })
    const expiring = await t.createKey({ scopes: ['stream:runs'], expiresInSeconds: 60 })
    const a = await openClient(t.baseUrl, revoked.token)
    const b = await openClient(t.baseUrl, expiring.token, { viaQuery: true })
    clients.push(a, b)
    await t.services.keyAdmin.revoke(revoked.key_id)
    const closedA = await a.closed
    expect(closedA.code).toBe(4401)
    expect(a.messages.find((m) => m.type === 'error')?.error.code).toBe('unauthenticated')
    await b.waitFor((m) => m.type === 'heartbeat')
    expect(b.ws.readyState).toBe(b.ws.OPEN)
    clock.advance(61_000)
    expect((await b.closed).code).toBe(4401)
  })

  it('closes a slow consumer with 4008 instead of buffering without bound', async () => {
    t = await startTestServer({ config: { streamMaxBufferedBytes: 256 * 1024 } })
    const writer = await t.createKey({ scopes: ['*'] })
    const slow = await openClient(t.baseUrl, writer.token)
    const fast = await openClient(t.baseUrl, writer.token)
    clients.push(slow, fast)
    for (const c of [slow, fast]) {
      c.send({ type: 'subscribe', topics: ['connector:bulk'] })
      await c.waitFor((m) => m.type === 'subscribed')
    }
    // Stop reading: the kernel buffers fill, then the server's send buffer grows past the bound.
    slow.ws.pause()
    const hub = streamHubOf(t.server.httpServer)
    expect(hub?.snapshot().open).toBe(2)
    let sent = 0
    for (let b = 0; b < 60 && hub?.snapshot().open === 2; b++) {
      const batch = Array.from({ length: 50 }, (_, i) => bigRecord(`r-${b}-${i}`))
      const res = await t.request('POST', '/v1/grid/connectors/bulk/ingest', {
        token: writer.token,
        body: { records: batch },
      })
      expect(res.status).toBe(202)
      sent += 50
      // Once the fast client has everything, the server has also tried to send all of it to the slow one.
      await fast.collect((m) => m.type === 'record', sent, 10_000)
    }
    // The slow connection left the hub: the server closed it; the close frame waits behind unread data.
    expect(hub?.snapshot().open).toBe(1)
    slow.ws.resume()
    const closed = await slow.closed
    expect(closed).toEqual({ code: 4008, reason: 'slow consumer' })
    // The well-behaved client on the same topic is unaffected.
    expect(fast.ws.readyState).toBe(fast.ws.OPEN)
    fast.send({ type: 'ping' })
    await fast.waitFor((m) => m.type === 'pong')
  })
})
