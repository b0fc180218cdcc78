/**
 * What the domain reports to whoever watches the server (Prometheus in the reference server). The domain declares
 * these narrow ports and never learns what is behind them; every method is cheap and synchronous, called after
 * the fact it reports, and must never throw.
 */
import type { RUN_STATUSES } from '../../generated/contract.js'

export type DeliveryAttemptOutcome = 'delivered' | 'failed'

export interface WebhookTelemetry {
  /** One delivery attempt was made (an HTTP call to the receiver); `failed` includes time-outs and refusals. */
  attempted(outcome: DeliveryAttemptOutcome): void
  /** A delivery ran out of attempts (or lost its subscription) and is marked failed for good. */
  gaveUp(): void
}

/** A worker's leases, the runs it drives and the webhook deliveries it sends. */
export type LeaseKind = 'runs' | 'deliveries'

export interface LeaseTelemetry {
  /**
   * One pass of a worker took over `count` leases that another process held and let lapse (a replica that died
   * or stalled): those runs or deliveries resume here.
   */
  takenOver(kind: LeaseKind, count: number): void
}

/** What a metrics scrape reads from the store (which implements it): runs by status, the webhook outbox, the pool. */
export interface StoreGauges {
  runsByStatus(): Promise<Partial<Record<(typeof RUN_STATUSES)[number], number>>>
  outbox(): Promise<{ depth: number; oldestAgeSeconds: number }>
  pool(): { total: number; idle: number; waiting: number }
}

export const NO_WEBHOOK_TELEMETRY: WebhookTelemetry = { attempted() {}, gaveUp() {} }
