import type { OutboundHttp } from '../outbound.js'
import type { OutboxChannel } from '../outbox/dispatcher.js'
import type { WebhookRepository } from './ports.js'
import { sendWebhook } from './sender.js'
import { signDelivery } from './signing.js'
import type { StoredSecret, WebhookRecord } from './types.js'

/** The secrets that sign a delivery now: the current one plus any still inside its rotation overlap. */
export function activeSecrets(secrets: readonly StoredSecret[], now: number): string[] {
  // Stryker disable next-line EqualityOperator: the millisecond a secret expires in: no check can send a delivery at it
  return secrets.filter((s) => s.expiresAt === null || s.expiresAt > now).map((s) => s.secret)
}

/** Webhook subscriptions as an outbox channel: the listed kinds, signed and POSTed through the outbound port. */
export function webhookChannel(
  webhooks: WebhookRepository,
  outbound: OutboundHttp,
): OutboxChannel<WebhookRecord> {
  return {
    // Stryker disable next-line StringLiteral: equivalent: any name apart from the destinations' keeps this channel's fan-out cursor its own.
    cursorName: 'webhooks',
    // Stryker disable next-line StringLiteral: words of the server's failure log, and of the error logged for a deleted subscription's delivery, whose log no one can read any more.
    noun: 'webhook',
    targets: webhooks,
    wants: (sub, _event, kind) => sub.events.includes(kind),
    send(row, sub, { timeoutMs, signal, now }) {
      const signed = signDelivery(row.id, row.payload, activeSecrets(sub.secrets, now), now)
      return sendWebhook(outbound, sub.url, signed.headers, signed.rawBody, { timeoutMs, signal })
    },
  }
}
