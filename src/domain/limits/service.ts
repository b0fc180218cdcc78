import type { Clock } from '../clock.js'
import type { Workspace } from '../identity.js'
import type { RateCounterRepository } from './ports.js'
import { policiesFor, stateOf, type WindowPolicy, type WindowState, windowStart } from './rate-limit.js'
import type { CounterWindow } from './types.js'

export interface RateDecision {
  allowed: boolean
  /** The workspace's windows; the same array for every request while the workspace's settings stay the same. */
  policies: readonly WindowPolicy[]
  states: WindowState[]
  /** The window that refused the request, when one did. */
  refusedBy?: WindowState
}

function windowsOf(policies: readonly WindowPolicy[], now: number): CounterWindow[] {
  return policies.map((p) => ({
    name: p.name,
    start: windowStart(now, p.windowSeconds),
    windowMs: p.windowSeconds * 1000,
    quota: p.quota,
  }))
}

function decide(policies: readonly WindowPolicy[], now: number, used: readonly number[]): RateDecision {
  const states = policies.map((p, i) => stateOf(p, now, used[i] ?? 0))
  // The windows after a refusing one report their figures without this request (it was not counted there).
  const refusedBy = states.find((s) => s.used > s.quota)
  return refusedBy ? { allowed: false, policies, states, refusedBy } : { allowed: true, policies, states }
}

/** See LimitsService.hasHeadroom. */
const HEADROOM_SHARE = 0.1

export class LimitsService {
  /** By workspace record, so an entry goes with the record when the verified-key cache reads it again. */
  private readonly headroom = new WeakMap<Workspace, boolean>()

  constructor(
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
    const decision = decide(
      policies,
      now,
      await this.counters.consume(workspace.id, windowsOf(policies, now)),
    )
    this.headroom.set(
      workspace,
      decision.states.every((s) => s.remaining > s.quota * HEADROOM_SHARE),
    )
    return decision
  }

  /**
   * Whether this replica last saw the workspace well inside every window (more than a tenth of each quota left).
   * Only then may a read run while its request is still being counted (the HTTP rate-limit middleware): a client
   * at or near its limit is counted first, so its refused requests read nothing.
   */
  hasHeadroom(workspace: Workspace): boolean {
    return this.headroom.get(workspace) === true
  }

  /**
   * `consume` answered without waiting, where the counters can (the embedded store's, once the workspace's windows
   * are loaded); undefined, with nothing counted, otherwise. The HTTP middleware then costs no promise.
   */
  consumeNow(workspace: Workspace): RateDecision | undefined {
    if (!this.counters.consumeNow) return undefined
    const now = this.clock.now()
    const policies = policiesFor(workspace)
    const used = this.counters.consumeNow(workspace.id, windowsOf(policies, now))
    return used && decide(policies, now, used)
  }

  /** Writes rate counts held in memory to the store (every second and at shutdown). */
  flushCounters(): Promise<void> {
    return this.counters.flush(this.clock.now())
  }

  /** Drops counters of windows long gone. */
  async purge(): Promise<{ counters: number }> {
    return { counters: await this.counters.purgeBefore(this.clock.now() - 2 * 3600 * 1000) }
  }
}
