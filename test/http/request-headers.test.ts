/**
 * Headers the hot path reads from Node's raw header list instead of the request's Fetch Headers (src/http/node-io.ts)
 * mean what Fetch's `Headers.get` makes of them: repeated fields joined by ", ", names in any case. Node's own
 * `req.headers` would differ (it keeps only the first Authorization), so these are sent as separate raw fields.
 * And the cached run read, checked against its contract route outside @hono/zod-openapi's validator, still refuses
 * a malformed path before it looks at scopes, as every typed route does.
 */
import { request } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.js'

let t: TestServer
let token: string

beforeAll(async () => {
  t = await startTestServer()
  token = (await t.createKey({ scopes: ['*'] })).token
})
afterAll(() => t.close())

/** A GET with the header fields exactly as given (repeats kept as separate lines): status and answer headers. */
function rawGet(
  path: string,
  fields: string[],
): Promise<{ status: number; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const url = new URL(path, t.baseUrl)
    // Given as a raw list, the fields are sent as they are: Host too is the caller's to send.
    const headers = ['Host', url.host, ...fields]
    const req = request(url, { method: 'GET', headers }, (res) => {
      res.resume()
      res.once('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }))
    })
    req.once('error', reject)
    req.end()
  })
}

describe('request headers read from Node', () => {
  it('joins a repeated Authorization like Fetch does, so two bearer fields are refused, not the first taken', async () => {
    const once = await rawGet('/v1/agents', ['Authorization', `Bearer ${token}`])
    expect(once.status).toBe(200)
    const twice = await rawGet('/v1/agents', [
      'Authorization',
      `Bearer ${token}`,
      'authorization',
      `Bearer ${token}`,
    ])
    expect(twice.status).toBe(401)
  })

  it('keeps a well-formed X-Request-Id sent in any case, and replaces a repeated one (joined, it is not well formed)', async () => {
    const kept = await rawGet('/v1/agents', ['Authorization', `Bearer ${token}`, 'x-REQUEST-id', 'trace.1:a'])
    expect(kept.headers['x-request-id']).toBe('trace.1:a')
    const repeated = await rawGet('/v1/agents', [
      'Authorization',
      `Bearer ${token}`,
      'X-Request-Id',
      'one',
      'X-Request-Id',
      'two',
    ])
    expect(repeated.headers['x-request-id']).toMatch(/^req_[0-9a-z]{26}$/)
  })

  it('refuses a malformed run id with 400 before the scope check, like every typed route', async () => {
    const readsNothing = (await t.createKey({ scopes: ['agents:read'] })).token
    const path = `/v1/runs/run_${'x'.repeat(70)}`
    const tooLong = await t.request('GET', path, { token: readsNothing })
    expect(tooLong.status).toBe(400)
    expect(tooLong.body.error.code).toBe('invalid_request')
    expect(tooLong.body.error.detail.fields).toEqual(['run_id'])
    const wellFormed = await t.request('GET', '/v1/runs/run_00000000000000000000000000', {
      token: readsNothing,
    })
    expect(wellFormed.status).toBe(403)
  })
})
