import { ApiError } from '../errors.js'
import type { Workspace } from '../identity.js'
import { TIER_QUOTAS } from './tiers.js'
import type { QuotaName, QuotaOverrides } from './types.js'

/**
 * A workspace's quota: its own setting, else its tier's default; never above the server's ceiling for it, when the
 * server sets one (AGENTOPS_STREAM_MAX_SUBSCRIPTIONS for `stream_subscriptions_per_socket`).
 */
export function quotaLimit(workspace: Workspace, quota: QuotaName, ceilings: QuotaOverrides = {}): number {
  const limit = workspace.quotas?.[quota] ?? TIER_QUOTAS[workspace.tier][quota]
  const ceiling = ceilings[quota]
  return ceiling === undefined ? limit : Math.min(limit, ceiling)
}

const WHAT: Record<QuotaName, string> = {
  agents: 'agents',
  tools: 'active tools',
  webhooks: 'webhook subscriptions',
  destinations: 'destinations',
  records_per_connector: 'records in this connector',
  stream_subscriptions_per_socket: 'topics on this connection',
  stream_subscriptions_per_key: "topics on this key's connections",
  stream_sockets_per_key: 'open stream connections of this key',
  idempotency_keys: 'stored Idempotency-Key answers',
  idempotency_bytes: 'bytes of stored Idempotency-Key answers',
  idempotency_answer_bytes: 'bytes in one stored Idempotency-Key answer',
}

const REMEDY: Record<QuotaName, string> = {
  agents: 'delete one first',
  tools: 'retire one first',
  webhooks: 'delete one first',
  destinations: 'delete one first',
  records_per_connector: 'use another connector or ask the operator for more',
  stream_subscriptions_per_socket: 'unsubscribe from one first',
  stream_subscriptions_per_key: 'unsubscribe from one first, on any connection of this key',
  stream_sockets_per_key: 'close one first or use another key',
  idempotency_keys: 'stored answers expire 24 h after their request; retry without the key or later',
  idempotency_bytes: 'stored answers expire 24 h after their request; retry without the key or later',
  idempotency_answer_bytes: 'send the request without an Idempotency-Key',
}

/**
 * The one refusal of every quota (403 quota_exceeded): the quota's name, its limit and what is used in `detail`;
 * `requested` when the refused amount is more than one (a batch, an answer's bytes).
 */
export function quotaExceeded(quota: QuotaName, limit: number, used: number, requested = 1): ApiError {
  if (quota === 'idempotency_answer_bytes') {
    // `used` is the answer's own size: the quota bounds each answer, not a sum.
    return new ApiError(
      'quota_exceeded',
      `This answer is ${used} bytes, over the ${limit}-byte limit of one stored Idempotency-Key answer, so the key cannot keep its promise; ${REMEDY[quota]}`,
      { quota, limit, used },
    )
  }
  return new ApiError(
    'quota_exceeded',
    `The ${WHAT[quota]} quota is ${limit} and ${used} ${used === 1 ? 'is' : 'are'} used; ${REMEDY[quota]}`,
    { quota, limit, used, ...(requested === 1 ? {} : { requested }) },
  )
}
