import type { Context } from 'hono'
import type { ContentfulStatusCode } from 'hono/utils/http-status'

/** JSON texts of bodies that cannot change (frozen), by identity: a repeated GET of one run sends the same text. */
const texts = new WeakMap<object, string>()

/**
 * `c.json`, with the text of a frozen body made once (presenters freeze the bodies of frozen records, such as the
 * run cache's): the text is `JSON.stringify(body)`, as c.json would send it. For routes registered outside
 * app.openapi (validated inline), whose handlers answer a plain Response.
 */
export function jsonAnswer(c: Context, body: object, status: ContentfulStatusCode): Response {
  let text: string | undefined
  if (Object.isFrozen(body)) {
    text = texts.get(body)
    if (text === undefined) {
      text = JSON.stringify(body)
      texts.set(body, text)
    }
  } else {
    text = JSON.stringify(body)
  }
  // A fresh header object per answer: @hono/node-server adds Content-Length to the one it is given.
  return c.body(text, status, { 'Content-Type': 'application/json' })
}
