import { STATUS_CODES } from 'node:http'
import type { Duplex } from 'node:stream'
import type { Clock } from '../domain/clock.js'
import { type ApiError, errorEnvelope } from '../domain/errors.js'
import { newId } from '../domain/ids.js'

/** A refusal written outside the app: its status, headers (the envelope's type and length, the request id) and body. */
export interface Refusal {
  status: number
  headers: Record<string, string>
  body: string
}

/**
 * The answer to a request no route answers, carrying the spec §7 envelope and the error's headers (e.g.
 * WWW-Authenticate), after which the connection closes. `status` replaces the catalogue's when HTTP itself names
 * the refusal (431 headers too large, 408 too slow, 417 an expectation not met).
 */
export function refusal(clock: Clock, err: ApiError, status: number = err.status): Refusal {
  // Stryker disable next-line StringLiteral: an id's prefix is the reference's choice (§7 types request_id a string, nothing more)
  const requestId = newId('req', clock.now())
  const body = JSON.stringify(errorEnvelope(err, requestId))
  return {
    status,
    headers: {
      'Content-Type': 'application/json',
      'Content-Length': String(Buffer.byteLength(body)),
      'X-Request-Id': requestId,
      Connection: 'close',
      ...err.headers,
    },
    body,
  }
}

/**
 * Answers on a raw connection no route answers, then closes it: a refused WebSocket upgrade, a request Node's HTTP
 * parser refused, a CONNECT. So such a refusal reads like any refused request.
 */
export function refuseOnSocket(
  socket: Duplex,
  clock: Clock,
  err: ApiError,
  status: number = err.status,
): void {
  const answer = refusal(clock, err, status)
  // The status line's reason phrase, which a client ignores (RFC 9112 §4): Node's for the status.
  // Stryker disable next-line LogicalOperator,StringLiteral: equivalent: Node names every status the reference answers, and a client ignores the phrase
  const reason = STATUS_CODES[answer.status] ?? ''
  const lines = [
    `HTTP/1.1 ${answer.status} ${reason}`,
    ...Object.entries(answer.headers).map(([k, v]) => `${k}: ${v}`),
  ]
  socket.end(`${lines.join('\r\n')}\r\n\r\n${answer.body}`)
}
