import { STATUS_CODES } from 'node:http'
import type { Duplex } from 'node:stream'
import type { Clock } from '../domain/clock.js'
import { ApiError, errorEnvelope } from '../domain/errors.js'
import { newId } from '../domain/ids.js'

/**
 * Refuses a WebSocket upgrade with a plain HTTP answer carrying the spec §7 envelope (and the error's headers,
 * e.g. WWW-Authenticate), so a refused socket reads like any refused request. Shared by every upgrade handler
 * (/v1/stream, /v1/graphql).
 */
export function refuseUpgrade(socket: Duplex, clock: Clock, err: ApiError): void {
  const requestId = newId('req', clock.now())
  const body = JSON.stringify(errorEnvelope(err, requestId))
  const lines = [
    `HTTP/1.1 ${err.status} ${STATUS_CODES[err.status] ?? ''}`,
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    `X-Request-Id: ${requestId}`,
    'Connection: close',
    ...Object.entries(err.headers).map(([k, v]) => `${k}: ${v}`),
  ]
  socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`)
}

/** An upgrade to a path no WebSocket transport serves: 404 with the envelope, as the HTTP side answers. */
export function refuseUnknownPath(socket: Duplex, clock: Clock, path: string): void {
  refuseUpgrade(socket, clock, new ApiError('not_found', 'No such endpoint', { path }))
}
