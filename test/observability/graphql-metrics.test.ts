import { type Client, createClient } from 'graphql-ws'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { metricValue } from '../graphql/helpers.js'
import { startTestServer, type TestServer } from '../support/server.js'

let t: TestServer
let token: string

beforeAll(async () => {
  t = await startTestServer()
  token = (await t.createKey({ scopes: ['*'] })).token
})
afterAll(() => t.close())

function client(): Client {
  return createClient({
    url: `${t.baseUrl.replace('http', 'ws')}/v1/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: { authorization: `Bearer ${token}` },
    retryAttempts: 0,
    lazy: true,
  })
}

/** Subscribes and ignores what comes: only the server's count of live subscriptions matters here. */
function subscribe(c: Client, query: string): () => void {
  return c.subscribe({ query }, { next: () => {}, error: () => {}, complete: () => {} })
}

/**
 * `agentops_socket_subscriptions{transport="graphql",topic}` once it reads `want`, or its last reading after 5 s
 * (the server counts a subscribe or a complete when it handles the message, a moment after the client sends it).
 */
async function gaugeReaches(topic: string, want: number): Promise<number | undefined> {
  const labels = { transport: 'graphql', topic }
  let value = await metricValue(t, 'agentops_socket_subscriptions', labels)
  for (let i = 0; i < 50 && value !== want; i++) {
    await new Promise((r) => setTimeout(r, 100))
    value = await metricValue(t, 'agentops_socket_subscriptions', labels)
  }
  return value
}

describe('agentops_socket_subscriptions for graphql-ws', () => {
  it('reads 0 for a root field whose subscriptions ended, not its last count', async () => {
    const c = client()
    const stopRuns = subscribe(c, 'subscription { runEvents { seq } }')
    subscribe(c, 'subscription { connectorRecords(connector_id: "crm") { seq } }')
    expect(await gaugeReaches('runEvents', 1)).toBe(1)
    expect(await gaugeReaches('connectorRecords', 1)).toBe(1)

    // Completed by the client: the field's series stays, at 0, while the other field's subscription lives on.
    stopRuns()
    expect(await gaugeReaches('runEvents', 0)).toBe(0)
    expect(
      await metricValue(t, 'agentops_socket_subscriptions', {
        transport: 'graphql',
        topic: 'connectorRecords',
      }),
    ).toBe(1)

    // The socket closed: its last subscription ended with it.
    await c.dispose()
    expect(await gaugeReaches('connectorRecords', 0)).toBe(0)
    expect(await gaugeReaches('runEvents', 0)).toBe(0)
  })
})
