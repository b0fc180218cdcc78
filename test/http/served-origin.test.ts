/**
 * `/openapi.json` names the origin it was served from as its first server (so `/docs` and generators pointed at a
 * running server target that server, whatever its port or proxy), read from safe forwarded headers or `Host`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { requestOrigin } from '../../src/http/request-origin.js'
import { startTestServer, type TestServer } from '../support/server.js'

describe('the served contract names its own origin first', () => {
  let t: TestServer
  beforeAll(async () => {
    t = await startTestServer()
  })
  afterAll(() => t?.close())

  const servers = async (headers: Record<string, string> = {}) => {
    const res = await t.request('GET', '/openapi.json', { headers })
    expect(res.status).toBe(200)
    expect(res.headers.get('vary')).toMatch(/X-Forwarded-Host/)
    return res.body.servers as { url: string }[]
  }

  it('lists the address it answered on first, then the contract default', async () => {
    const list = await servers()
    expect(list[0]?.url).toBe(t.baseUrl)
    expect(list.map((s) => s.url)).toContain('http://127.0.0.1:8080')
  })

  it("follows a proxy's Forwarded and X-Forwarded-* headers", async () => {
    expect(
      (await servers({ 'x-forwarded-proto': 'https', 'x-forwarded-host': 'api.example.test' }))[0]?.url,
    ).toBe('https://api.example.test')
    expect(
      (await servers({ forwarded: 'for=1.2.3.4;proto=https;host="docs.example.test:8443", for=5.6.7.8' }))[0]
        ?.url,
    ).toBe('https://docs.example.test:8443')
  })
})

describe('requestOrigin refuses header values that are not a plain scheme and host', () => {
  const own = 'http://127.0.0.1:3000/openapi.json'
  const from = (headers: Record<string, string>) => requestOrigin(own, (name) => headers[name])

  it.each([
    ['a path', { 'x-forwarded-host': 'evil.test/steal' }],
    ['credentials', { 'x-forwarded-host': 'user:pw@evil.test' }],
    ['markup', { 'x-forwarded-host': '"><script>alert(1)</script>' }],
    ['a scheme other than http(s)', { 'x-forwarded-proto': 'javascript' }],
    ['spaces', { 'x-forwarded-host': 'evil.test extra' }],
  ])('ignores %s', (_, headers) => {
    expect(from({ host: '127.0.0.1:3000', ...headers })).toBe('http://127.0.0.1:3000')
  })

  it('takes the first hop of a list and bracketed IPv6 hosts', () => {
    expect(from({ 'x-forwarded-host': 'a.example.test, b.example.test' })).toBe('http://a.example.test')
    expect(from({ host: '[::1]:8080' })).toBe('http://[::1]:8080')
  })
})
