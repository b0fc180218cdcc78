/**
 * The stream's subscription quota (issue 44): one socket took 10,000 topics, each read again on every wake-up and
 * fallback poll. A connection holds at most AGENTOPS_STREAM_MAX_SUBSCRIPTIONS topics; one more is refused per topic
 * with `quota_exceeded` naming the quota, its limit and its use, and the socket stays open.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { startTestServer, type TestServer } from '../support/server.js'

interface Message {
  type: string
  topic?: string
  error?: { code: string; detail: Record<string, unknown> }
}

describe('stream subscriptions per socket', () => {
  let t: TestServer
  let token: string
  beforeAll(async () => {
    t = await startTestServer({ config: { streamMaxSubscriptions: 3 } })
    token = (await t.createKey({ scopes: ['*'] })).token
  })
  afterAll(() => t.close())

  it('refuses topics past the quota with quota_exceeded, keeps the socket, and takes one again after an unsubscribe', async () => {
    const ws = new WebSocket(`${t.baseUrl.replace(/^http/, 'ws')}/v1/stream`, {
      headers: { authorization: `Bearer ${token}` },
    })
    const got: Message[] = []
    ws.on('message', (d) => got.push(JSON.parse(d.toString()) as Message))
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve())
      ws.once('error', reject)
    })
    const topics = ['connector:a', 'connector:b', 'connector:c', 'connector:d', 'connector:e']
    ws.send(JSON.stringify({ type: 'subscribe', topics }))
    const settled = () => got.filter((m) => m.type === 'subscribed' || m.type === 'error')
    await expect.poll(() => settled().length, { timeout: 5_000 }).toBe(5)
    expect(got.filter((m) => m.type === 'subscribed').map((m) => m.topic)).toEqual(topics.slice(0, 3))
    const refused = got.filter((m) => m.type === 'error')
    expect(refused.map((m) => m.topic)).toEqual(['connector:d', 'connector:e'])
    for (const m of refused) {
      expect(m.error?.code).toBe('quota_exceeded')
      expect(m.error?.detail).toEqual({ quota: 'stream_subscriptions_per_socket', limit: 3, used: 3 })
    }
    // A topic already held is no new subscription; after an unsubscribe there is room for one.
    got.length = 0
    ws.send(JSON.stringify({ type: 'subscribe', topics: ['connector:a'] }))
    ws.send(JSON.stringify({ type: 'unsubscribe', topics: ['connector:b'] }))
    ws.send(JSON.stringify({ type: 'subscribe', topics: ['connector:d'] }))
    await expect.poll(() => got.filter((m) => m.type === 'subscribed').length, { timeout: 5_000 }).toBe(2)
    expect(got.filter((m) => m.type === 'error')).toEqual([])
    expect(ws.readyState).toBe(WebSocket.OPEN)
    ws.close()
  })
})
