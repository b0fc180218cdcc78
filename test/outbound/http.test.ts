import type { LookupAddress } from 'node:dns'
import { getEventListeners } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { OutboundPost } from '../../src/domain/outbound.js'
import { createOutboundHttp, type Resolve } from '../../src/outbound/http.js'
import { parsePrivateTargets } from '../../src/outbound/private-targets.js'
import { listenOnTestPort } from '../support/ports.js'
import { ANY_LOOPBACK_PORT } from '../support/private-targets.js'

interface Target {
  server: Server
  port: number
  hits: string[]
  /** Answers the next request with this status and headers (default 200 `{"ok":true}`). */
  next?: { status: number; headers?: Record<string, string>; body?: string }
}

async function startTarget(): Promise<Target> {
  const target: Target = { server: createServer(), port: 0, hits: [] }
  target.server.on('request', (req, res) => {
    req.resume()
    req.on('end', () => {
      target.hits.push(req.url ?? '')
      const answer = target.next ?? { status: 200, body: '{"ok":true}' }
      target.next = undefined
      res.writeHead(answer.status, answer.headers).end(answer.body ?? '')
    })
  })
  await listenOnTestPort(target.server)
  target.port = (target.server.address() as AddressInfo).port
  return target
}

const v4 = (address: string): LookupAddress => ({ address, family: 4 })

function post(url: string, extra: Partial<OutboundPost> = {}): OutboundPost {
  return { url, headers: {}, body: '{}', timeoutMs: 2_000, maxAnswerBytes: 1024, ...extra }
}

describe('the outbound HTTP port', () => {
  let a: Target
  let b: Target
  beforeAll(async () => {
    a = await startTarget()
    b = await startTarget()
  })
  afterEach(() => {
    a.hits.length = 0
    b.hits.length = 0
  })
  afterAll(async () => {
    for (const t of [a, b]) await new Promise((r) => t.server.close(r))
  })

  it('refuses literal private addresses without connecting, in every spelling', async () => {
    const strict = createOutboundHttp()
    for (const host of ['127.0.0.1', '[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '[::1]', '0.0.0.0']) {
      const answer = await strict.post(post(`http://${host}:${a.port}/x`))
      expect(answer, host).toMatchObject({ ok: false, failure: 'private_address' })
    }
    expect(a.hits).toEqual([])
  })

  it('refuses a name that resolves to a private address, checked on the answer it connects to', async () => {
    const lookups: string[] = []
    const resolve: Resolve = async (name) => {
      lookups.push(name)
      return [v4('127.0.0.1')]
    }
    const strict = createOutboundHttp({ resolve })
    const answer = await strict.post(post(`http://tool.example:${a.port}/x`))
    expect(answer).toMatchObject({ ok: false, failure: 'private_address' })
    expect(lookups).toEqual(['tool.example'])
    expect(a.hits).toEqual([])
  })

  it('refuses a name when any of its answers is private, even after a public one', async () => {
    const resolve: Resolve = async () => [v4('93.184.216.34'), v4('100.64.0.1')]
    const strict = createOutboundHttp({ resolve })
    const answer = await strict.post(post(`http://mixed.example:${a.port}/x`))
    expect(answer).toMatchObject({
      ok: false,
      failure: 'private_address',
      message: expect.stringContaining('100.64.0.1'),
    })
  })

  it('resolves once per connection and connects to the address it checked: a rebinding answer reaches no new connection', async () => {
    // Here 127.0.0.1 stands for "public" and 10/8 for "private", so the test needs no traffic off this host.
    const answers = [[v4('127.0.0.1')], [v4('10.0.0.1')]]
    let lookups = 0
    const resolve: Resolve = async () => answers[Math.min(lookups++, 1)] ?? []
    const guarded = createOutboundHttp({
      resolve,
      blocks: (addr) => addr.startsWith('10.'),
    })
    const answer = await guarded.post(post(`http://rebind.example:${a.port}/once`))
    expect(answer).toMatchObject({ ok: true, status: 200 })
    expect(lookups).toBe(1)
    // The connection kept alive goes on to the address checked when it was made, with no look-up of its own; this
    // answer closes it.
    a.next = { status: 200, headers: { connection: 'close' }, body: '{}' }
    expect(await guarded.post(post(`http://rebind.example:${a.port}/again`))).toMatchObject({ ok: true })
    expect(lookups).toBe(1)
    expect(a.hits).toEqual(['/once', '/again'])
    // The next connection sees the rebound (private) answer and is refused before it connects.
    const second = await guarded.post(post(`http://rebind.example:${a.port}/twice`))
    expect(second).toMatchObject({ ok: false, failure: 'private_address' })
    expect(lookups).toBe(2)
    expect(a.hits).toEqual(['/once', '/again'])
  })

  it('refuses localhost through the system resolver', async () => {
    const strict = createOutboundHttp()
    const answer = await strict.post(post(`http://localhost:${a.port}/x`))
    expect(answer).toMatchObject({ ok: false, failure: 'private_address' })
    expect(a.hits).toEqual([])
  })

  it('never follows a redirect: the 3xx is the answer and its Location is not called', async () => {
    const open = createOutboundHttp({ privateTargets: ANY_LOOPBACK_PORT })
    for (const status of [301, 302, 303, 307, 308]) {
      a.next = { status, headers: { location: `http://127.0.0.1:${b.port}/internal` } }
      const answer = await open.post(post(`http://127.0.0.1:${a.port}/hop`))
      expect(answer, String(status)).toMatchObject({ ok: true, status })
    }
    expect(b.hits).toEqual([])
  })

  it('reaches private addresses when the operator lists them, and reads at most maxAnswerBytes', async () => {
    const open = createOutboundHttp({ privateTargets: ANY_LOOPBACK_PORT })
    expect(await open.post(post(`http://127.0.0.1:${a.port}/ok`))).toEqual({
      ok: true,
      status: 200,
      body: '{"ok":true}',
      truncated: false,
      // The connection is kept alive for the next call to the same host and port.
      headers: expect.objectContaining({ connection: 'keep-alive' }),
    })
    a.next = { status: 200, body: 'x'.repeat(5000) }
    const big = await open.post(post(`http://127.0.0.1:${a.port}/big`, { maxAnswerBytes: 100 }))
    expect(big).toMatchObject({ ok: true, status: 200, truncated: true })
    expect(big.ok && big.body.length).toBe(100)
  })

  it('names the failure: time-out, abort, unreachable, invalid URL', async () => {
    const open = createOutboundHttp({ privateTargets: ANY_LOOPBACK_PORT })
    const hang = createServer(() => {})
    await listenOnTestPort(hang)
    const hangPort = (hang.address() as AddressInfo).port
    try {
      expect(await open.post(post(`http://127.0.0.1:${hangPort}/`, { timeoutMs: 100 }))).toMatchObject({
        ok: false,
        failure: 'timeout',
      })
      const aborted = new AbortController()
      aborted.abort()
      expect(
        await open.post(post(`http://127.0.0.1:${hangPort}/`, { signal: aborted.signal })),
      ).toMatchObject({ ok: false, failure: 'aborted' })
    } finally {
      hang.closeAllConnections()
      await new Promise((r) => hang.close(r))
    }
    expect(await open.post(post(`http://127.0.0.1:${hangPort}/`))).toMatchObject({
      ok: false,
      failure: 'unreachable',
    })
    expect(await open.post(post('not a url'))).toMatchObject({ ok: false, failure: 'invalid_url' })
    expect(await open.post(post('ftp://127.0.0.1/'))).toMatchObject({ ok: false, failure: 'invalid_url' })
  })

  it('tells registration which URLs it will never call', () => {
    const strict = createOutboundHttp()
    expect(strict.refusal(new URL('http://[::ffff:127.0.0.1]/'))).toMatch(/private/)
    expect(strict.refusal(new URL('http://100.64.1.1/'))).toMatch(/private/)
    expect(strict.refusal(new URL('http://api.localhost/'))).toMatch(/private/)
    expect(strict.refusal(new URL('https://hooks.example.com/'))).toBeNull()
    expect(
      createOutboundHttp({ privateTargets: ANY_LOOPBACK_PORT }).refusal(new URL('http://127.0.0.1/')),
    ).toBeNull()
  })

  it('reaches a listed host:port only: another port of the same host, or another spelling of a listed name, is refused', async () => {
    const listed = createOutboundHttp({
      privateTargets: parsePrivateTargets(`127.0.0.1:${a.port}`, 'TEST'),
    })
    expect(await listed.post(post(`http://127.0.0.1:${a.port}/listed`))).toMatchObject({
      ok: true,
      status: 200,
    })
    // The URL parser's spellings of the same address are the same host.
    expect(await listed.post(post(`http://2130706433:${a.port}/decimal`))).toMatchObject({ ok: true })
    for (const url of [
      `http://127.0.0.1:${b.port}/other-port`,
      `http://localhost:${a.port}/a-name-for-it`,
      `http://[::ffff:127.0.0.1]:${a.port}/mapped`,
    ]) {
      expect(await listed.post(post(url)), url).toMatchObject({ ok: false, failure: 'private_address' })
    }
    expect(a.hits).toEqual(['/listed', '/decimal'])
    expect(b.hits).toEqual([])
    expect(listed.refusal(new URL(`http://127.0.0.1:${a.port}/`))).toBeNull()
    expect(listed.refusal(new URL(`http://127.0.0.1:${b.port}/`))).toMatch(/private/)
  })

  it('never reaches link-local or metadata addresses, even listed or behind a listed name', async () => {
    const resolve: Resolve = async () => [v4('169.254.169.254')]
    const everything = { allows: () => true }
    const listed = createOutboundHttp({ privateTargets: everything, resolve })
    for (const url of [
      'http://169.254.169.254/latest/meta-data/',
      'http://[::ffff:169.254.169.254]/',
      'http://[fe80::1]/',
      'http://100.100.100.200/',
      'http://[fd00:ec2::254]/',
      'http://metadata.internal/computeMetadata/v1/',
    ]) {
      expect(await listed.post(post(url, { timeoutMs: 500 })), url).toMatchObject({
        ok: false,
        failure: 'private_address',
      })
      if (!url.includes('metadata.internal')) expect(listed.refusal(new URL(url)), url).toMatch(/link-local/)
    }
  })

  it('ends every call in flight under one signal when it aborts, with one listener on it', async () => {
    const open = createOutboundHttp({ privateTargets: ANY_LOOPBACK_PORT })
    const hang = createServer(() => {})
    await listenOnTestPort(hang)
    const hangPort = (hang.address() as AddressInfo).port
    try {
      const shutdown = new AbortController()
      const calls = Array.from({ length: 20 }, (_, i) =>
        open.post(post(`http://127.0.0.1:${hangPort}/${i}`, { signal: shutdown.signal, timeoutMs: 10_000 })),
      )
      expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(1)
      // A call that ends on its own leaves nothing behind for the abort.
      expect(
        await open.post(post(`http://127.0.0.1:${a.port}/done`, { signal: shutdown.signal })),
      ).toMatchObject({
        ok: true,
      })
      shutdown.abort()
      const answers = await Promise.all(calls)
      expect(answers.every((answer) => !answer.ok && answer.failure === 'aborted')).toBe(true)
    } finally {
      hang.closeAllConnections()
      await new Promise((r) => hang.close(r))
    }
  })

  it('checks a literal address against the guard once, then remembers the verdict', async () => {
    const checked: string[] = []
    const guarded = createOutboundHttp({
      blocks: (addr) => {
        checked.push(addr)
        return addr.startsWith('10.')
      },
    })
    for (let i = 0; i < 3; i++) {
      expect(await guarded.post(post('http://10.0.0.1/x', { timeoutMs: 500 }))).toMatchObject({
        ok: false,
        failure: 'private_address',
      })
      expect(await guarded.post(post(`http://127.0.0.1:${a.port}/public-here`))).toMatchObject({ ok: true })
    }
    expect(checked.filter((addr) => addr === '10.0.0.1')).toHaveLength(1)
    expect(checked.filter((addr) => addr === '127.0.0.1')).toHaveLength(1)
    expect(a.hits).toEqual(['/public-here', '/public-here', '/public-here'])
  })
})
