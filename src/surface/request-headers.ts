import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Context } from 'hono'

/** What @hono/node-server hands every request as `c.env`; in-process `app.request` (tests) hands nothing. */
export interface NodeBindings {
  incoming?: IncomingMessage
  outgoing?: ServerResponse
}

/** Node's own request, when the app serves real HTTP. */
export function nodeRequest(c: Context): IncomingMessage | undefined {
  return (c.env as NodeBindings | undefined)?.incoming
}

/**
 * A request header as `c.req.header(name)` gives it (every field of that name, joined by ", "), for a lower-case
 * name. Under Node it is read from Node's raw header list: `c.req.header()` first builds the request's whole Fetch
 * Headers (every field validated and copied), which a request that
 * reads a few headers never needs. Node has trimmed the values as Fetch would.
 */
export function requestHeader(c: Context, lowerName: string): string | undefined {
  const incoming = nodeRequest(c)
  if (!incoming) return c.req.header(lowerName)
  const raw = incoming.rawHeaders
  let value: string | undefined
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string
    if (name.length === lowerName.length && name.toLowerCase() === lowerName) {
      value = value === undefined ? raw[i + 1] : `${value}, ${raw[i + 1]}`
    }
  }
  return value
}

/**
 * Every request header as `c.req.header()` gives them (lower-case names, the fields of one name joined by ", "),
 * read from Node's raw list under Node for the same reason as `requestHeader`.
 */
export function requestHeaders(c: Context): Record<string, string> {
  const incoming = nodeRequest(c)
  if (!incoming) return c.req.header()
  const headers: Record<string, string> = Object.create(null)
  const raw = incoming.rawHeaders
  for (let i = 0; i < raw.length; i += 2) {
    const name = (raw[i] as string).toLowerCase()
    const value = raw[i + 1] as string
    const before = headers[name]
    headers[name] = before === undefined ? value : `${before}, ${value}`
  }
  return headers
}
