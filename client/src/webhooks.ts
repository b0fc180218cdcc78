import { timingSafeEqual } from 'node:crypto'
import type {
  PolicyDeniedEvent,
  ResourceEvent,
  RunAwaitingApprovalEvent,
  RunLifecycleEvent,
} from '../generated/types.gen.js'
import { BODY_SIGNATURE, bodyHmac, standardWebhooksHmac } from './webhook-signatures.js'

/** RFC 8785 (JCS) for values from JSON.parse: sorted keys (UTF-16 order), no whitespace, JSON.stringify numbers. */
export { canonicalize as canonicalJson } from './canonical-json.js'

/** Every delivery body the contract's `webhooks:` section documents; `event` tells them apart, `id` is the event id. */
export type WebhookEvent = RunAwaitingApprovalEvent | RunLifecycleEvent | PolicyDeniedEvent | ResourceEvent

export interface VerifyWebhookOptions {
  /** Oldest (and furthest in the future) signature time accepted, in seconds; default 300. A finite number >= 0. */
  toleranceSeconds?: number
  /** The receiver's clock in epoch ms; default `Date.now()`. A finite number. */
  now?: number
}

/**
 * The tolerance and clock to compare a signature's time with. A NaN tolerance or clock would make every age
 * comparison false, so a delivery of any age would pass; a negative tolerance would refuse every delivery. Both
 * are the caller's mistake, so they throw a RangeError instead of giving a verdict.
 */
function ageWindow(options: VerifyWebhookOptions): { toleranceSeconds: number; nowMs: number } {
  const toleranceSeconds = options.toleranceSeconds ?? 300
  if (typeof toleranceSeconds !== 'number' || !Number.isFinite(toleranceSeconds) || toleranceSeconds < 0)
    throw new RangeError(`toleranceSeconds must be a finite number >= 0, got ${String(toleranceSeconds)}`)
  const nowMs = options.now ?? Date.now()
  if (typeof nowMs !== 'number' || !Number.isFinite(nowMs))
    throw new RangeError(`now must be a finite epoch time in milliseconds, got ${String(nowMs)}`)
  return { toleranceSeconds, nowMs }
}

function fresh(t: number, options: VerifyWebhookOptions): boolean {
  const { toleranceSeconds, nowMs } = ageWindow(options)
  return Math.abs(nowMs / 1000 - t) <= toleranceSeconds
}

/**
 * Checks the `signature` field of a webhook delivery (spec §5): `t=<unix seconds>,v1=<hex>[,v1=<hex>...]`, each an
 * HMAC-SHA256, keyed with a secret's UTF-8 bytes, over `<t>.` + the RFC 8785 canonical JSON of the body without
 * `signature`. Pass every secret you trust (during a rotation, old and new); any match within the tolerance passes.
 * Accepts the raw body text or the parsed object. Throws a RangeError when `toleranceSeconds` is not a finite
 * number >= 0 or `now` is not a finite number (a NaN tolerance would otherwise accept a delivery of any age).
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
  ageWindow(options)
  let parsed: unknown
  try {
    parsed = typeof body === 'string' ? JSON.parse(body) : body
  } catch {
    return false
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return false
  const { signature, ...unsigned } = parsed as Record<string, unknown>
  const match = typeof signature === 'string' ? BODY_SIGNATURE.exec(signature) : null
  if (!match?.[1] || !match[2]) return false
  const t = Number(match[1])
  if (!fresh(t, options)) return false
  const given = match[2]
    .split(',v1=')
    .filter((hex) => hex !== '')
    .map((hex) => Buffer.from(hex, 'hex'))
  for (const secret of typeof secrets === 'string' ? [secrets] : secrets) {
    let expected: Buffer
    try {
      expected = bodyHmac(secret, t, unsigned)
    } catch {
      return false // a body RFC 8785 cannot represent
    }
    if (given.some((g) => g.length === expected.length && timingSafeEqual(g, expected))) return true
  }
  return false
}

/** Why `constructEvent` refused a delivery. */
export type WebhookErrorReason =
  | 'invalid_json'
  | 'not_an_event'
  | 'missing_signature'
  | 'signature_mismatch'
  | 'header_signature_mismatch'

/** Thrown by `constructEvent` for anything but a genuine, fresh delivery: answer the sender 400 and drop it. */
export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError'
  constructor(
    readonly reason: WebhookErrorReason,
    message: string,
  ) {
    super(message)
  }
}

/** Request headers in any of the forms servers hand them over: a `Headers`, Node's `IncomingHttpHeaders`, a record. */
export type HeadersLike = Headers | Record<string, string | string[] | undefined>

function header(headers: HeadersLike, name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined
  const key = Object.keys(headers).find((k) => k.toLowerCase() === name)
  const value = key === undefined ? undefined : headers[key]
  return Array.isArray(value) ? value[0] : value
}

/**
 * Verifies a webhook delivery and returns its event, typed by `event` (`event.id` is stable across retries: dedupe
 * on it). Give it the raw request body as received (a string or the bytes), the request headers and every secret
 * you trust (during a rotation, old and new). The body's `signature` (spec §5) must match within the tolerance;
 * when the Standard Webhooks headers are present (`webhook-id`, `webhook-timestamp`, `webhook-signature`, what the
 * reference server sends) they must match too. Throws a `WebhookVerificationError` otherwise, and a RangeError for
 * options that cannot bound the age (see `verifyWebhookSignature`).
 */
export function constructEvent(
  body: string | Uint8Array,
  headers: HeadersLike,
  secrets: string | readonly string[],
  options: VerifyWebhookOptions = {},
): WebhookEvent {
  ageWindow(options)
  const raw = typeof body === 'string' ? body : new TextDecoder().decode(body)
  let parsed: unknown
  try {
    parsed = JSON.parse(raw)
  } catch {
    throw new WebhookVerificationError('invalid_json', 'the webhook body is not JSON')
  }
  if (!isEvent(parsed))
    throw new WebhookVerificationError('not_an_event', 'the webhook body has no string id, event and ts')
  if (typeof parsed.signature !== 'string' || !BODY_SIGNATURE.test(parsed.signature))
    throw new WebhookVerificationError('missing_signature', 'the webhook body has no well-formed signature')
  const list = typeof secrets === 'string' ? [secrets] : secrets
  if (!verifyWebhookSignature(parsed, list, options))
    throw new WebhookVerificationError(
      'signature_mismatch',
      'the signature matches no secret given, or its timestamp is outside the tolerance',
    )
  const signature = header(headers, 'webhook-signature')
  if (signature !== undefined && !verifyStandardWebhook(raw, headers, signature, list, options))
    throw new WebhookVerificationError(
      'header_signature_mismatch',
      'webhook-signature matches no secret given for this body, webhook-id and webhook-timestamp',
    )
  return parsed
}

function isEvent(value: unknown): value is WebhookEvent {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const { id, event, ts } = value as Record<string, unknown>
  return typeof id === 'string' && typeof event === 'string' && typeof ts === 'string'
}

/** Standard Webhooks: `v1,<base64>` entries over `<webhook-id>.<webhook-timestamp>.<raw body>`. */
function verifyStandardWebhook(
  raw: string,
  headers: HeadersLike,
  signature: string,
  secrets: readonly string[],
  options: VerifyWebhookOptions,
): boolean {
  const id = header(headers, 'webhook-id')
  const timestamp = header(headers, 'webhook-timestamp')
  if (id === undefined || timestamp === undefined || !/^\d{1,15}$/.test(timestamp)) return false
  const t = Number(timestamp)
  if (!fresh(t, options)) return false
  const given = signature
    .split(' ')
    .filter((entry) => entry.startsWith('v1,'))
    .map((entry) => Buffer.from(entry.slice(3), 'base64'))
  for (const secret of secrets) {
    const expected = standardWebhooksHmac(secret, id, t, raw)
    if (given.some((g) => g.length === expected.length && timingSafeEqual(g, expected))) return true
  }
  return false
}

export interface WebhookDeduplicatorOptions {
  /**
   * How long an event id is remembered after it was claimed, in seconds; default 86,400 (a day: longer than the
   * server's retries of one delivery, and than most manual redelivers).
   */
  windowSeconds?: number
  /** Most ids remembered at once; past it the oldest are forgotten first. Default 100,000. */
  maxEntries?: number
  /** The receiver's clock in epoch ms; default `Date.now`. */
  now?: () => number
}

/**
 * Drops repeats of webhook deliveries in one receiver process, by event id (`event.id`, stable across retries,
 * redelivers and a replica killed mid-attempt). `claim(id)` is true the first time an id is seen within the window
 * (handle the event) and false for a repeat (answer 2xx and do nothing); `release(id)` forgets an id whose handling
 * failed, so the sender's retry is handled. Memory is bounded by the window and `maxEntries`.
 *
 * It remembers in memory only: a restarted receiver, or several receivers behind a balancer, can each handle an
 * event once. Where handling writes to a database, record the id in the same transaction instead (see the
 * `verifyWebhookSignature` example); this is for work with no such store, or as a cheap first filter before it.
 *
 * ```ts
 * const dedupe = new WebhookDeduplicator()
 * const event = constructEvent(rawBody, headers, secrets) // throws on a forged or stale delivery
 * if (!dedupe.claim(event.id)) return respond(204) // a repeat
 * try { await handle(event) } catch (err) { dedupe.release(event.id); throw err }
 * ```
 */
export class WebhookDeduplicator {
  /** Event id to the time (epoch ms) it is forgotten; in claim order, so the oldest come first. */
  private readonly until = new Map<string, number>()
  private readonly windowMs: number
  private readonly maxEntries: number
  private readonly now: () => number

  constructor(options: WebhookDeduplicatorOptions = {}) {
    const windowSeconds = options.windowSeconds ?? 86_400
    const maxEntries = options.maxEntries ?? 100_000
    if (!(windowSeconds > 0)) throw new RangeError('windowSeconds must be a positive number')
    if (!Number.isInteger(maxEntries) || maxEntries < 1)
      throw new RangeError('maxEntries must be a positive integer')
    this.windowMs = windowSeconds * 1000
    this.maxEntries = maxEntries
    this.now = options.now ?? Date.now
  }

  /** True the first time `id` is claimed within the window (handle the event); false for a repeat. */
  claim(id: string): boolean {
    const now = this.now()
    this.forgetExpired(now)
    if (this.until.has(id)) return false
    this.until.set(id, now + this.windowMs)
    // Over the bound: the oldest claims go first (Map keeps insertion order).
    for (const oldest of this.until.keys()) {
      if (this.until.size <= this.maxEntries) break
      this.until.delete(oldest)
    }
    return true
  }

  /** Forgets `id` (its handling failed): the next delivery of the event is handled. */
  release(id: string): void {
    this.until.delete(id)
  }

  /** How many ids are remembered now. */
  get size(): number {
    this.forgetExpired(this.now())
    return this.until.size
  }

  private forgetExpired(now: number): void {
    // Claims are in time order, so the expired ones are at the front (a clock stepped back only keeps ids longer).
    for (const [id, until] of this.until) {
      if (until > now) break
      this.until.delete(id)
    }
  }
}
