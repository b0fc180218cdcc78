import { STATUS_CODES } from 'node:http'
import type { Duplex } from 'node:stream'
import type { Clock } from '../domain/clock.js'
import { type ApiError, errorEnvelope } from '../domain/errors.js'
import { newId } from '../domain/ids.js'

/**
 * Answers on a raw connection no route answers, then closes it: a plain HTTP answer carrying the spec §7 envelope
 * and the error's headers (e.g. WWW-Authenticate), so such a refusal reads like any refused request. Shared by
 * every WebSocket upgrade handler (/v1/stream, /v1/graphql) and by requests Node's HTTP parser refused. `status`
 * replaces the catalogue's when HTTP itself names the refusal (431 headers too large, 408 too slow).
 */
export function refuseOnSocket(
  socket: Duplex,
  clock: Clock,
  err: ApiError,
  status: number = err.status,
): void {
  // Stryker disable next-line StringLiteral: an id's prefix is the reference's choice (§7 types request_id a string, nothing more)
  const requestId = newId('req', clock.now())
  const body = JSON.stringify(errorEnvelope(err, requestId))
  // The status line's reason phrase, which a client ignores (RFC 9112 §4): Node's for the status.
  // Stryker disable next-line LogicalOperator,StringLiteral: equivalent: Node names every status the reference answers, and a client ignores the phrase
  const reason = STATUS_CODES[status] ?? ''
  const lines = [
    `HTTP/1.1 ${status} ${reason}`,
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    `X-Request-Id: ${requestId}`,
    'Connection: close',
    ...Object.entries(err.headers).map(([k, v]) => `${k}: ${v}`),
  ]
  socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`)
}
