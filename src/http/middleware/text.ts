import { createMiddleware } from 'hono/factory'
import { ApiError } from '../../domain/errors.js'
import { findUnstorableText, type UnstorableText, unstorableReason } from '../../domain/text.js'
import type { AppEnv } from '../context.js'

/** The 400 for text no store can keep (src/domain/text.ts), naming where it was, like a schema failure. */
export function unstorableTextError(location: string, found: UnstorableText): ApiError {
  const field = found.path || '(root)'
  return new ApiError('invalid_request', `The request ${location} is invalid: ${field}: ${found.message}`, {
    issues: [{ location, path: found.path, message: found.message }],
    fields: [field],
  })
}

/**
 * Refuses text no store can keep in the path, the query and the headers, before routes read them (the body
 * guard checks bodies). Same answer on SQLite and PostgreSQL, never a store error.
 */
export const textGuard = () =>
  createMiddleware<AppEnv>(async (c, next) => {
    const url = new URL(c.req.url)
    for (const segment of url.pathname.split('/')) {
      let decoded: string
      try {
        decoded = decodeURIComponent(segment)
      } catch {
        continue // not percent-decodable: routing treats it as plain text, which is storable
      }
      const reason = unstorableReason(decoded)
      if (reason) throw unstorableTextError('path', { path: '', message: `A path segment ${reason}` })
    }
    for (const [name, value] of url.searchParams) {
      const found = findUnstorableText(value, name) ?? findUnstorableText({ [name]: '' })
      if (found) throw unstorableTextError('query', found)
    }
    for (const [name, value] of c.req.raw.headers) {
      const reason = unstorableReason(value)
      if (reason) throw unstorableTextError('header', { path: name, message: `The value ${reason}` })
    }
    await next()
  })
