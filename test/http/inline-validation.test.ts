/**
 * POST /v1/agents is checked against its contract route outside @hono/zod-openapi's validators (routeInput and
 * routeBody, src/surface/route-input.ts) and must answer every malformed request exactly as a typed route does. Each
 * case goes, byte for byte, to it and to POST /v1/agents/{agent_id}/tasks (a typed route with a required JSON body
 * and the same Idempotency-Key header), and the two answers' status, error code and the locations of the failing
 * fields must agree; the well-formed case must pass both checks.
 */
import { request } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.js'

let t: TestServer
let token: string
let agentId: string

beforeAll(async () => {
  t = await startTestServer()
  token = (await t.createKey({ scopes: ['*'] })).token
  const created = await t.request('POST', '/v1/agents', {
    token,
    body: { name: 'parity', behavior: 'autonomous', capabilities: [] },
  })
  expect(created.status).toBe(201)
  agentId = created.body.agent_id
})
afterAll(() => t.close())

interface Answer {
  status: number
  code: string | undefined
  locations: string[]
  /** Whether the body as a whole failed (`(root)` among the fields) rather than named fields of it. */
  root: boolean
}

/** A POST with exactly these header fields and body bytes (no Content-Type unless given; no body: Content-Length 0). */
function rawPost(path: string, fields: string[], body: string | undefined): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const url = new URL(path, t.baseUrl)
    const headers = ['Host', url.host, 'Authorization', `Bearer ${token}`, ...fields]
    headers.push('Content-Length', String(Buffer.byteLength(body ?? '')))
    const req = request(url, { method: 'POST', headers }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (d: string) => {
        text += d
      })
      res.once('end', () => {
        const parsed = text ? (JSON.parse(text) as Record<string, unknown>) : {}
        const error = parsed.error as
          | { code?: string; detail?: { issues?: { location?: string }[]; fields?: string[] } }
          | undefined
        const locations = [...new Set((error?.detail?.issues ?? []).map((i) => i.location ?? ''))]
        const root = (error?.detail?.fields ?? []).includes('(root)')
        resolve({ status: res.statusCode ?? 0, code: error?.code, locations, root })
      })
    })
    req.once('error', reject)
    req.end(body)
  })
}

const JSON_TYPE = ['Content-Type', 'application/json']

const cases: { name: string; fields: string[]; body: string | undefined; expected: number }[] = [
  { name: 'no Content-Type and no body', fields: [], body: undefined, expected: 400 },
  { name: 'a JSON Content-Type and no body', fields: JSON_TYPE, body: undefined, expected: 400 },
  {
    name: 'a non-JSON Content-Type and no body',
    fields: ['Content-Type', 'text/plain'],
    body: undefined,
    expected: 415,
  },
  {
    name: 'a JSON Content-Type with a space before its parameter',
    fields: ['Content-Type', 'application/json ; charset=utf-8'],
    body: '{}',
    expected: 415,
  },
  { name: 'a body that is not an object', fields: JSON_TYPE, body: '[]', expected: 400 },
  { name: 'a body missing what is required', fields: JSON_TYPE, body: '{}', expected: 400 },
  {
    name: 'an unknown property',
    fields: JSON_TYPE,
    body: JSON.stringify({
      name: 'x',
      behavior: 'autonomous',
      capabilities: [],
      description: 'd',
      surplus: 1,
    }),
    expected: 400,
  },
  {
    name: 'a malformed Idempotency-Key',
    fields: [...JSON_TYPE, 'Idempotency-Key', 'k'.repeat(300)],
    body: '{}',
    expected: 400,
  },
]

describe('POST /v1/agents checked outside the typed routes answers as they do', () => {
  for (const c of cases) {
    it(c.name, async () => {
      const inline = await rawPost('/v1/agents', c.fields, c.body)
      const typed = await rawPost(`/v1/agents/${agentId}/tasks`, c.fields, c.body)
      expect(inline.status).toBe(c.expected)
      expect(inline).toEqual(typed)
    })
  }

  it('accepts a well-formed body with a charset parameter and a Content-Type in any case', async () => {
    const created = await rawPost(
      '/v1/agents',
      ['content-TYPE', 'Application/JSON; charset=utf-8'],
      JSON.stringify({ name: 'ok', behavior: 'autonomous', capabilities: ['search'] }),
    )
    expect(created.status).toBe(201)
  })
})
