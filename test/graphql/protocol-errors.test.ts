import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { logLines } from '../support/log-lines.js'
import { startTestServer, type TestServer } from '../support/server.js'

const { logger, lines } = logLines()
let t: TestServer

beforeAll(async () => {
  t = await startTestServer({ logger })
})
afterAll(() => t.close())

describe('graphql-ws: a client that breaks the WebSocket protocol', () => {
  it('is closed with 1009 for a message over the bound, and no server error is logged', async () => {
    const { token } = await t.createKey({ scopes: ['*'] })
    const socket = new WebSocket(`${t.baseUrl.replace('http', 'ws')}/v1/graphql`, 'graphql-transport-ws', {
      headers: { authorization: `Bearer ${token}` },
    })
    await new Promise((resolve, reject) => {
      socket.once('open', resolve)
      socket.once('error', reject)
    })
    socket.on('error', () => undefined)
    const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)))
    socket.send(JSON.stringify({ type: 'connection_init', payload: { pad: 'x'.repeat(300 * 1024) } }))
    expect(await closed).toBe(1009)
    // The server's own close path has run by the time the client saw the close frame; a line logged there is in.
    await new Promise((resolve) => setTimeout(resolve, 50))
    const errors = lines
      .map((l) => JSON.parse(l) as { level: number; msg: string })
      .filter((l) => l.level >= 50)
    expect(errors).toEqual([])
  })
})
