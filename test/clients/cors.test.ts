/** CORS (`AGENTOPS_CORS_ORIGINS`): off by default; when on, preflights are answered before authentication. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseCorsOrigins } from '../../src/config.js'
import { startTestServer, type TestServer } from '../support/server.js'

const APP = 'https://app.example.test'
const preflight = (origin: string) => ({
  method: 'OPTIONS',
  headers: {
    origin,
    'access-control-request-method': 'POST',
    'access-control-request-headers': 'authorization, content-type, idempotency-key',
  },
})

describe('CORS', () => {
  let on: TestServer
  let off: TestServer
  let token: string
  beforeAll(async () => {
    ;[on, off] = await Promise.all([startTestServer({ config: { corsOrigins: [APP] } }), startTestServer()])
    token = (await on.createKey({ scopes: ['*'] })).token
  })
  afterAll(async () => {
    await Promise.all([on.close(), off.close()])
  })

  it('answers an allowed preflight without a key, naming the headers a client sends', async () => {
    const res = await fetch(`${on.baseUrl}/v1/agents/agt_1/runs`, preflight(APP))
    expect(res.status).toBe(204)
    expect(res.headers.get('access-control-allow-origin')).toBe(APP)
    expect(res.headers.get('access-control-allow-methods')).toContain('POST')
    expect(res.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('idempotency-key')
    expect(res.headers.get('access-control-allow-credentials')).toBeNull()
  })

  it('lets an allowed origin read the answer and its headers', async () => {
    const res = await fetch(`${on.baseUrl}/v1/tools`, {
      headers: { origin: APP, authorization: `Bearer ${token}` },
    })
    expect(res.status).toBe(200)
    expect(res.headers.get('access-control-allow-origin')).toBe(APP)
    expect(res.headers.get('access-control-expose-headers')).toContain('X-Request-Id')
    expect(res.headers.get('access-control-expose-headers')).toContain('RateLimit')
    // An error answer is readable too, so the browser app sees the envelope rather than an opaque failure.
    const denied = await fetch(`${on.baseUrl}/v1/tools`, { headers: { origin: APP } })
    expect(denied.status).toBe(401)
    expect(denied.headers.get('access-control-allow-origin')).toBe(APP)
  })

  it('gives other origins no CORS grant', async () => {
    const res = await fetch(`${on.baseUrl}/v1/tools`, preflight('https://evil.example.test'))
    expect(res.headers.get('access-control-allow-origin')).toBeNull()
  })

  it('is off by default: no CORS headers, and a preflight is treated like any unauthenticated request', async () => {
    const res = await fetch(`${off.baseUrl}/v1/tools`, preflight(APP))
    expect(res.headers.get('access-control-allow-origin')).toBeNull()
    expect(res.status).toBe(401)
  })

  it('parses AGENTOPS_CORS_ORIGINS and refuses values that are not origins', () => {
    expect(parseCorsOrigins(undefined)).toEqual([])
    expect(parseCorsOrigins(' https://a.test , http://localhost:5173 ')).toEqual([
      'https://a.test',
      'http://localhost:5173',
    ])
    expect(parseCorsOrigins('*')).toEqual(['*'])
    expect(() => parseCorsOrigins('https://a.test/path')).toThrow(/not an origin/)
    expect(() => parseCorsOrigins('a.test')).toThrow(/not an origin/)
    expect(() => parseCorsOrigins('ftp://a.test')).toThrow(/not an origin/)
  })
})
