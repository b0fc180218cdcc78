/**
 * A deployment written by another team, correct everywhere the spec speaks and different everywhere it is silent:
 * UUID ids (mapped both ways, consistently, in paths, bodies, headers, deliveries and stream messages), a
 * resource's own id named `id`, pages of `{items, next_page_token}` with its own cursor format, keys in another
 * order, extra fields and headers, `application/json; charset=utf-8`, timestamps at a +02:00 offset with
 * microseconds, gzip bodies and `Connection: close`. A subscription's deliveries but `run.awaiting_approval`'s are
 * structured CloudEvents (./cloudevents-bodies.ts). Deliveries are signed again over the rewritten body. A replayed
 * creation (same Idempotency-Key and body) answers 200 where the first answered 201.
 */
import { gzipSync } from 'node:zlib'
import { type Json, type Mutant, type ProxiedResponse, pathOnly, query, withQuery } from '../proxy.js'
import { asCloudEvent } from './cloudevents-bodies.js'
import { IdMap, isJsonAnswer, offsetTimes, resign, reverseKeys, Secrets, withOffset } from './wire.js'

/** A resource's own id field, by the path of its answers (spec §2: the tool identifier field is not shown, ...). */
const OWN_ID: Array<[RegExp, string]> = [
  [/^\/v1\/agents(\/[^/]+)?$/, 'agent_id'],
  [/^\/v1\/tasks\/[^/]+$/, 'task_id'],
  [/^\/v1\/agents\/[^/]+\/tasks$/, 'task_id'],
  [/^\/v1\/tools(\/[^/]+)?$/, 'tool_id'],
  [/^\/v1\/webhooks(\/[^/]+)?$/, 'webhook_id'],
]

const CURSOR_PREFIX = 'pt.'
const wrapCursor = (c: string) => `${CURSOR_PREFIX}${Buffer.from(c, 'utf8').toString('base64url')}`
const unwrapCursor = (c: string) =>
  c.startsWith(CURSOR_PREFIX) ? Buffer.from(c.slice(CURSOR_PREFIX.length), 'base64url').toString('utf8') : c

function renameOwnId(item: unknown, field: string): unknown {
  if (item === null || typeof item !== 'object' || Array.isArray(item)) return item
  const { [field]: id, ...rest } = item as Json
  return id === undefined ? item : { id, ...rest }
}

/** `{data, next_cursor}` → `{items, next_page_token, object: "list"}` with the cursor in another format. */
function repage(body: Json): Json {
  if (!Array.isArray(body.data) || !('next_cursor' in body)) return body
  const { data, next_cursor, ...rest } = body
  return {
    object: 'list',
    ...rest,
    items: data,
    next_page_token: typeof next_cursor === 'string' ? wrapCursor(next_cursor) : null,
  }
}

export function ownIdsDialect(): Mutant {
  const ids = new IdMap()
  const secrets = new Secrets()
  return {
    id: 'own-ids-and-pages',
    description:
      'UUID ids, own ids named id, {items, next_page_token} pages, reversed keys, extra fields and headers, charset, +02:00 times, gzip, Connection: close, deliveries as CloudEvents, replays answered 200',
    targets: [],
    request(req) {
      secrets.learn(req)
      const mapped = ids.request(req)
      const q = query(mapped.path)
      const cursor = q.get('cursor')
      if (cursor) q.set('cursor', unwrapCursor(cursor))
      return cursor ? { ...mapped, path: withQuery(mapped.path, q) } : mapped
    },
    response(req, res) {
      const path = pathOnly(ids.inward(req.path))
      // A replayed creation answers 200, nothing new having been made (a replay's code is not shown).
      const replay = res.headers['idempotent-replayed'] === 'true' && res.status === 201
      let out: ProxiedResponse = {
        ...res,
        status: replay ? 200 : res.status,
        headers: {
          ...ids.headersOutward(res.headers),
          'x-served-by': 'dialect-own-ids',
          'cache-control': 'no-store',
          connection: 'close',
        },
      }
      if (isJsonAnswer(res.headers) && res.body !== '') {
        let body: unknown
        try {
          body = JSON.parse(ids.outward(res.body))
        } catch {
          body = undefined
        }
        if (body !== null && typeof body === 'object' && !Array.isArray(body)) {
          let b = body as Json
          const own = OWN_ID.find(([re]) => re.test(path))?.[1]
          if (own) {
            b = renameOwnId(b, own) as Json
            if (Array.isArray(b.data)) b = { ...b, data: b.data.map((i) => renameOwnId(i, own)) }
          }
          if (res.status < 400) b = { ...repage(b), ...(Array.isArray(b.data) ? {} : { livemode: false }) }
          b = offsetTimes(reverseKeys(b)) as Json
          out = {
            ...out,
            headers: { ...out.headers, 'content-type': 'application/json; charset=utf-8' },
            body: JSON.stringify(b),
          }
        }
      }
      if (/\bgzip\b/.test(req.headers['accept-encoding'] ?? '') && out.body !== '')
        return { ...out, headers: { ...out.headers, 'content-encoding': 'gzip' }, bytes: gzipSync(out.body) }
      return out
    },
    delivery(req) {
      const flat = JSON.parse(ids.outward(req.body)) as Json
      const secret = secrets.forDelivery(req)
      // A subscription's events but the one §6 shows go out as structured CloudEvents (./cloudevents-bodies.ts).
      const body =
        secret && typeof flat.event === 'string' && flat.event !== 'run.awaiting_approval'
          ? asCloudEvent(flat)
          : flat
      const moved = offsetTimes(reverseKeys(body)) as Json
      // Headers carry ids and times too (a binary-mode CloudEvent's ce-id, ce-subject and ce-time): rewritten the
      // same way as the body, so the delivery stays one consistent message.
      const headers = Object.fromEntries(
        Object.entries(ids.headersOutward(req.headers)).map(([k, v]) => [k, withOffset(v)]),
      )
      return resign({ ...req, headers }, moved, secret)
    },
    streamMessage: (message) =>
      offsetTimes(reverseKeys(JSON.parse(ids.outward(JSON.stringify(message))))) as Json,
  }
}
