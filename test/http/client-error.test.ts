/**
 * Requests Node's HTTP parser refuses before any route runs get the JSON error envelope (src/http/client-error.ts),
 * not Node's plain-text `400 Bad Request`: raw non-ASCII bytes in the request line, a NUL in a header. Requests the
 * parser lets through but whose target or Host is no URL get the envelope too, on HTTP and on a WebSocket upgrade.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { rawExchange } from '../support/raw-exchange.js'
import { startTestServer, type TestServer } from '../support/server.js'

let t: TestServer
beforeAll(async () => {
  t = await startTestServer()
})
afterAll(() => t.close())

/** Sends raw bytes and returns everything the server answered before it closed the connection. */
const raw = (bytes: Buffer) => rawExchange(t.baseUrl, bytes)

function parse(answer: string) {
  const [head = '', body = ''] = answer.split('\r\n\r\n')
  const [status, ...headers] = head.split('\r\n')
  return { status, headers: headers.map((h) => h.toLowerCase()), body: JSON.parse(body) }
}

describe('requests the HTTP parser refuses', () => {
  it.each([
    [
      'raw non-ASCII bytes in the request line',
      Buffer.from('GET /v1/agents/\xe9\xff HTTP/1.1\r\nHost: a\r\n\r\n', 'latin1'),
    ],
    [
      'a NUL in a header value',
      Buffer.from('GET /v1/agents HTTP/1.1\r\nHost: a\r\nX-A: b\x00c\r\n\r\n', 'latin1'),
    ],
    ['a request line that is not HTTP', Buffer.from('HELLO\r\n\r\n', 'latin1')],
  ])('%s: 400 with the error envelope', async (_name, bytes) => {
    const answer = parse(await raw(bytes))
    expect(answer.status).toBe('HTTP/1.1 400 Bad Request')
    expect(answer.headers).toContain('content-type: application/json')
    expect(answer.headers).toContain('connection: close')
    expect(answer.body.error).toMatchObject({ code: 'invalid_request', detail: { issues: [], fields: [] } })
    expect(answer.body.error.request_id).toMatch(/^req_/)
    expect(answer.headers).toContain(`x-request-id: ${answer.body.error.request_id}`)
  })

  it('headers too large: 431 with the envelope', async () => {
    const answer = parse(
      await raw(Buffer.from(`GET / HTTP/1.1\r\nHost: a\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`)),
    )
    expect(answer.status).toBe('HTTP/1.1 431 Request Header Fields Too Large')
    expect(answer.body.error.code).toBe('invalid_request')
  })

  it('the server keeps answering afterwards', async () => {
    expect((await t.request('GET', '/healthz', { unchecked: true })).status).toBe(200)
  })
})

describe('requests whose target or Host header is no URL', () => {
  const upgrade =
    'Upgrade: websocket\r\nConnection: Upgrade, close\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n'
  it.each([
    [
      'an absolute target with a broken host',
      'GET http://[zz/v1/agents HTTP/1.1\r\nHost: a\r\nConnection: close\r\n',
    ],
    ['a Host header that is no host', 'GET /v1/agents HTTP/1.1\r\nHost: [\r\nConnection: close\r\n'],
    ['the asterisk form', 'OPTIONS * HTTP/1.1\r\nHost: a\r\nConnection: close\r\n'],
    [
      'a WebSocket upgrade with an absolute target with a broken host',
      `GET http://[zz/v1/stream HTTP/1.1\r\nHost: a\r\n${upgrade}`,
    ],
  ])('%s: 400 with the error envelope', async (_name, head) => {
    const answer = parse(await raw(Buffer.from(`${head}\r\n`, 'latin1')))
    expect(answer.status).toBe('HTTP/1.1 400 Bad Request')
    expect(answer.headers).toContain('content-type: application/json')
    expect(answer.body.error).toMatchObject({
      code: 'invalid_request',
      message: 'The request target or Host header is not a valid URL',
      detail: { issues: [], fields: [] },
    })
    expect(answer.headers).toContain(`x-request-id: ${answer.body.error.request_id}`)
  })

  it('the server keeps answering afterwards', async () => {
    expect((await t.request('GET', '/healthz', { unchecked: true })).status).toBe(200)
  })
})

describe('what Node answers itself', () => {
  it('an Expect other than 100-continue: 417 with the envelope naming the header', async () => {
    const answer = parse(
      await raw(
        Buffer.from(
          'POST /v1/agents HTTP/1.1\r\nHost: a\r\nExpect: 200-ok\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}',
          'latin1',
        ),
      ),
    )
    expect(answer.status).toBe('HTTP/1.1 417 Expectation Failed')
    expect(answer.headers).toContain('content-type: application/json')
    expect(answer.body.error).toMatchObject({ code: 'invalid_request', detail: { fields: ['Expect'] } })
    expect(answer.body.error.message).toContain('200-ok')
  })

  it('a CONNECT: 400 with the envelope, not a dropped connection', async () => {
    const answer = parse(
      await raw(Buffer.from('CONNECT 127.0.0.1:9 HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n', 'latin1')),
    )
    expect(answer.status).toBe('HTTP/1.1 400 Bad Request')
    expect(answer.body.error.code).toBe('invalid_request')
    expect(answer.body.error.message).toContain('CONNECT')
  })
})
