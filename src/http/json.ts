import type { Context, TypedResponse } from 'hono'
import type { ContentfulStatusCode } from 'hono/utils/http-status'
import type { JSONParsed } from 'hono/utils/types'

/** JSON texts of bodies that cannot change (frozen), by identity: a repeated GET of one run sends the same text. */
const texts = new WeakMap<object, string>()

/**
 * `c.json`, with the text of a frozen body made once (presenters freeze the bodies of frozen records, such as the
 * run cache's). Typed as `c.json`'s answer: the text is `JSON.stringify(body)`, as c.json would send it.
 */
export function jsonAnswer<T extends object, S extends ContentfulStatusCode>(
  c: Context,
  body: T,
  status: S,
): TypedResponse<JSONParsed<T>, S, 'json'> {
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
  return c.body(text, status, { 'Content-Type': 'application/json' }) as unknown as TypedResponse<
    JSONParsed<T>,
    S,
    'json'
  >
}
