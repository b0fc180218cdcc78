/**
 * A deployment that signs the delivered body alone: `v1` is HMAC-SHA256 under the subscription's secret over the
 * body (without its own `signature` member), `t=` carried beside it but not signed. Spec §5.5 fixes HMAC-SHA256 and
 * the field's form; §5 "The exact string that is signed and how the timestamp is checked: not shown" leaves what
 * is signed open, so this is correct, and the core signature check must find the arrangement by itself.
 */
import { createHmac } from 'node:crypto'
import type { Dialect } from '../dialects.js'
import { parseJson } from '../proxy.js'
import { Secrets } from './wire.js'

export function bodySignedDialect(): Dialect {
  const secrets = new Secrets()
  return {
    id: 'body-signed',
    description: 'Webhook signatures over the body alone (the timestamp is sent, not signed)',
    targets: [],
    // Only the webhook checks concern it; the rest of the suite runs through it unchanged.
    request(req) {
      secrets.learn(req)
      return req
    },
    delivery(req) {
      const body = parseJson(req.body)
      if (!body) return req
      const secret = secrets.forDelivery(req)
      if (!secret) return req
      const { signature: _old, ...rest } = body
      const raw = JSON.stringify(rest)
      const v1 = createHmac('sha256', secret).update(raw).digest('hex')
      const t = Math.floor(Date.now() / 1000)
      // The Standard Webhooks headers signed the old arrangement: a deployment signing the body alone sends none.
      const headers = Object.fromEntries(
        Object.entries(req.headers).filter(([k]) => !k.startsWith('webhook-')),
      )
      return { ...req, headers, body: `${raw.slice(0, -1)},"signature":"t=${t},v1=${v1}"}` }
    },
  }
}
