import type { Context } from 'hono'
import { createMiddleware } from 'hono/factory'
import { newId } from '../../domain/ids.js'
import type { AppEnv } from '../../surface/context.js'
import { requestHeader } from '../../surface/request-headers.js'
import { withAnswerHeaders } from '../node-io.js'

const ACCEPTABLE = /^[A-Za-z0-9._:-]{1,128}$/
const NAMES = ['X-Request-Id']

/** The request's id: a well-formed one from the caller (a proxy's) is kept for tracing, else a new one. */
function requestIdOf(c: Context<AppEnv>): string {
  const incoming = requestHeader(c, 'x-request-id')
  const id = incoming && ACCEPTABLE.test(incoming) ? incoming : newId('req')
  c.set('requestId', id)
  return id
}

/**
 * Gives the request its id and runs the rest of the chain with `X-Request-Id` on whichever answer it makes. Shared
 * by `requestId()` and the observed variant (./observe.ts), which does this and its observation in one layer.
 */
export function answerWithRequestId(c: Context<AppEnv>, next: () => Promise<void>): Promise<void> {
  return withAnswerHeaders(c, NAMES, [requestIdOf(c)], next)
}

/**
 * Every response carries X-Request-Id; a well-formed id from the caller (a proxy's) is kept for tracing.
 * Not `hono/request-id`: it refuses ids with `.` or `:` (common in proxies' trace ids), and it sets the header
 * only before the handler, so a handler's own Response would lose it.
 */
export const requestId = () => createMiddleware<AppEnv>((c, next) => answerWithRequestId(c, next))
