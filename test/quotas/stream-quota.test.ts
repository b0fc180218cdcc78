/**
 * The stream's per-connection topic quota is the workspace's (`stream_subscriptions_per_socket`, settable per
 * workspace), under the server's ceiling (AGENTOPS_STREAM_MAX_SUBSCRIPTIONS): whichever is lower refuses.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { startTestServer, type TestServer } from '../support/server.js'

interface Message {
  type: string
  topic?: string
  error?: { code: string; detail: Record<string, unknown> }
}

describe('stream topics per connection, per workspace', () => {
  let t: TestServer
  beforeAll(async () => {
    t = await startTestServer({ config: { streamMaxSubscriptions: 3 } })
  })
  afterAll(() => t.close())

  const refusalsFor = async (token: string): Promise<Message[]> => {
    const ws = new WebSocket(`${t.baseUrl.replace(/^http/, 'ws')}/v1/stream`, {
      headers: { authorization: `Bearer ${token}` },
    })
    const got: Message[] = []
    ws.on('message', (d) => got.push(JSON.parse(d.toString()) as Message))
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve())
      ws.once('error', reject)
    })
    ws.send(
      JSON.stringify({
        type: 'subscribe',
        topics: ['connector:a', 'connector:b', 'connector:c', 'connector:d'],
      }),
    )
    const settled = () => got.filter((m) => m.type === 'subscribed' || m.type === 'error')
    await expect.poll(() => settled().length, { timeout: 5_000 }).toBe(4)
    await new Promise<void>((resolve) => {
      ws.once('close', () => resolve())
      ws.close()
    })
    return got.filter((m) => m.type === 'error')
  }

  it("refuses past the workspace's own quota when it is below the server's ceiling", async () => {
    const { token } = await t.createKey({ quotas: { stream_subscriptions_per_socket: 2 } })
    const refused = await refusalsFor(token)
    expect(refused.map((m) => m.topic)).toEqual(['connector:c', 'connector:d'])
    expect(refused[0]?.error?.detail).toEqual({ quota: 'stream_subscriptions_per_socket', limit: 2, used: 2 })
  })

  it("keeps the server's ceiling when the workspace's quota is higher", async () => {
    const { token } = await t.createKey({ quotas: { stream_subscriptions_per_socket: 50 } })
    const refused = await refusalsFor(token)
    expect(refused.map((m) => m.topic)).toEqual(['connector:d'])
    expect(refused[0]?.error?.detail).toEqual({ quota: 'stream_subscriptions_per_socket', limit: 3, used: 3 })
  })
})
