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

interface Lane {
  busy: boolean
  waiting: Waiter[]
}

/** Counts `n` requests of one workspace in both windows with one statement (PostgreSQL's, in RateCounterRepo). */
export type CountBatch = (
  workspaceId: string,
  windows: readonly [CounterWindow, CounterWindow],
  n: number,
) => Promise<BatchCount>

/**
 * At most one counting statement in flight per workspace; the requests that arrive meanwhile are counted together
 * by the next one. A workspace's requests all update the same two rows, so separate statements would queue on
 * their row locks, one commit after another: profiled under 50 concurrent reads of one workspace, the counting
 * cost more than the rest of the request. A request arriving at an idle workspace is counted at once.
 */
export class RateCountBatches {
  private readonly lanes = new Map<string, Lane>()

  constructor(private readonly countBatch: CountBatch) {}

  consume(workspaceId: string, windows: readonly [CounterWindow, CounterWindow]): Promise<number[]> {
    return new Promise((resolve, reject) => {
      let lane = this.lanes.get(workspaceId)
      if (!lane) {
        lane = { busy: false, waiting: [] }
        this.lanes.set(workspaceId, lane)
      }
      lane.waiting.push({ windows, resolve, reject })
      if (!lane.busy) this.drain(workspaceId, lane)
    })
  }

  private drain(workspaceId: string, lane: Lane): void {
    const batch = lane.waiting
    if (batch.length === 0) {
      this.lanes.delete(workspaceId)
      return
    }
    lane.waiting = []
    lane.busy = true
    const counting = groupsOf(batch).map((group) => this.count(workspaceId, group))
    void Promise.all(counting).then(() => {
      lane.busy = false
      this.drain(workspaceId, lane)
    })
  }

  /** Never rejects: a failed statement fails the requests it was counting, and the lane goes on. */
  private async count(workspaceId: string, group: Waiter[]): Promise<void> {
    const windows = (group[0] as Waiter).windows as readonly [CounterWindow, CounterWindow]
    try {
      const figures = shareOut(
        group.length,
        windows[0].quota,
        await this.countBatch(workspaceId, windows, group.length),
      )
      for (let i = 0; i < group.length; i++) (group[i] as Waiter).resolve(figures[i] as number[])
    } catch (error) {
      for (const waiter of group) waiter.reject(error)
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
