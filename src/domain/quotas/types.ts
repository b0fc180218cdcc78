/**
 * Everything a workspace can grow, each bounded by a quota: a tier's default, settable per workspace (like the rate
 * limits). The names are the contract's: a refusal's `detail.quota` and the metrics' `quota` label.
 */
export const QUOTA_NAMES = [
  'agents',
  'tools',
  'webhooks',
  'destinations',
  'records_per_connector',
  'stream_subscriptions_per_socket',
  'stream_subscriptions_per_key',
  'stream_sockets_per_key',
  'idempotency_keys',
  'idempotency_bytes',
  'idempotency_answer_bytes',
] as const

export type QuotaName = (typeof QUOTA_NAMES)[number]

export type QuotaLimits = Readonly<Record<QuotaName, number>>

/** A workspace's own quotas, over its tier's defaults. */
export type QuotaOverrides = Partial<Record<QuotaName, number>>

export function isQuotaName(name: string): name is QuotaName {
  return (QUOTA_NAMES as readonly string[]).includes(name)
}
