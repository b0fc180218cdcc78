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
    const policies = policiesFor(workspace)
    const used = await this.counters.consume(
      workspace.id,
      policies.map((p) => ({
        name: p.name,
        start: windowStart(now, p.windowSeconds),
        windowMs: p.windowSeconds * 1000,
        quota: p.quota,
      })),
    )
    const states = policies.map((p, i) => stateOf(p, now, used[i] ?? 0))
    // The windows after a refusing one report their figures without this request (it was not counted there).
    const refusedBy = states.find((s) => s.used > s.quota)
    return refusedBy ? { allowed: false, states, refusedBy } : { allowed: true, states }
  }

  /** Writes rate counts held in memory to the store (every second and at shutdown). */
  flushCounters(): Promise<void> {
    return this.counters.flush(this.clock.now())
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
