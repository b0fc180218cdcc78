import { STATUS_CODES } from 'node:http'
import type { Duplex } from 'node:stream'
import { type ApiError, errorEnvelope } from '../domain/errors.js'
import { newId } from '../domain/ids.js'
import type { Services } from '../services.js'

/**
 * Refuses a WebSocket upgrade with a plain HTTP answer carrying the spec §7 envelope (and the error's headers,
 * e.g. WWW-Authenticate), so a refused socket reads like any refused request. Shared by every upgrade handler
 * (/v1/stream, /v1/graphql).
 */
export function refuseUpgrade(socket: Duplex, services: Services, err: ApiError): void {
  const requestId = newId('req', services.clock.now())
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
