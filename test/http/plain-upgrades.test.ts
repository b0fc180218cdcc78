/**
 * Upgrades no WebSocket transport takes are served as the plain requests they also are (RFC 9110 §7.8), and
 * WebSocket handshakes `ws` refuses get the error envelope (src/surface/upgrade.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { rawExchange } from '../support/raw-exchange.js'
import { startTestServer, type TestServer } from '../support/server.js'

let t: TestServer
let token: string
beforeAll(async () => {
  t = await startTestServer()
  token = (await t.createKey()).token
})
afterAll(() => t.close())

/** Writes each part in turn (a pause between), then returns everything answered before the server closed. */
const exchange = (...parts: string[]) => rawExchange(t.baseUrl, ...parts)

interface Answer {
  status: number
  headers: Map<string, string>
  body: string
}

/** The answers of one connection, in order (each framed by its Content-Length). */
function answers(text: string): Answer[] {
  const out: Answer[] = []
  let rest = text
  while (rest.length > 0) {
    const end = rest.indexOf('\r\n\r\n')
    const [statusLine = '', ...lines] = rest.slice(0, end).split('\r\n')
    const headers = new Map(
      lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
    )
    const length = Number(headers.get('content-length') ?? 0)
    out.push({
      status: Number(statusLine.split(' ')[1]),
      headers,
      body: rest.slice(end + 4, end + 4 + length),
    })
    rest = rest.slice(end + 4 + length)
  }
  return out
}

const h2c =
  'Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n'
const websocket =
  'Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n'

describe('an upgrade no WebSocket transport takes is served as a plain request', () => {
  it('asking for h2c (curl --http2 on http://): answered over HTTP/1.1, and the connection lives on', async () => {
    const [first, second, ...more] = answers(
      await exchange(
        `GET /v1/agents HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${token}\r\n${h2c}\r\n`,
        'GET /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n',
      ),
    )
    expect(first?.status).toBe(200)
    expect(JSON.parse(first?.body ?? '')).toEqual({ data: [], next_cursor: null })
    expect(second?.status).toBe(200)
    expect(more).toEqual([])
  })

  it('a body in several writes reaches the route whole', async () => {
    const body = JSON.stringify({ name: 'over-h2c', behavior: 'autonomous', capabilities: ['search'] })
    const head =
      `POST /v1/agents HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${token}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n${h2c.replace('Upgrade, ', 'Upgrade, close, ')}\r\n`
    const [created] = answers(await exchange(head + body.slice(0, 10), body.slice(10)))
    expect(created?.status).toBe(201)
    expect(JSON.parse(created?.body ?? '')).toMatchObject({ name: 'over-h2c', capabilities: ['search'] })
  })

  it('a WebSocket handshake of a REST path is answered as that path', async () => {
    const [listed] = answers(
      await exchange(
        `GET /v1/agents?limit=1 HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${token}\r\nConnection: Upgrade, close\r\n${websocket}\r\n`,
      ),
    )
    expect(listed?.status).toBe(200)
    expect(JSON.parse(listed?.body ?? '')).toMatchObject({
      data: [expect.objectContaining({ name: 'over-h2c' })],
    })
  })

  it('a WebSocket handshake of a path nobody serves: 404 with the envelope, as the HTTP side answers it', async () => {
    const [missing] = answers(
      await exchange(
        `GET /v1/streams HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${token}\r\nConnection: Upgrade, close\r\n${websocket}\r\n`,
      ),
    )
    expect(missing?.status).toBe(404)
    expect(missing?.headers.get('content-type')).toContain('application/json')
    expect(JSON.parse(missing?.body ?? '').error).toMatchObject({
      code: 'not_found',
      detail: { path: '/v1/streams' },
    })
  })

  it('a POST asking for a WebSocket of /v1/stream: 405 with Allow and the envelope', async () => {
    const [refused] = answers(
      await exchange(
        `POST /v1/stream HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${token}\r\nContent-Length: 0\r\nConnection: Upgrade, close\r\n${websocket}\r\n`,
      ),
    )
    expect(refused?.status).toBe(405)
    expect(refused?.headers.get('allow')).toContain('GET')
    expect(JSON.parse(refused?.body ?? '').error.code).toBe('method_not_allowed')
  })
})

describe('a WebSocket handshake ws refuses gets the envelope', () => {
  it.each([
    ['/v1/stream', 'no Sec-WebSocket-Key', 'Sec-WebSocket-Version: 13\r\n', 'Sec-WebSocket-Key'],
    [
      '/v1/stream',
      'a version ws does not speak',
      websocket.replace('Version: 13', 'Version: 99'),
      'Sec-WebSocket-Version',
    ],
    [
      '/v1/graphql',
      'a malformed Sec-WebSocket-Key',
      websocket.replace('dGhlIHNhbXBsZSBub25jZQ==', 'short'),
      'Sec-WebSocket-Key',
    ],
  ])('%s, %s: 400 invalid_request naming the versions it speaks', async (path, _name, handshake, named) => {
    const [refused, ...more] = answers(
      await exchange(
        `GET ${path} HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${token}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n${handshake.replace('Upgrade: websocket\r\n', '')}\r\n`,
      ),
    )
    expect(refused?.status).toBe(400)
    expect(refused?.headers.get('content-type')).toBe('application/json')
    expect(refused?.headers.get('sec-websocket-version')).toBe('13, 8')
    const error = JSON.parse(refused?.body ?? '').error
    expect(error).toMatchObject({
      code: 'invalid_request',
      detail: { issues: [{ location: 'header', path: named }], fields: [named] },
    })
    expect(error.message).toContain(named)
    expect(refused?.headers.get('x-request-id')).toBe(error.request_id)
    expect(more).toEqual([])
  })
})
