/**
 * Signing of webhook deliveries, with the HMACs and canonical JSON the client verifies with
 * (client/src/webhook-signatures.ts: one implementation for both).
 */

import { canonicalize } from '../../../client/src/canonical-json.js'
import { bodyHmac, standardWebhooksHmac } from '../../../client/src/webhook-signatures.js'

/** A delivery body before signing: every field of the event, never a `signature`. */
export type UnsignedBody = Record<string, unknown>

/**
 * The `signature` body field of spec §5: `t=<unix seconds>,v1=<hex>[,v1=<hex>...]`, one `v1` per active secret.
 * Each hex is HMAC-SHA256 keyed with the secret's UTF-8 bytes over `<t>.` + RFC 8785 JCS of the body without
 * `signature`, so the receiver can recompute it from the parsed JSON whatever its serialiser does.
 */
export function bodySignature(body: UnsignedBody, secrets: readonly string[], unixSeconds: number): string {
  const { signature: _ignored, ...unsigned } = body
  const entries = secrets.map((s) => `v1=${bodyHmac(s, unixSeconds, unsigned).toString('hex')}`)
  return [`t=${unixSeconds}`, ...entries].join(',')
}

/** `webhook-signature`: space-separated `v1,<base64>` entries over `<id>.<timestamp>.<raw body>`. */
export function standardWebhooksSignature(
  deliveryId: string,
  unixSeconds: number,
  rawBody: string,
  secrets: readonly string[],
): string {
  return secrets
    .map((s) => `v1,${standardWebhooksHmac(s, deliveryId, unixSeconds, rawBody).toString('base64')}`)
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
      // Stryker disable next-line StringLiteral: the User-Agent is the reference's own name; no spec sentence is about a delivery's headers but its body's.
      'user-agent': 'agentops-webhooks/1',
      'webhook-id': deliveryId,
      'webhook-timestamp': String(t),
      'webhook-signature': standardWebhooksSignature(deliveryId, t, rawBody, secrets),
    },
  }
}
