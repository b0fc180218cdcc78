import type { Clock } from '../clock.js'
import type { Workspace } from '../identity.js'
import type { IdempotencyRepository, RateCounterRepository } from '../ports.js'
import { IDEMPOTENCY_LEASE_MS, IDEMPOTENCY_WINDOW_MS } from './idempotency.js'
import { policiesFor, stateOf, type WindowState, windowStart } from './rate-limit.js'
import type { ClaimResult, StoredResponse } from './types.js'

export interface RateDecision {
  allowed: boolean
  states: WindowState[]
  /** The window that refused the request, when one did. */
  refusedBy?: WindowState
}

export class LimitsService {
  constructor(
    private readonly idempotency: IdempotencyRepository,
    private readonly counters: RateCounterRepository,
    private readonly clock: Clock,
  ) {}

  /**
   * Counts the request in the burst window, then the hourly one. Exactly `quota` requests pass per window.
   * A request refused by the burst window is not counted in the hourly window, so a client that is
   * throttled for seconds does not burn its hour.
   */
  async consume(workspace: Workspace): Promise<RateDecision> {
    const now = this.clock.now()
    const states: WindowState[] = []
    const policies = policiesFor(workspace)
    for (const [i, policy] of policies.entries()) {
      const used = await this.counters.increment(
        workspace.id,
        policy.name,
        windowStart(now, policy.windowSeconds),
      )
      const state = stateOf(policy, now, used)
      states.push(state)
      if (used > policy.quota) {
        // Report the windows not consulted with their current figures, without counting this request there.
        for (const rest of policies.slice(i + 1)) {
          const start = windowStart(now, rest.windowSeconds)
          states.push(stateOf(rest, now, await this.counters.current(workspace.id, rest.name, start)))
        }
        return { allowed: false, states, refusedBy: state }
      }
    }
    return { allowed: true, states }
  }

  claim(workspaceId: string, key: string, fingerprint: string): Promise<ClaimResult> {
    return this.idempotency.claim(
      workspaceId,
      key,
      fingerprint,
      this.clock.now(),
      IDEMPOTENCY_WINDOW_MS,
      IDEMPOTENCY_LEASE_MS,
    )
  }

  complete(workspaceId: string, key: string, response: StoredResponse): Promise<void> {
    return this.idempotency.complete(workspaceId, key, response)
  }

  release(workspaceId: string, key: string): Promise<void> {
    return this.idempotency.release(workspaceId, key)
  }

  /** Drops expired idempotency records and counters of windows long gone. */
  async purge(): Promise<{ keys: number; counters: number }> {
    const now = this.clock.now()
    const keys = await this.idempotency.purgeExpired(now)
    const counters = await this.counters.purgeBefore(now - 2 * 3600 * 1000)
    return { keys, counters }
  }
}
