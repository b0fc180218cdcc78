import { createHmac, timingSafeEqual } from 'node:crypto'

export interface VerifyWebhookOptions {
  /** Oldest (and furthest in the future) signature time accepted, in seconds; default 300. */
  toleranceSeconds?: number
  /** The receiver's clock in epoch ms; default `Date.now()`. */
  now?: number
}

const SIGNATURE = /^t=(\d{1,15})((?:,v1=[0-9a-f]{64})+)$/

/**
 * Checks the `signature` field of a webhook delivery (spec §5): `t=<unix seconds>,v1=<hex>[,v1=<hex>...]`, each an
 * HMAC-SHA256, keyed with a secret's UTF-8 bytes, over `<t>.` + the RFC 8785 canonical JSON of the body without
 * `signature`. Pass every secret you trust (during a rotation, old and new); any match within the tolerance passes.
 * Accepts the raw body text or the parsed object.
 *
 * Deliveries are at least once: a retry, a redeliver or a replica killed mid-attempt sends the same event again,
 * with the same body `id`. Deduplicate on it after verifying, in the transaction that does the work:
 *
 * ```ts
 * if (!verifyWebhookSignature(rawBody, secrets)) return respond(401)
 * const event = JSON.parse(rawBody)
 * await db.transaction(async (tx) => {
 *   if (!(await tx.insertIfAbsent('handled_events', event.id))) return // a repeat: answer 2xx, do nothing
 *   await handle(event, tx)
 * })
 * ```
 */
export function verifyWebhookSignature(
  body: string | Record<string, unknown>,
  secrets: string | readonly string[],
  options: VerifyWebhookOptions = {},
): boolean {
  let parsed: unknown
  try {
    parsed = typeof body === 'string' ? JSON.parse(body) : body
  } catch {
    return false
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return false
  const { signature, ...unsigned } = parsed as Record<string, unknown>
  const match = typeof signature === 'string' ? SIGNATURE.exec(signature) : null
  if (!match?.[1] || !match[2]) return false
  const t = Number(match[1])
  if (Math.abs((options.now ?? Date.now()) / 1000 - t) > (options.toleranceSeconds ?? 300)) return false
  let signed: string
  try {
    signed = `${t}.${canonicalJson(unsigned)}`
  } catch {
    return false
  }
  const given = match[2]
    .split(',v1=')
    .filter((hex) => hex !== '')
    .map((hex) => Buffer.from(hex, 'hex'))
  for (const secret of typeof secrets === 'string' ? [secrets] : secrets) {
    const expected = createHmac('sha256', secret).update(signed, 'utf8').digest()
    if (given.some((g) => g.length === expected.length && timingSafeEqual(g, expected))) return true
  }
  return false
}

/** RFC 8785 (JCS) for values from JSON.parse: sorted keys (UTF-16 order), no whitespace, JSON.stringify numbers. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return JSON.stringify(value)
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError('RFC 8785 cannot represent NaN or Infinity')
    return JSON.stringify(value)
  }
  if (Array.isArray(value))
    return `[${value.map((v) => canonicalJson(v === undefined ? null : v)).join(',')}]`
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`
  }
  throw new TypeError(`cannot canonicalize a ${typeof value}`)
}
