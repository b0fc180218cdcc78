import { createHmac } from 'node:crypto'
import { canonicalize } from '../canonical-json.js'

/** A delivery body before signing: every field of the event, never a `signature`. */
export type UnsignedBody = Record<string, unknown>

const WHSEC_PREFIX = 'whsec_'

/**
 * The `signature` body field of spec §5: `t=<unix seconds>,v1=<hex>[,v1=<hex>...]`, one `v1` per active secret.
 * Each hex is HMAC-SHA256 keyed with the secret's UTF-8 bytes over `<t>.` + RFC 8785 JCS of the body without
 * `signature`, so the receiver can recompute it from the parsed JSON whatever its serialiser does.
 */
export function bodySignature(body: UnsignedBody, secrets: readonly string[], unixSeconds: number): string {
  const { signature: _ignored, ...unsigned } = body
  const signed = `${unixSeconds}.${canonicalize(unsigned)}`
  const entries = secrets.map((s) => `v1=${createHmac('sha256', s).update(signed, 'utf8').digest('hex')}`)
  return [`t=${unixSeconds}`, ...entries].join(',')
}

/**
 * The Standard Webhooks key: a `whsec_<base64>` secret stands for its decoded bytes (the form the
 * `standardwebhooks` libraries take), any other secret for its UTF-8 bytes (`new Webhook(secret, {format: 'raw'})`).
 */
export function standardWebhooksKey(secret: string): Buffer {
  if (secret.startsWith(WHSEC_PREFIX)) return Buffer.from(secret.slice(WHSEC_PREFIX.length), 'base64')
  return Buffer.from(secret, 'utf8')
}

/** `webhook-signature`: space-separated `v1,<base64>` entries over `<id>.<timestamp>.<raw body>`. */
export function standardWebhooksSignature(
  deliveryId: string,
  unixSeconds: number,
  rawBody: string,
  secrets: readonly string[],
): string {
  const signed = `${deliveryId}.${unixSeconds}.${rawBody}`
  return secrets
    .map((s) => `v1,${createHmac('sha256', standardWebhooksKey(s)).update(signed, 'utf8').digest('base64')}`)
    .join(' ')
}

export interface SignedDelivery {
  /** The exact bytes to POST (the canonical JSON of the signed body). */
  rawBody: string
  headers: Record<string, string>
}

/** Signs one attempt: a fresh timestamp each time, the same `webhook-id` on every retry. */
export function signDelivery(
  deliveryId: string,
  body: UnsignedBody,
  secrets: readonly string[],
  nowMs: number,
): SignedDelivery {
  const t = Math.floor(nowMs / 1000)
  const rawBody = canonicalize({ ...body, signature: bodySignature(body, secrets, t) })
  return {
    rawBody,
    headers: {
      'content-type': 'application/json',
      'user-agent': 'agentops-webhooks/1',
      'webhook-id': deliveryId,
      'webhook-timestamp': String(t),
      'webhook-signature': standardWebhooksSignature(deliveryId, t, rawBody, secrets),
    },
  }
}
