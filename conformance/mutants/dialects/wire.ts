/**
 * Helpers the dialects share: a consistent rewrite of every id between the reference's form and another, JSON
 * edits on the wire, and re-signing deliveries after their body changed (a dialect is a correct deployment, so
 * its deliveries verify under the subscription's secret like the reference's).
 */
import { randomUUID } from 'node:crypto'
import { signBody } from '../../src/signature.js'
import { header, type Json, type ProxiedRequest, parseJson, pathOnly } from '../proxy.js'

/** The reference's ids: a type prefix and 26 Crockford base32 digits (ULID layout). */
const REFERENCE_ID = /\b(?:ws|key|agt|task|tool|run|evt|whk|dlv|req|res|batch)_[0-9a-hjkmnp-tv-z]{26}\b/g
const FOREIGN_ID = /\b[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\b/g

/** Maps every reference id to a random UUID and back, the same UUID for the same id throughout the run. */
export class IdMap {
  private readonly out = new Map<string, string>()
  private readonly back = new Map<string, string>()

  /** Reference → foreign, in any text (bodies, headers, paths, trace URLs). */
  outward(text: string): string {
    return text.replace(REFERENCE_ID, (id) => {
      let foreign = this.out.get(id)
      if (!foreign) {
        foreign = randomUUID()
        this.out.set(id, foreign)
        this.back.set(foreign, id)
      }
      return foreign
    })
  }

  /** Foreign → reference; a UUID the map never issued stays as it is (the deployment answers it 404). */
  inward(text: string): string {
    return text.replace(FOREIGN_ID, (id) => this.back.get(id) ?? id)
  }

  headersOutward(headers: Record<string, string>): Record<string, string> {
    return Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, this.outward(v)]))
  }

  /** Maps a request's path, query, body and headers (a GraphQL query names ids inside its text too). */
  request(req: ProxiedRequest): ProxiedRequest {
    const inward = (s: string) => this.inward(s)
    return {
      ...req,
      path: inward(req.path),
      body: inward(req.body),
    }
  }
}

/** Remembers each subscription's secret by its url, to re-sign deliveries whose body a dialect changed. */
export class Secrets {
  private readonly byPath = new Map<string, string>()

  /**
   * Keeps the secret of a subscription request by its URL's path. A request whose url is not a URL (a check's probe
   * of the refusal) is not kept: no delivery ever goes there.
   */
  learn(req: ProxiedRequest): void {
    if (req.method !== 'POST' || pathOnly(req.path) !== '/v1/webhooks') return
    const body = parseJson(req.body)
    if (body && typeof body.url === 'string' && typeof body.secret === 'string' && URL.canParse(body.url))
      this.byPath.set(new URL(body.url).pathname, body.secret)
  }

  /** The secret of the subscription a delivery (path under the proxy's hook prefix) is addressed to. */
  forDelivery(req: ProxiedRequest): string | undefined {
    const path = pathOnly(req.path)
    for (const [urlPath, secret] of this.byPath) if (path.endsWith(urlPath)) return secret
    return undefined
  }
}

/** A delivery with a new body, signed again under its subscription's secret (reference construction). */
export function resign(
  req: ProxiedRequest,
  body: Json,
  secret: string | undefined,
  t?: number,
): ProxiedRequest {
  const stamp = t ?? Number(/t=(\d+)/.exec(String(body.signature))?.[1] ?? Math.floor(Date.now() / 1000))
  const { signature: _old, ...rest } = body
  const signed = secret ? { ...rest, signature: signBody(secret, rest, stamp) } : body
  // Standard Webhooks headers sign the old raw body: drop them rather than send ones that no longer verify.
  const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !k.startsWith('webhook-')))
  return { ...req, headers, body: JSON.stringify(signed) }
}

/** Deep copy with every object's keys in reverse order (key order carries no meaning in JSON). */
export function reverseKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reverseKeys)
  if (value === null || typeof value !== 'object') return value
  return Object.fromEntries(
    Object.entries(value as Json)
      .reverse()
      .map(([k, v]) => [k, reverseKeys(v)]),
  )
}

const UTC = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?Z$/

/** An RFC 3339 UTC time as the same instant at +02:00 with microseconds (both legal RFC 3339). */
export function withOffset(value: string): string {
  const m = UTC.exec(value)
  if (!m) return value
  const ms = Date.parse(value)
  const local = new Date(ms + 2 * 3600_000).toISOString().slice(0, 19)
  const fraction = (m[2] ?? '.000').slice(1).padEnd(6, '0').slice(0, 6)
  return `${local}.${fraction}+02:00`
}

/**
 * Deep copy with every RFC 3339 UTC string the server made moved to the +02:00 offset. Ingest records (objects
 * with a `policy_class`) are the client's own data and come back as they were sent.
 */
export function offsetTimes(value: unknown): unknown {
  if (typeof value === 'string') return withOffset(value)
  if (Array.isArray(value)) return value.map(offsetTimes)
  if (value === null || typeof value !== 'object' || 'policy_class' in value) return value
  return Object.fromEntries(Object.entries(value as Json).map(([k, v]) => [k, offsetTimes(v)]))
}

export const isJsonAnswer = (headers: Record<string, string>) =>
  (headers['content-type'] ?? '').includes('json')

export { header }
