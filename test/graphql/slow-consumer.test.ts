import { afterEach, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { startTestServer, type TestServer } from '../support/server.js'
import { metricValue } from './helpers.js'

const bigRecord = (id: string) => ({
  id,
  ts: '2026-11-23T06:00:00Z',
  source: 'bulk',
  policy_class: 'public',
  body: { blob: 'x'.repeat(18_000) },
})

/** A graphql-ws socket (spoken by hand, so the test can stop it reading) with one `connectorRecords` subscription. */
interface Subscriber {
  ws: WebSocket
  /** `next` messages read so far. */
  records: number
  closed: Promise<{ code: number; reason: string }>
}

async function subscriber(t: TestServer, token: string): Promise<Subscriber> {
  const ws = new WebSocket(`${t.baseUrl.replace('http', 'ws')}/v1/graphql`, 'graphql-transport-ws', {
    headers: { authorization: `Bearer ${token}` },
  })
  const sub: Subscriber = {
    ws,
    records: 0,
    closed: new Promise((resolve) =>
      ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
    ),
  }
  const acked = new Promise<void>((resolve) =>
    ws.on('message', (data) => {
      const message = JSON.parse(data.toString()) as { type: string }
      if (message.type === 'connection_ack') resolve()
      if (message.type === 'next') sub.records++
    }),
  )
  await new Promise((resolve, reject) => {
    ws.once('open', resolve)
    ws.once('error', reject)
  })
  ws.send(JSON.stringify({ type: 'connection_init' }))
  await acked
  // `since: 0`: whenever the subscription goes live, it delivers every record of the test.
  const query = 'subscription { connectorRecords(connector_id: "bulk", since: 0) { seq record { id body } } }'
  ws.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query } }))
  return sub
}

/** Waits until `sub` has read `count` records (10 s at most). */
async function readsUpTo(sub: Subscriber, count: number): Promise<void> {
  for (let waited = 0; sub.records < count; waited += 10) {
    if (waited > 10_000) throw new Error(`read ${sub.records} of ${count} records`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

const slowCloses = (t: TestServer) =>
  metricValue(t, 'agentops_socket_slow_consumer_closes_total', { transport: 'graphql' })

describe('a graphql-ws client that stops reading', () => {
  let t: TestServer | undefined
  const sockets: WebSocket[] = []
  afterEach(async () => {
    for (const ws of sockets.splice(0)) ws.terminate()
    await t?.close()
    t = undefined
  })

  it('is closed with 4008 and counted, as on /v1/stream', async () => {
    const server = await startTestServer()
    t = server
    const writer = await server.createKey({ scopes: ['*'] })
    const slow = await subscriber(server, writer.token)
    const fast = await subscriber(server, writer.token)
    sockets.push(slow.ws, fast.ws)
    const ingest = async (records: unknown[]) => {
      const res = await server.request('POST', '/v1/grid/connectors/bulk/ingest', {
        token: writer.token,
        body: { records },
      })
      expect(res.status).toBe(202)
    }
    await ingest([bigRecord('first')])
    await Promise.all([readsUpTo(slow, 1), readsUpTo(fast, 1)])
    expect(await slowCloses(server)).toBe(0)

    // Stop reading: the kernel buffers fill, then the server's send buffer grows past the bound (1 MiB).
    slow.ws.pause()
    let sent = 1
    for (let b = 0; b < 60 && (await slowCloses(server)) === 0; b++) {
      await ingest(Array.from({ length: 50 }, (_, i) => bigRecord(`r-${b}-${i}`)))
      sent += 50
      // Once the fast client has everything, the server has written all of it to the slow one too.
      await readsUpTo(fast, sent)
    }
    expect(await slowCloses(server)).toBe(1)
    // Its subscription ended with the 4008, not when the peer gets round to the closing handshake.
    const live = { transport: 'graphql', topic: 'connectorRecords' }
    expect(await metricValue(server, 'agentops_socket_subscriptions', live)).toBe(1)

    // The close frame waits behind the unread data.
    slow.ws.resume()
    expect(await slow.closed).toEqual({ code: 4008, reason: 'slow consumer' })
    // The well-behaved client on the same topic is unaffected.
    expect(fast.ws.readyState).toBe(WebSocket.OPEN)
    await ingest([bigRecord('last')])
    await readsUpTo(fast, sent + 1)
  })
})
