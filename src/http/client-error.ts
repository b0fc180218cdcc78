import type { Server } from 'node:http'
import type { Duplex } from 'node:stream'
import { RequestError } from '@hono/node-server'
import type { Clock } from '../domain/clock.js'
import { ApiError, errorEnvelope } from '../domain/errors.js'
import { newId } from '../domain/ids.js'
import { internalError, unreadableTarget } from '../surface/errors.js'

/**
 * Requests Node's HTTP parser refuses before any route sees them (raw non-ASCII bytes in the request line, a
 * malformed header, headers too large) get the error envelope like every other bad request, instead of Node's
 * plain-text `400 Bad Request`; the connection then closes, since the parser cannot tell where the next request
 * starts. A socket the client already reset just goes.
 */
export function answerClientErrors(server: Server): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy()
      return
    }
    const tooLarge = err.code === 'HPE_HEADER_OVERFLOW'
    const timedOut = err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
    const status = tooLarge ? 431 : timedOut ? 408 : 400
    const reason = tooLarge ? 'Request Header Fields Too Large' : timedOut ? 'Request Timeout' : 'Bad Request'
    const message = tooLarge
      ? 'The request headers are too large'
      : timedOut
        ? 'The request was not received in time'
        : 'The request is not valid HTTP/1.1 (the request line and headers must be printable ASCII)'
    const requestId = newId('req')
    const body = JSON.stringify(
      errorEnvelope(new ApiError('invalid_request', message, { issues: [], fields: [] }), requestId),
    )
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `X-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
    )
  })
}

/**
 * The answer to a request @hono/node-server could not turn into a Request (its `errorHandler`): a target or Host
 * header that is no URL gets 400 with the envelope, where the adapter's own answer is an empty 400. The app never
 * throws (its error handler answers), so anything else is a bug of the reference: a 500 that leaks nothing.
 */
export function unreadableRequestResponse(err: unknown, clock: Clock): Response {
  const requestId = newId('req', clock.now())
  const refusal = err instanceof RequestError ? unreadableTarget() : internalError()
  return Response.json(errorEnvelope(refusal, requestId), {
    status: refusal.status,
    headers: { 'x-request-id': requestId },
  })
}
