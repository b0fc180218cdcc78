import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { listenOnTestPort } from '../../test/support/ports.js'
import { HttpClient, RequestBudget } from '../src/http.js'
import { exhaustedFor, Pacer, retryAfter } from '../src/pacing.js'

describe('reading rate-limit headers', () => {
  it('finds a used-up quota in every header family', () => {
    expect(exhaustedFor({ ratelimit: '"burst";r=0;t=7, "hourly";r=900;t=3000' })).toBe(7)
    expect(exhaustedFor({ ratelimit: '"burst";r=3;t=7, "hourly";r=900;t=3000' })).toBeUndefined()
    expect(exhaustedFor({ ratelimit: 'limit=100, remaining=0, reset=12' })).toBe(12)
    expect(exhaustedFor({ 'ratelimit-remaining': '0', 'ratelimit-reset': '5' })).toBe(5)
    expect(exhaustedFor({ 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '9' })).toBe(9)
    expect(
      exhaustedFor({ 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '1700000030' }, 1_700_000_000_000),
    ).toBe(30)
    expect(exhaustedFor({ 'x-ratelimit-remaining': '4', 'x-ratelimit-reset': '9' })).toBeUndefined()
    expect(exhaustedFor({})).toBeUndefined()
    // Every window the rate-limit checks read, one per window in the name too, and the declared names.
    expect(exhaustedFor({ 'x-ratelimit-burst-remaining': '0', 'x-ratelimit-burst-reset': '4' })).toBe(4)
    const declared = {
      burst: { remaining: 'q-a', reset: 'q-a-t' },
      sustained: { remaining: 'q-b', reset: 'q-b-t' },
    }
    expect(exhaustedFor({ 'q-a': '0', 'q-a-t': '3', 'q-b': '10', 'q-b-t': '60' }, Date.now(), declared)).toBe(
      3,
    )
  })

  it('reads Retry-After as seconds or an HTTP date', () => {
    expect(retryAfter({ 'retry-after': '3' })).toBe(3)
    const now = Date.parse('2026-01-01T00:00:00Z')
    expect(retryAfter({ 'retry-after': 'Thu, 01 Jan 2026 00:00:02 GMT' }, now)).toBe(2)
    expect(retryAfter({})).toBeUndefined()
  })
})

describe('pacing a client', () => {
  let server: Server
  let base: string
  const seen: number[] = []

  beforeAll(async () => {
    // A deployment with a quota of 2 per second for "std": the second answer says the quota is used up, and a
    // request that comes too early gets a 429 with Retry-After.
    let windowStart = 0
    let used = 0
    server = createServer((req, res) => {
      const now = Date.now()
      seen.push(now)
      if (now - windowStart >= 1000) {
        windowStart = now
        used = 0
      }
      used++
      const left = Math.max(0, 2 - used)
      const reset = String(Math.max(1, Math.ceil((windowStart + 1000 - now) / 1000)))
      if (used > 2) {
        res.writeHead(429, { 'content-type': 'application/json', 'retry-after': reset }).end('{}')
        return
      }
      res
        .writeHead(200, {
          'content-type': 'application/json',
          'x-ratelimit-remaining': String(left),
          'x-ratelimit-reset': reset,
        })
        .end(req.headers.authorization === 'Bearer std' ? '{"ok":true}' : '{}')
    })
    await listenOnTestPort(server)
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })

  afterAll(async () => {
    server.closeAllConnections()
    await new Promise<void>((r) => server.close(() => r()))
  })

  it('waits for the reset the headers announce, so no request of a paced token gets a 429', async () => {
    const pacer = new Pacer({ paceMaxWait: 5 })
    const http = new HttpClient({
      baseUrl: base,
      token: 'std',
      budget: new RequestBudget(50),
      timeoutMs: 5000,
      pacer,
    })
    const statuses: number[] = []
    for (let i = 0; i < 5; i++) statuses.push((await http.get('/v1/tools')).status)
    expect(statuses).toEqual([200, 200, 200, 200, 200])
    expect(pacer.waitedMs).toBeGreaterThan(500)
  })

  it('hands back the first 429 as it came when the request asks for it (retry429: false)', async () => {
    // A deployment that refuses every other request: a retry after Retry-After would be served.
    let n = 0
    const flaky = createServer((_req, res) => {
      n++
      if (n % 2 === 1)
        res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' }).end('{}')
      else res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
    await listenOnTestPort(flaky)
    try {
      const http = new HttpClient({
        baseUrl: `http://127.0.0.1:${(flaky.address() as AddressInfo).port}`,
        token: 'std',
        budget: new RequestBudget(10),
        timeoutMs: 5000,
        pacer: new Pacer({ paceMaxWait: 5 }),
      })
      expect((await http.get('/v1/tools', { retry429: false })).status).toBe(429)
      expect(n).toBe(1)
      n = 0
      expect((await http.get('/v1/tools')).status).toBe(200)
      expect(n).toBe(2)
    } finally {
      flaky.closeAllConnections()
      await new Promise<void>((r) => flaky.close(() => r()))
    }
  })

  it('never paces an exempt token: the rate-limit checks need their 429', async () => {
    const pacer = new Pacer({ paceMaxWait: 5 })
    const http = new HttpClient({
      baseUrl: base,
      token: 'lim',
      budget: new RequestBudget(50),
      timeoutMs: 5000,
      pacer,
    })
    const { fingerprint } = await import('../src/http.js')
    pacer.exemptToken(fingerprint('lim'))
    const statuses: number[] = []
    for (let i = 0; i < 4; i++) statuses.push((await http.get('/v1/tools')).status)
    expect(statuses).toContain(429)
    expect(pacer.waitedMs).toBe(0)
  })

  it('does not wait longer than --pace-max-wait', async () => {
    const pacer = new Pacer({ paceMaxWait: 0 })
    expect(pacer.after('fp', 429, { 'retry-after': '3' })).toBe(false)
    await pacer.before('fp')
    expect(pacer.waitedMs).toBe(0)
  })
})
