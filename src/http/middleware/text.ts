import type { Context, Next } from 'hono'
import { findUnstorableText, unstorableReason, unstorableTextError } from '../../domain/text.js'
import type { AppEnv } from '../../surface/context.js'
import type { Step } from './series.js'

/**
 * Refuses text no store can keep in the path and the query, before routes read them (the body guard checks
 * bodies). Same answer on SQLite and PostgreSQL, never a store error.
 *
 * Only percent-encoding can put U+0000 or a lone surrogate into a URL (Node's parser refuses a raw NUL, and raw
 * bytes decode as latin-1), so a URL without `%` is skipped without being parsed. Headers are not checked: Node
 * refuses a NUL in a header value with its own 400 before the app runs, and latin-1 values hold no surrogates.
 */
export const textGuard = (): Step => (c, next) => (c.req.url.includes('%') ? guardEncoded(c, next) : next())

async function guardEncoded(c: Context<AppEnv>, next: Next): Promise<void> {
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
  await next()
}
