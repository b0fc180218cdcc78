/**
 * Refuse before reading (issue 44): authentication and the body limit apply before a body is read, an upload
 * refused before its body was read is cut after at most the body limit and its connection closed (before, a 100 MB
 * upload with no token was read to its end, then answered 401), and a client that trickles its headers or body
 * (slowloris) is answered 408 and closed at the configured bound.
 */
import { connect, type Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config.js'
import { startTestServer, type TestServer } from '../support/server.js'

const HUNDRED_MB = 100 * 1024 * 1024
const CHUNK = Buffer.alloc(64 * 1024, 0x20)

interface Upload {
  /** Everything the server sent back. */
  answer: string
  /** Body bytes the socket accepted before the server closed it. */
  written: number
}

/** Sends `head`, then up to `bodyBytes` in 64 kB chunks as fast as the socket takes them, until the server closes. */
async function upload(port: number, head: string, bodyBytes: number): Promise<Upload> {
  const socket: Socket = connect(port, '127.0.0.1')
  let answer = ''
  let closed = false
  socket.on('data', (d: Buffer) => {
    answer += d.toString('latin1')
  })
  socket.on('error', () => {
    closed = true
  })
  socket.on('close', () => {
    closed = true
  })
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
  socket.write(head)
  let written = 0
  const deadline = Date.now() + 20_000
  while (!closed && written < bodyBytes && Date.now() < deadline) {
    if (!socket.write(CHUNK)) {
      await new Promise<void>((resolve) => {
        const done = () => resolve()
        socket.once('drain', done)
        socket.once('close', done)
        setTimeout(done, 200)
      })
    }
    written += CHUNK.length
  }
  await new Promise<void>((resolve) => {
    if (closed) return resolve()
    socket.once('close', () => resolve())
    setTimeout(() => resolve(), 5_000)
  })
  socket.destroy()
  return { answer, written }
}

/**
 * Sends `prefix` at once, then `head` one byte every `everyMs`; resolves with what came back and how long after the
 * start the server closed the connection.
 */
async function trickle(port: number, head: string, everyMs: number, maxMs: number, prefix = '') {
  const socket = connect(port, '127.0.0.1')
  let answer = ''
  socket.on('data', (d: Buffer) => {
    answer += d.toString('latin1')
  })
  socket.on('error', () => {})
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
  if (prefix) socket.write(prefix)
  const started = Date.now()
  const closedAfter = new Promise<number>((resolve) => {
    socket.once('close', () => resolve(Date.now() - started))
    setTimeout(() => resolve(Number.POSITIVE_INFINITY), maxMs)
  })
  let i = 0
  const timer = setInterval(() => {
    if (socket.destroyed || i >= head.length) return
    socket.write(head[i++] ?? '')
  }, everyMs)
  const ms = await closedAfter
  clearInterval(timer)
  socket.destroy()
  return { answer, ms }
}

describe('refusing before reading', () => {
  let t: TestServer
  let port: number
  let token: string
  beforeAll(async () => {
    t = await startTestServer({ config: { headersTimeoutMs: 1000, requestTimeoutMs: 2000 } })
    port = Number(new URL(t.baseUrl).port)
    token = (await t.createKey()).token
  })
  afterAll(() => t.close())

  it('cuts a 100 MB upload without a token after the body limit, answering 401 and closing', async () => {
    const head = `POST /v1/agents HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${HUNDRED_MB}\r\n\r\n`
    const { answer, written } = await upload(port, head, HUNDRED_MB)
    expect(answer).toMatch(/^HTTP\/1\.1 401 /)
    expect(answer.toLowerCase()).toContain('connection: close')
    expect(answer).toContain('"code":"unauthenticated"')
    // The server reads at most the body limit (1 MiB) after answering; the rest is what loopback's socket buffers
    // held when it cut the connection. Reading the upload to its end would have taken all 100 MB.
    expect(written).toBeLessThan(32 * 1024 * 1024)
  })

  it('still lets a refused client of ordinary size read its 401 (no reset before the answer)', async () => {
    const body = JSON.stringify({ name: 'x'.repeat(200_000), behavior: 'autonomous', capabilities: [] })
    for (let i = 0; i < 5; i++) {
      const res = await fetch(`${t.baseUrl}/v1/agents`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer wrong' },
        body,
      })
      expect(res.status).toBe(401)
      expect(res.headers.get('connection')).toBe('close')
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('unauthenticated')
    }
  })

  it('answers 408 and closes a connection that trickles its headers, at the headers bound', async () => {
    const head = `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ${'a'.repeat(200)}\r\n\r\n`
    const { answer, ms } = await trickle(port, head, 50, 8_000)
    expect(answer).toMatch(/^HTTP\/1\.1 408 /)
    // 1 s bound, checked once a second.
    expect(ms).toBeGreaterThanOrEqual(900)
    expect(ms).toBeLessThan(4_000)
  })

  it('answers 408 and closes an authenticated upload that trickles its body, at the request bound', async () => {
    const body = JSON.stringify({ name: 'slow', behavior: 'autonomous', capabilities: [] })
    const head = `POST /v1/agents HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`
    // The headers at once, then the body a byte every 100 ms: past the 2 s request bound long before its end.
    const { answer, ms } = await trickle(port, body, 100, 10_000, head)
    expect(ms).toBeGreaterThanOrEqual(1_900)
    expect(ms).toBeLessThan(5_000)
    expect(answer).toMatch(/HTTP\/1\.1 408 /)
  })
})

describe('AGENTOPS_HEADERS_TIMEOUT_MS and AGENTOPS_REQUEST_TIMEOUT_MS', () => {
  it('default to 10 s and 30 s, read as given, and refuse what cannot bound anything', () => {
    expect(loadConfig({})).toMatchObject({ headersTimeoutMs: 10_000, requestTimeoutMs: 30_000 })
    expect(
      loadConfig({ AGENTOPS_HEADERS_TIMEOUT_MS: '5000', AGENTOPS_REQUEST_TIMEOUT_MS: '60000' }),
    ).toMatchObject({ headersTimeoutMs: 5000, requestTimeoutMs: 60_000 })
    expect(() => loadConfig({ AGENTOPS_HEADERS_TIMEOUT_MS: '0' })).toThrow(/at least 1000/)
    expect(() => loadConfig({ AGENTOPS_HEADERS_TIMEOUT_MS: '40000' })).toThrow(/not be larger/)
    expect(() => loadConfig({ AGENTOPS_REQUEST_TIMEOUT_MS: 'soon' })).toThrow('AGENTOPS_REQUEST_TIMEOUT_MS')
  })
})
