/**
 * The HMACs of a webhook delivery, the one implementation the server signs with and the client verifies with
 * (dependency-free: node:crypto only). Two signatures cover a delivery:
 *
 * - the body's `signature` field (spec §5): HMAC-SHA256 keyed with a secret's UTF-8 bytes over `<t>.` + the RFC 8785
 *   canonical JSON of the body without `signature`, written `t=<unix seconds>,v1=<hex>[,v1=<hex>...]`;
 * - Standard Webhooks' `webhook-signature` header: HMAC-SHA256 over `<webhook-id>.<webhook-timestamp>.<raw body>`,
 *   written as space-separated `v1,<base64>` entries.
 */
import { createHmac } from 'node:crypto'
import { canonicalize } from './canonical-json.js'

const WHSEC_PREFIX = 'whsec_'

/** The body's `signature` field: `t=<unix seconds>` and one `v1=<hex>` per entry. */
export const BODY_SIGNATURE = /^t=(\d{1,15})((?:,v1=[0-9a-f]{64})+)$/

/** The HMAC of the body's `signature` for one secret: over `<t>.` + the canonical JSON of the unsigned body. */
export function bodyHmac(secret: string, unixSeconds: number, unsigned: Record<string, unknown>): Buffer {
  return createHmac('sha256', secret)
    .update(`${unixSeconds}.${canonicalize(unsigned)}`, 'utf8')
    .digest()
}

/**
 * The Standard Webhooks key: a `whsec_<base64>` secret stands for its decoded bytes (the form the
 * `standardwebhooks` libraries take), any other secret for its UTF-8 bytes (`new Webhook(secret, {format: 'raw'})`).
 */
export function standardWebhooksKey(secret: string): Buffer {
  if (secret.startsWith(WHSEC_PREFIX)) return Buffer.from(secret.slice(WHSEC_PREFIX.length), 'base64')
  return Buffer.from(secret, 'utf8')
}

/** The HMAC of one `webhook-signature` entry: over `<webhook-id>.<webhook-timestamp>.<raw body>`. */
export function standardWebhooksHmac(
  secret: string,
  deliveryId: string,
  unixSeconds: number,
  rawBody: string,
): Buffer {
  return createHmac('sha256', standardWebhooksKey(secret))
    .update(`${deliveryId}.${unixSeconds}.${rawBody}`, 'utf8')
    .digest()
}
