import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { deflateSync, gzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { listenOnTestPort } from '../../test/support/ports.js'
import { BudgetExceeded, HttpClient, RequestBudget, TransportError } from '../src/http.js'
import { LoopWatch, loopWatch } from '../src/loop-watch.js'

let server: Server
let baseUrl: string
let received = 0
const dropped = new Set<string>()

beforeAll(async () => {
  server = createServer((req, res) => {
    received++
    if (req.url === '/answer-in-100-ms') {
      setTimeout(() => res.end('{}'), 100)
      return
    }
    if (req.url === '/gzip' || req.url === '/deflate') {
      const body = Buffer.from(JSON.stringify({ accepted: req.headers['accept-encoding'] ?? null }))
      res.writeHead(200, [
        ['content-type', 'application/json'],
        ['content-encoding', req.url.slice(1)],
        ['x-twice', 'a'],
        ['X-Twice', 'b'],
      ])
      res.end(req.url === '/gzip' ? gzipSync(body) : deflateSync(body))
      return
    }
    if (req.url === '/length') {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(
        JSON.stringify({
          length: req.headers['content-length'] ?? null,
          chunked: req.headers['transfer-encoding'] ?? null,
        }),
      )
      return
    }
    if (req.url === '/slow') {
      setTimeout(() => res.end('late'), 2000)
      return
    }
    // Closes the connection without an answer to the first request of each path: a kept-alive socket the server
    // dropped as the request went out.
    if (req.url?.startsWith('/drop-once') && !dropped.has(req.url)) {
      dropped.add(req.url)
      req.socket.destroy()
      return
    }
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ auth: req.headers.authorization ?? null }))
  })
  await listenOnTestPort(server)
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  server.closeAllConnections()
  await new Promise<void>((r) => server.close(() => r()))
})

describe('HttpClient', () => {
  it('enforces the request budget before sending anything', async () => {
    const budget = new RequestBudget(2)
    const http = new HttpClient({ baseUrl, token: 'aok_secret_token', budget, timeoutMs: 10_000 })
    const before = received
    await http.get('/a')
    await http.withToken('other').get('/b')
    await expect(http.get('/c')).rejects.toBeInstanceOf(BudgetExceeded)
    expect(received - before).toBe(2)
    expect(budget.used).toBe(2)
  })

  it('times out every request and reports it as a transport error', async () => {
    const http = new HttpClient({ baseUrl, budget: new RequestBudget(5), timeoutMs: 150 })
    const err = await http.get('/slow').catch((e: unknown) => e)
    expect(err).toBeInstanceOf(TransportError)
    expect((err as TransportError).exchange.error).toMatch(/timed out after 150 ms/)
  })

  it("says so when a timeout is this process's fault: its own event loop was blocked past the deadline", async () => {
    const release = loopWatch.acquire()
    try {
      const http = new HttpClient({ baseUrl, budget: new RequestBudget(5), timeoutMs: 300 })
      // The request is out and answered within 100 ms, but this process blocks its loop past the deadline before
      // reading the answer: the deadline's timer runs first when the loop comes back.
      const pending = http.get('/answer-in-100-ms').catch((e: unknown) => e)
      await new Promise<void>((resolve) =>
        setTimeout(() => {
          const until = performance.now() + 1200
          while (performance.now() < until) {
            // a synchronous stretch, as a starved machine gives
          }
          resolve()
        }, 50),
      )
      const err = await pending
      expect(err).toBeInstanceOf(TransportError)
      expect((err as TransportError).exchange.error).toMatch(
        /timed out after 300 ms \(the suite's own event loop was blocked for 1[0-9]{3} ms meanwhile/,
      )
      // A timeout with the loop free says nothing of the machine.
      const late = await http.get('/slow').catch((e: unknown) => e)
      expect((late as TransportError).exchange.error).toBe('timed out after 300 ms')
    } finally {
      release()
    }
  })

  it('says nothing of the machine when no run watches the loop (its history is unknown)', () => {
    const watch = new LoopWatch()
    expect(watch.longestBlockSince(performance.now() - 5000)).toBe(0)
  })

  it('sends the bearer token, never records it whole, and lets observers see each exchange', async () => {
    const seen: string[] = []
    const http = new HttpClient({
      baseUrl,
      token: 'aok_secret_token',
      budget: new RequestBudget(5),
      timeoutMs: 1000,
      observers: [(x) => seen.push(x.requestHeaders.authorization ?? '')],
    })
    const res = await http.get('/x')
    expect(res.body).toEqual({ auth: 'Bearer aok_secret_token' })
    expect(seen[0]).not.toContain('secret_token')
    const none = await http.get('/x', { token: null })
    expect(none.body).toEqual({ auth: null })
  })

  it('sends again, once, what it may repeat when the connection closed before any answer', async () => {
    const http = new HttpClient({ baseUrl, budget: new RequestBudget(20), timeoutMs: 1000 })
    expect((await http.get('/drop-once-get')).status).toBe(200)
    const keyed = await http.post('/drop-once-keyed', {}, { headers: { 'Idempotency-Key': 'k1' } })
    expect(keyed.status).toBe(200)
    // A POST without a key may have been processed: it is not repeated.
    const err = await http.post('/drop-once-plain', {}).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(TransportError)
  })

  it('reports an unreachable address as a transport error', async () => {
    const http = new HttpClient({
      baseUrl: 'http://127.0.0.1:1',
      budget: new RequestBudget(5),
      timeoutMs: 1000,
    })
    await expect(http.get('/')).rejects.toBeInstanceOf(TransportError)
  })

  it('reads compressed bodies as their content-encoding says and joins a repeated header, as fetch does', async () => {
    const http = new HttpClient({ baseUrl, budget: new RequestBudget(5), timeoutMs: 1000 })
    for (const path of ['/gzip', '/deflate']) {
      const res = await http.get(path)
      expect(res.body).toEqual({ accepted: 'gzip, deflate' })
      expect(res.headers['content-encoding']).toBe(path.slice(1))
      expect(res.headers['x-twice']).toBe('a, b')
    }
  })

  it('sends a body with its length, and a POST without one as an empty body, never chunked', async () => {
    const http = new HttpClient({ baseUrl, budget: new RequestBudget(5), timeoutMs: 1000 })
    expect((await http.post('/length', { a: 'é' })).body).toEqual({ length: '10', chunked: null })
    expect((await http.post('/length')).body).toEqual({ length: '0', chunked: null })
    expect((await http.get('/length')).body).toEqual({ length: null, chunked: null })
  })

  it("ends the requests in flight when the run's signal aborts", async () => {
    const run = new AbortController()
    const http = new HttpClient({
      baseUrl,
      budget: new RequestBudget(5),
      timeoutMs: 5000,
      signal: run.signal,
    })
    const pending = http.get('/slow').catch((e: unknown) => e)
    setTimeout(() => run.abort(), 50)
    const err = await pending
    expect(err).toBeInstanceOf(TransportError)
    expect((err as TransportError).exchange.error).toMatch(/aborted/)
    expect((err as TransportError).exchange.durationMs).toBeLessThan(1500)
  })

  it("closes an idle connection before the server's announced keep-alive timeout, and waits out a slow answer", async () => {
    // Keep-Alive: timeout=2 → idle connections closed after 1 s here, before the server closes them at 2 s.
    const connections: string[] = []
    const own = createServer((req, res) => {
      setTimeout(() => res.end('{}'), req.url === '/slow' ? 4500 : 0)
    })
    own.keepAliveTimeout = 2000
    own.on('connection', (socket) => connections.push(`${socket.remotePort}`))
    await listenOnTestPort(own)
    try {
      const url = `http://127.0.0.1:${(own.address() as AddressInfo).port}`
      const http = new HttpClient({ baseUrl: url, budget: new RequestBudget(5), timeoutMs: 10_000 })
      expect((await http.get('/a')).status).toBe(200)
      expect((await http.get('/b')).status).toBe(200)
      expect(connections).toHaveLength(1)
      await new Promise((resolve) => setTimeout(resolve, 1300))
      expect((await http.post('/c', {})).status).toBe(200)
      expect(connections).toHaveLength(2)
      // Longer than the idle limit while in use: answered, not cut.
      expect((await http.get('/slow')).status).toBe(200)
    } finally {
      own.closeAllConnections()
      await new Promise<void>((r) => own.close(() => r()))
    }
  }, 20_000)
})
