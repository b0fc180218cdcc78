import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { WebSocket } from 'ws'
import type { RequestObservation, SocketTransport } from '../../src/surface/observe.js'
import { startTestServer, type TestServer } from '../support/server.js'

/** The surface's observation hook: one report per HTTP request (REST and GraphQL), one per socket open/close. */
describe('the surface observer', () => {
  let t: TestServer
  let token: string
  const requests: RequestObservation[] = []
  const sockets: [SocketTransport, 'open' | 'close'][] = []
  beforeAll(async () => {
    t = await startTestServer({
      observer: {
        requestStarted: () => {},
        request: (o) => requests.push(o),
        socket: (transport, event) => sockets.push([transport, event]),
      },
    })
    token = (await t.createKey()).token
  })
  afterAll(() => t.close())

  /** The reports of requests carrying this request id. */
  const reportsOf = (id: string) => requests.filter((r) => r.requestId === id)

  it('reports each request once with its route template, status and caller, never the raw path', async () => {
    const res = await t.request('GET', '/v1/runs/run_does_not_exist', {
      token,
      headers: { 'x-request-id': 'obs-1' },
    })
    expect(res.status).toBe(404)
    const [report, ...more] = reportsOf('obs-1')
    expect(more).toEqual([])
    expect(report).toMatchObject({ method: 'GET', route: '/v1/runs/{run_id}', status: 404 })
    expect(report?.workspaceId).toMatch(/^ws_/)
    expect(report?.keyId).toMatch(/^key_/)
    expect(report?.durationMs).toBeGreaterThanOrEqual(0)
    expect(report?.errorCode).toBe('not_found')
  })

  it('reports refused credentials without a caller under the route they were for, and GraphQL like any route', async () => {
    await t.request('GET', '/v1/agents', { token: 'ak_bad', headers: { 'x-request-id': 'obs-2' } })
    // The route the request was for, not the auth middleware's `/v1/*`.
    expect(reportsOf('obs-2')).toEqual([
      expect.objectContaining({
        route: '/v1/agents',
        status: 401,
        workspaceId: undefined,
        errorCode: 'unauthenticated',
      }),
    ])
    // Outside the contract, so not through t.request (which checks answers against the document).
    await fetch(`${t.baseUrl}/v1/no/such/path`, {
      headers: { authorization: `Bearer ${token}`, 'x-request-id': 'obs-4' },
    })
    expect(reportsOf('obs-4')).toEqual([expect.objectContaining({ route: 'unmatched', status: 404 })])
    await t.request('POST', '/v1/graphql', {
      token,
      body: { query: '{ agents { data { agent_id } } }' },
      headers: { 'x-request-id': 'obs-3' },
    })
    expect(reportsOf('obs-3')).toEqual([expect.objectContaining({ route: '/v1/graphql', status: 200 })])
  })

  it('reports stream sockets opening and closing', async () => {
    const ws = new WebSocket(`${t.baseUrl.replace('http', 'ws')}/v1/stream?access_token=${token}`)
    await new Promise((resolve, reject) => {
      ws.once('open', resolve)
      ws.once('error', reject)
    })
    const closed = new Promise((resolve) => ws.once('close', resolve))
    ws.close()
    await closed
    const deadline = Date.now() + 2_000
    while (sockets.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10))
    expect(sockets).toEqual([
      ['stream', 'open'],
      ['stream', 'close'],
    ])
  })
})
