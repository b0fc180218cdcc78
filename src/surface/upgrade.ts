import type { IncomingMessage, Server } from 'node:http'
import type { Duplex } from 'node:stream'
import type { WebSocketServer } from 'ws'
import type { Clock } from '../domain/clock.js'
import { ApiError } from '../domain/errors.js'
import { refuseOnSocket } from './socket-refusal.js'

/** What a WebSocket transport does with an upgrade of the path it serves (the URL already parsed). */
export type UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer, url: URL) => void

/**
 * The server's one `upgrade` listener. A WebSocket opening handshake (a GET asking `Upgrade: websocket`) of a path
 * a WebSocket transport serves goes to it; transports never see each other's paths. Any other upgrade is served as
 * the plain request it also is (RFC 9110 §7.8: a server may ignore Upgrade): `curl --http2` on an http:// URL asks
 * for h2c on every request, and a WebSocket handshake of a REST path, or a POST asking for one, is answered as the
 * HTTP side answers it (404, 405 with Allow, a target that is no URL 400), envelope and all. Returns the function
 * that detaches the listener.
 */
export function routeUpgrades(server: Server, routes: ReadonlyMap<string, UpgradeHandler>): () => void {
  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = req.method === 'GET' && asksForWebSocket(req) ? targetOf(req) : undefined
    const handler = url && routes.get(url.pathname)
    if (!url || !handler) {
      serveAsPlainRequest(server, req, socket, head)
      return
    }
    // Stryker disable next-line all: a transport error on a socket being upgraded: its peer is gone, no answer reaches it either way
    socket.on('error', () => socket.destroy())
    handler(req, socket, head, url)
  }
  server.on('upgrade', onUpgrade)
  // Stryker disable next-line all: only the server's shutdown detaches the router: no request is answered then
  return () => server.off('upgrade', onUpgrade)
}

/**
 * A WebSocket handshake `ws` refuses (a missing or malformed Sec-WebSocket-Key, a version it does not speak, a bad
 * Sec-WebSocket-Protocol or -Extensions) gets 400 with the envelope instead of ws's text/html, naming the versions
 * it speaks (RFC 6455 §4.4). ws tells the reason; the listener is ws's own hook for it.
 */
export function refuseBadHandshakes(wss: WebSocketServer, clock: Clock): void {
  wss.on('wsClientError', (err, socket) => {
    // ws names the header at fault in its message; the detail names it as a refused header is named elsewhere.
    // Stryker disable next-line OptionalChaining: equivalent: every refusal ws gives a GET's handshake names its header
    const header = /\b(Sec-WebSocket-[A-Za-z]+|Upgrade)\b/.exec(err.message)?.[1]
    const detail = header
      ? { issues: [{ location: 'header', path: header, message: err.message }], fields: [header] }
      : // Stryker disable next-line all: unreached: every refusal ws gives a GET's handshake names its header (the router sends it GETs only)
        { issues: [], fields: [] }
    const refusal = new ApiError(
      'invalid_request',
      `The WebSocket handshake is invalid: ${err.message}`,
      detail,
      {
        'Sec-WebSocket-Version': '13, 8',
      },
    )
    refuseOnSocket(socket, clock, refusal)
  })
}

/** Whether the upgrade asks for a WebSocket: `ws`'s own reading of the Upgrade header (the one value, any case). */
function asksForWebSocket(req: IncomingMessage): boolean {
  return String(req.headers.upgrade).toLowerCase() === 'websocket'
}

/** Relative request targets resolve against it; only the path is read. */
const PLACEHOLDER_ORIGIN = 'http://upgrade.invalid'

/**
 * The request target as Node's parser read it; undefined when it is no URL at all (an absolute form such as
 * `http://[x`, which Node's parser lets through: the HTTP side then refuses it).
 */
function targetOf(req: IncomingMessage): URL | undefined {
  // Stryker disable next-line StringLiteral: equivalent: a server's request always has its url (Node types it optional for a client's response)
  const target = req.url ?? '/'
  return URL.canParse(target, PLACEHOLDER_ORIGIN) ? new URL(target, PLACEHOLDER_ORIGIN) : undefined
}

/**
 * Hands an upgrade back to the HTTP server as a plain request. Node has already taken the socket off its HTTP
 * parser, so the request's head is written back, without its Upgrade header, in front of what the socket still has
 * to deliver (the body's first bytes, `head`, then the rest), and the socket is given to the server as a new
 * connection (the documented way to inject one): the request is parsed again and answered, and the connection
 * lives on as the client asked.
 */
function serveAsPlainRequest(server: Server, req: IncomingMessage, socket: Duplex, head: Buffer): void {
  const headers = req.rawHeaders.flatMap((entry, i, raw) =>
    i % 2 === 0 && entry.toLowerCase() !== 'upgrade' ? [`${entry}: ${raw[i + 1]}`] : [],
  )
  const lines = [`${req.method} ${req.url} HTTP/${req.httpVersion}`, ...headers]
  // Node read the head's bytes as latin1: written back so, they are the bytes the client sent.
  // Stryker disable next-line StringLiteral: equivalent for every header the API reads: each is ASCII or refused either way
  socket.unshift(Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), head]))
  server.emit('connection', socket)
}
