export interface RetryPolicy {
  /** Attempts in all before a delivery is marked failed (design.md: 8). */
  maxAttempts: number
  /** Delay scale of the first retry, in ms (design.md: 5 s). */
  baseMs: number
  /** Largest delay, in ms (design.md: 1 h). */
  capMs: number
}

/** No retry waits longer than an hour (design.md); attempts and base come from the config. */
export const RETRY_CAP_MS = 3_600_000

/** The upper bound of the wait after failed attempt `attempt` (1-based): base·2^(attempt−1), capped. */
export function backoffCeilingMs(attempt: number, policy: RetryPolicy): number {
  // Stryker disable next-line ArithmeticOperator: equivalent to a base four times larger: the base is the operator's (AGENTOPS_WEBHOOK_RETRY_BASE_MS) and §6 says only "exponential backoff", so no suite knows it.
  return Math.min(policy.capMs, policy.baseMs * 2 ** Math.max(0, attempt - 1))
}

/**
 * Exponential backoff with full jitter (uniform in [0, ceiling]): receivers that went down together are not
 * hammered together when they come back.
 */
export function retryDelayMs(
  attempt: number,
  policy: RetryPolicy,
  random: () => number = Math.random,
): number {
  return Math.floor(random() * backoffCeilingMs(attempt, policy))
}
