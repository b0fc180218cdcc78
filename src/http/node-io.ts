import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Context } from 'hono'

/** What @hono/node-server hands every request as `c.env`; in-process `app.request` (tests) hands nothing. */
interface NodeBindings {
  incoming?: IncomingMessage
  outgoing?: ServerResponse
}

/** Node's own request, when the app serves real HTTP. */
export function nodeRequest(c: Context): IncomingMessage | undefined {
  return (c.env as NodeBindings | undefined)?.incoming
}

/** Node's own response, when the app serves real HTTP. */
export function nodeResponse(c: Context): ServerResponse | undefined {
  return (c.env as NodeBindings | undefined)?.outgoing
}

/**
 * Puts headers that every answer carries (request id, rate limits) on the answer, whichever Response the rest of
 * the chain makes. Under Node they go on Node's response before the handler runs: Node merges them under the
 * Response's own headers when it writes the head, so a plain JSON answer stays @hono/node-server's lightweight
 * Response and no Fetch Headers object is built for it (profiled: building, sorting and reading one was about a
 * twentieth of a cached GET). In process they go on the context before `next()` and on the finished Response after.
 */
export async function withAnswerHeaders(
  c: Context,
  names: readonly string[],
  values: readonly string[],
  next: () => Promise<void>,
): Promise<void> {
  const outgoing = nodeResponse(c)
  if (outgoing && !outgoing.headersSent) {
    for (let i = 0; i < names.length; i++) outgoing.setHeader(names[i] as string, values[i] as string)
    return next()
  }
  // Before the handler as well as after: a lightweight Response built from plain header fields forgets headers
  // set on it once its body is read, while one built on the context's prepared Headers keeps them.
  for (let i = 0; i < names.length; i++) c.header(names[i] as string, values[i] as string)
  await next()
  for (let i = 0; i < names.length; i++) c.res.headers.set(names[i] as string, values[i] as string)
}
