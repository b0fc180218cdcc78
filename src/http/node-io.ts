import type { ServerResponse } from 'node:http'
import type { Context } from 'hono'
import type { NodeBindings } from '../surface/request-headers.js'

/** Node's own response, when the app serves real HTTP. */
export function nodeResponse(c: Context): ServerResponse | undefined {
  return (c.env as NodeBindings | undefined)?.outgoing
}

/** Puts headers on whichever answer the app makes next (an error envelope): Node's response, or the context's. */
export function setAnswerHeaders(c: Context, names: readonly string[], values: readonly string[]): void {
  const outgoing = nodeResponse(c)
  if (outgoing && !outgoing.headersSent) {
    for (let i = 0; i < names.length; i++) outgoing.setHeader(names[i] as string, values[i] as string)
  } else {
    for (let i = 0; i < names.length; i++) c.header(names[i] as string, values[i] as string)
  }
}

/**
 * Puts headers that every answer carries (request id, rate limits) on the answer, whichever Response the rest of
 * the chain makes. Under Node they go on Node's response before the handler runs: Node merges them under the
 * Response's own headers when it writes the head, so a plain JSON answer stays @hono/node-server's lightweight
 * Response and no Fetch Headers object is built, sorted and read for it (bench:http's cached GET). In process they
 * go on the context before `next()` and on the finished Response after.
 */
export function withAnswerHeaders(
  c: Context,
  names: readonly string[],
  values: readonly string[],
  next: () => Promise<void>,
): Promise<void> {
  const outgoing = nodeResponse(c)
  if (outgoing && !outgoing.headersSent) {
    for (let i = 0; i < names.length; i++) outgoing.setHeader(names[i] as string, values[i] as string)
    // The chain's own promise, not one more async layer around it: this runs on every request.
    return next()
  }
  return withHeadersInProcess(c, names, values, next)
}

async function withHeadersInProcess(
  c: Context,
  names: readonly string[],
  values: readonly string[],
  next: () => Promise<void>,
): Promise<void> {
  // Before the handler as well as after: a lightweight Response built from plain header fields forgets headers
  // set on it once its body is read, while one built on the context's prepared Headers keeps them.
  for (let i = 0; i < names.length; i++) c.header(names[i] as string, values[i] as string)
  await next()
  for (let i = 0; i < names.length; i++) c.res.headers.set(names[i] as string, values[i] as string)
}
