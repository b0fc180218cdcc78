import { createMiddleware } from 'hono/factory'
import { findUnstorableText, unstorableReason, unstorableTextError } from '../../domain/text.js'
import type { AppEnv } from '../context.js'

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
