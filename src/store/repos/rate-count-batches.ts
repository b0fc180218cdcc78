import type { CounterWindow } from '../../domain/limits/types.js'

/** What one counting statement reports for a batch of `n` requests (see RateCounterRepo). */
export interface BatchCount {
  /** The first window's count after the whole batch was added. */
  firstCount: number
  /** The second window's count after the batch's passing requests were added; null when none passed. */
  secondCount: number | null
  /** The second window's count as the statement found it (reported to requests it did not count there). */
  secondCurrent: number
}

/** How many of `n` requests counted together pass a window whose count reached `countAfter`. */
export function passingOf(n: number, quota: number, countAfter: number): number {
  return Math.min(Math.max(quota - (countAfter - n), 0), n)
}

/**
 * Gives each of `n` requests counted in one statement its own figures, exactly as if they had been counted one
 * after another in arrival order: the i-th gets the i-th count of the first window, the first `passing` of them
 * (those within its quota) the next counts of the second window, and the rest the second window's figure without
 * them (a request refused by the burst window is not counted in the hour).
 */
export function shareOut(n: number, firstQuota: number, counted: BatchCount): number[][] {
  const passing = passingOf(n, firstQuota, counted.firstCount)
  const second = counted.secondCount ?? counted.secondCurrent
  const figures: number[][] = []
  for (let i = 0; i < n; i++) {
    const first = counted.firstCount - n + 1 + i
    figures.push([first, i < passing ? second - passing + 1 + i : second])
  }
  return figures
}

interface Waiter {
  windows: readonly CounterWindow[]
  resolve: (used: number[]) => void
  reject: (error: unknown) => void
}

/** A run's version confirmation riding with a workspace's next count (see RateCountBatches.ride). */
interface Rider {
  runId: string
  resolve: (version: string | undefined) => void
  reject: (error: unknown) => void
}

interface Lane {
  busy: boolean
  waiting: Waiter[]
  riders: Rider[]
}

/**
 * Counts `n` requests of one workspace in both windows with one statement (PostgreSQL's, in RateCounterRepo), and
 * reads in the same statement the current row version of each run in `runIds` that belongs to the workspace: the
 * versions by the ids' positions, none for a run the workspace does not have.
 */
export type CountBatch = (
  workspaceId: string,
  windows: readonly [CounterWindow, CounterWindow],
  n: number,
  runIds: readonly string[],
) => Promise<BatchCount & { versions: Map<number, string> }>

/** Version confirmations one counting statement carries at most; more go the group read's way (run-versions.ts). */
export const RIDERS_MAX = 256

/**
 * At most one counting statement in flight per workspace; the requests that arrive meanwhile are counted together
 * by the next one. A workspace's requests all update the same two rows, so separate statements would queue on
 * their row locks, one commit after another, and under many concurrent reads of one workspace the counting would
 * cost more than the rest of the request. A request arriving at an idle workspace is counted at once.
 *
 * A cached GET on PostgreSQL confirms its run's row version too (run-cache.ts). When its workspace's next count is
 * waiting (a statement is in flight and requests are waiting to be counted, its own among them), the confirmation
 * rides with that count (`ride`): one statement instead of two, and no longer wait, since the request waits for its
 * count anyway. Read-your-writes holds as with the group read: a confirmation joins only a statement not sent yet,
 * and PostgreSQL takes the statement's snapshot when it starts, after every request in it arrived.
 */
export class RateCountBatches {
  private readonly lanes = new Map<string, Lane>()

  constructor(private readonly countBatch: CountBatch) {}

  consume(workspaceId: string, windows: readonly [CounterWindow, CounterWindow]): Promise<number[]> {
    return new Promise((resolve, reject) => {
      let lane = this.lanes.get(workspaceId)
      if (!lane) {
        lane = { busy: false, waiting: [], riders: [] }
        this.lanes.set(workspaceId, lane)
      }
      lane.waiting.push({ windows, resolve, reject })
      if (!lane.busy) this.drain(workspaceId, lane)
    })
  }

  /**
   * The run's current row version, read with the workspace's next count: undefined (the caller confirms it another
   * way) unless that count is waiting to be sent, or when it already carries RIDERS_MAX confirmations. The promise
   * resolves to undefined when the workspace has no such run.
   */
  ride(workspaceId: string, runId: string): Promise<string | undefined> | undefined {
    const lane = this.lanes.get(workspaceId)
    if (!lane || lane.waiting.length === 0 || lane.riders.length >= RIDERS_MAX) return undefined
    return new Promise((resolve, reject) => {
      lane.riders.push({ runId, resolve, reject })
    })
  }

  private drain(workspaceId: string, lane: Lane): void {
    const batch = lane.waiting
    if (batch.length === 0) {
      this.lanes.delete(workspaceId)
      return
    }
    const riders = lane.riders
    lane.waiting = []
    lane.riders = []
    lane.busy = true
    // The riders go with the first group (nearly always the only one).
    const counting = groupsOf(batch).map((group, i) => this.count(workspaceId, group, i === 0 ? riders : []))
    void Promise.all(counting).then(() => {
      lane.busy = false
      this.drain(workspaceId, lane)
    })
  }

  /** Never rejects: a failed statement fails the requests it was counting and confirming, and the lane goes on. */
  private async count(workspaceId: string, group: Waiter[], riders: Rider[]): Promise<void> {
    const windows = (group[0] as Waiter).windows as readonly [CounterWindow, CounterWindow]
    try {
      // Each run once, however many requests confirm it.
      const runIds: string[] = []
      const positions = new Map<string, number>()
      const positionOf = riders.map(({ runId }) => {
        let at = positions.get(runId)
        if (at === undefined) {
          at = runIds.length
          positions.set(runId, at)
          runIds.push(runId)
        }
        return at
      })
      const counted = await this.countBatch(workspaceId, windows, group.length, runIds)
      const figures = shareOut(group.length, windows[0].quota, counted)
      for (let i = 0; i < group.length; i++) (group[i] as Waiter).resolve(figures[i] as number[])
      for (let i = 0; i < riders.length; i++) {
        ;(riders[i] as Rider).resolve(counted.versions.get(positionOf[i] as number))
      }
    } catch (error) {
      for (const waiter of group) waiter.reject(error)
      for (const rider of riders) rider.reject(error)
    }
  }
}

/**
 * Waiters counted in the same windows, in arrival order. Nearly always one group; two when a window boundary or a
 * change of the workspace's quotas falls inside a batch.
 */
function groupsOf(batch: Waiter[]): Waiter[][] {
  const groups: Waiter[][] = []
  for (const waiter of batch) {
    const group = groups.find((g) => sameWindows((g[0] as Waiter).windows, waiter.windows))
    if (group) group.push(waiter)
    else groups.push([waiter])
  }
  return groups
}

function sameWindows(a: readonly CounterWindow[], b: readonly CounterWindow[]): boolean {
  return (
    a.length === b.length &&
    a.every((w, i) => {
      const v = b[i] as CounterWindow
      return w.name === v.name && w.start === v.start && w.quota === v.quota
    })
  )
}
