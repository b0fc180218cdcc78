import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import type { Duplex } from 'node:stream'
import { RequestError } from '@hono/node-server'
import type { Clock } from '../domain/clock.js'
import { ApiError, errorEnvelope } from '../domain/errors.js'
import { newId } from '../domain/ids.js'
import { internalError, unreadableTarget } from '../surface/errors.js'
import { refusal, refuseOnSocket } from '../surface/socket-refusal.js'

/**
 * Requests Node's HTTP server answers before any route sees them get the error envelope like every other bad
 * request: what its parser refuses (raw non-ASCII bytes in the request line, a malformed header, headers too large)
 * instead of Node's plain-text `400 Bad Request`, an expectation it cannot meet, a CONNECT. The connection then
 * closes, since the parser cannot tell where the next request starts. A socket the client already reset just goes.
 */
export function answerClientErrors(server: Server, clock: Clock): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy()
      return
    }
    const [status, message] =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'The request headers are too large']
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [408, 'The request was not received in time']
          : [400, 'The request is not valid HTTP/1.1 (the request line and headers must be printable ASCII)']
    refuseOnSocket(
      socket,
      clock,
      new ApiError('invalid_request', message, { issues: [], fields: [] }),
      status,
    )
  })
  // An Expect other than 100-continue (RFC 9110 §10.1.1): 417 with the envelope, where Node answers an empty 417.
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    const expectation = req.headers.expect ?? ''
    const answer = refusal(
      clock,
      new ApiError(
        'invalid_request',
        `The expectation "${expectation}" cannot be met; only 100-continue is`,
        {
          issues: [{ location: 'header', path: 'Expect', message: 'Only 100-continue is understood' }],
          fields: ['Expect'],
        },
      ),
      417,
    )
    res.writeHead(answer.status, answer.headers).end(answer.body)
  })
  // CONNECT asks for a tunnel; this server is no proxy. Refused with the envelope, where Node drops the connection.
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => {
    refuseOnSocket(
      socket,
      clock,
      new ApiError('invalid_request', 'CONNECT is not served: this server is an API, not a proxy', {
        issues: [],
        fields: [],
      }),
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
