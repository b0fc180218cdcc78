/**
 * What every answer carries, on both ways the app is served: over Node (headers go on Node's response, answers stay
 * @hono/node-server's lightweight ones) and in process through `app.request` (headers set on the finished
 * Response). A repeated GET of one run sends the same memoised JSON text, whole and correctly framed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../src/transports.js'
import { startTestServer, type TestServer } from '../support/server.js'

let t: TestServer
let token: string
let runPath: string

beforeAll(async () => {
  t = await startTestServer()
  token = (await t.createKey({ scopes: ['*'] })).token
  const agent = await t.request('POST', '/v1/agents', {
    token,
    body: { name: 'headers', behavior: 'autonomous', capabilities: [] },
  })
  const run = await t.request('POST', `/v1/agents/${agent.body.agent_id}/runs`, {
    token,
    body: { inputs: {}, mode: 'dry_run', trace_level: 'summary' },
  })
  runPath = `/v1/runs/${run.body.run_id}`
  // A finished run, so every GET below reads the same run.
  for (let i = 0; i < 200; i++) {
    const now = await t.request('GET', runPath, { token })
    if (!['queued', 'running'].includes(now.body.status)) break
    await new Promise((r) => setTimeout(r, 10))
  }
})
afterAll(() => t.close())

type Fetcher = (path: string, headers: Record<string, string>) => Promise<Response>
const ways: [string, () => Fetcher][] = [
  ['over Node', () => (path, headers) => fetch(`${t.baseUrl}${path}`, { headers })],
  [
    'in process',
    () => {
      const app = createApp(t.services)
      return (path, headers) => Promise.resolve(app.request(path, { headers }))
    },
  ],
]

describe.each(ways)('answer headers %s', (_, make) => {
  it('sends the same run body each time, framed by its own length, with a fresh request id and the rate figures', async () => {
    const get = make()
    const answers = []
    for (let i = 0; i < 3; i++) {
      const res = await get(runPath, { authorization: `Bearer ${token}` })
      answers.push({ res, text: await res.text() })
    }
    const ids = new Set<string | null>()
    for (const { res, text } of answers) {
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toBe('application/json')
      if (res.headers.has('content-length')) {
        expect(Number(res.headers.get('content-length'))).toBe(Buffer.byteLength(text))
      }
      expect(res.headers.get('ratelimit')).toMatch(/^"burst";r=\d+;t=\d+, "hourly";r=\d+;t=\d+$/)
      expect(res.headers.get('ratelimit-policy')).toMatch(/^"burst";q=\d+;w=10, "hourly";q=\d+;w=3600$/)
      ids.add(res.headers.get('x-request-id'))
      expect(text).toBe(answers[0]?.text)
    }
    expect(ids.size).toBe(3)
    expect(JSON.parse(answers[0]?.text ?? '')).toMatchObject({ run_id: runPath.split('/').pop() })
  })

  it('puts the request id and the rate figures on errors too, and keeps a caller’s well-formed request id', async () => {
    const get = make()
    const res = await get('/v1/runs/run_00000000000000000000000000', {
      authorization: `Bearer ${token}`,
      'x-request-id': 'proxy-trace.1:2',
    })
    expect(res.status).toBe(404)
    expect(res.headers.get('x-request-id')).toBe('proxy-trace.1:2')
    expect(res.headers.get('ratelimit')).not.toBeNull()
    expect(((await res.json()) as { error: { request_id: string } }).error.request_id).toBe('proxy-trace.1:2')
  })
})
