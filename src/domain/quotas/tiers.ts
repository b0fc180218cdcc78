import type { Tier } from '../identity.js'
import type { QuotaLimits } from './types.js'

const KIB = 1024
const MIB = 1024 * KIB

/**
 * Each tier's quotas. The stream's per-socket quota is capped again by the server's AGENTOPS_STREAM_MAX_SUBSCRIPTIONS
 * (what one process affords); an answer above `idempotency_answer_bytes` is not stored (src/domain/quotas/
 * idempotency.ts).
 */
export const TIER_QUOTAS: Readonly<Record<Tier, QuotaLimits>> = {
  standard: {
    agents: 100,
    tools: 100,
    webhooks: 20,
    destinations: 20,
    records_per_connector: 100_000,
    stream_subscriptions_per_socket: 100,
    stream_subscriptions_per_key: 500,
    stream_sockets_per_key: 10,
    idempotency_keys: 10_000,
    idempotency_bytes: 64 * MIB,
    idempotency_answer_bytes: 64 * KIB,
  },
  pro: {
    agents: 1_000,
    tools: 1_000,
    webhooks: 100,
    destinations: 100,
    records_per_connector: 1_000_000,
    stream_subscriptions_per_socket: 100,
    stream_subscriptions_per_key: 2_500,
    stream_sockets_per_key: 50,
    idempotency_keys: 100_000,
    idempotency_bytes: 512 * MIB,
    idempotency_answer_bytes: 256 * KIB,
  },
  enterprise: {
    agents: 10_000,
    tools: 10_000,
    webhooks: 1_000,
    destinations: 1_000,
    records_per_connector: 10_000_000,
    stream_subscriptions_per_socket: 100,
    stream_subscriptions_per_key: 10_000,
    stream_sockets_per_key: 200,
    idempotency_keys: 1_000_000,
    idempotency_bytes: 4096 * MIB,
    idempotency_answer_bytes: 1 * MIB,
  },
}
