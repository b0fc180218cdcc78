import { createMiddleware } from 'hono/factory'
import type { AppEnv } from '../../api/context.js'
import { newId } from '../../domain/ids.js'
import { withAnswerHeaders } from '../node-io.js'

const ACCEPTABLE = /^[A-Za-z0-9._:-]{1,128}$/
const NAMES = ['X-Request-Id']

/**
 * Every response carries X-Request-Id; a well-formed id from the caller (a proxy's) is kept for tracing.
 * Not `hono/request-id`: it refuses ids with `.` or `:` (common in proxies' trace ids), and it sets the header
 * only before the handler, so a handler's own Response would lose it.
 */
export const requestId = () =>
  createMiddleware<AppEnv>(async (c, next) => {
    const incoming = c.req.header('x-request-id')
    const id = incoming && ACCEPTABLE.test(incoming) ? incoming : newId('req')
    c.set('requestId', id)
    return withAnswerHeaders(c, NAMES, [id], next)
  })
