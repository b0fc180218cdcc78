import { type IncomingMessage, type Server, STATUS_CODES } from 'node:http'
import type { Duplex } from 'node:stream'
import type { Clock } from '../domain/clock.js'
import { ApiError, errorEnvelope } from '../domain/errors.js'
import { newId } from '../domain/ids.js'
import { unreadableTarget } from './errors.js'

/**
 * Refuses a WebSocket upgrade with a plain HTTP answer carrying the spec §7 envelope (and the error's headers,
 * e.g. WWW-Authenticate), so a refused socket reads like any refused request. Shared by every upgrade handler
 * (/v1/stream, /v1/graphql) and the router below.
 */
export function refuseUpgrade(socket: Duplex, clock: Clock, err: ApiError): void {
  // Stryker disable next-line StringLiteral: an id's prefix is the reference's choice (§7 types request_id a string, nothing more)
  const requestId = newId('req', clock.now())
  const body = JSON.stringify(errorEnvelope(err, requestId))
  const lines = [
    `HTTP/1.1 ${err.status} ${reasonPhrase(err.status)}`,
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    `X-Request-Id: ${requestId}`,
    'Connection: close',
    ...Object.entries(err.headers).map(([k, v]) => `${k}: ${v}`),
  ]
  socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`)
}

/** What a WebSocket transport does with an upgrade of the path it serves (the URL already parsed). */
export type UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer, url: URL) => void

/**
 * The server's one `upgrade` listener: an upgrade of a path a WebSocket transport serves goes to it, any other is
 * refused with 404 and the envelope, as the HTTP side answers. Transports never see each other's paths. Returns the
 * function that detaches it.
 */
export function routeUpgrades(
  server: Server,
  clock: Clock,
  routes: ReadonlyMap<string, UpgradeHandler>,
): () => void {
  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = targetOf(req)
    if (!url) {
      refuseUpgrade(socket, clock, unreadableTarget())
      return
    }
    const handler = routes.get(url.pathname)
    if (!handler) {
      // Stryker disable next-line ObjectLiteral: the detail of a not_found is the reference's choice (§7 shows none); the path is named as the HTTP side names it
      refuseUpgrade(socket, clock, new ApiError('not_found', 'No such endpoint', { path: url.pathname }))
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

/** Relative request targets resolve against it; only the path is read. */
const PLACEHOLDER_ORIGIN = 'http://upgrade.invalid'

/**
 * The request target as Node's parser read it; undefined when it is no URL at all (an absolute form such as
 * `http://[x`, which Node's parser lets through).
 */
function targetOf(req: IncomingMessage): URL | undefined {
  // Stryker disable next-line StringLiteral: equivalent: a server's request always has its url (Node types it optional for a client's response)
  const target = req.url ?? '/'
  return URL.canParse(target, PLACEHOLDER_ORIGIN) ? new URL(target, PLACEHOLDER_ORIGIN) : undefined
}

/** A status line's reason phrase, which a client ignores (RFC 9112 §4): Node's for the status. */
function reasonPhrase(status: number): string {
  // Stryker disable next-line LogicalOperator,StringLiteral: equivalent: Node names every status the reference answers, and a client ignores the phrase
  return STATUS_CODES[status] ?? ''
}
