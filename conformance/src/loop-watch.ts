/**
 * Watches this process's own event loop, so a request the suite gives up on can say whether the deployment was slow
 * or the suite's machine was: a loop blocked past a request's deadline makes its timer fire before the answer that
 * came meanwhile is read, and the timeout then says nothing about the deployment.
 */
const TICK_MS = 100
/** Ticks kept: a minute of history, more than any request's timeout. */
const KEPT = 600

export class LoopWatch {
  private readonly at: number[] = []
  private readonly lag: number[] = []
  private timer: NodeJS.Timeout | undefined
  private last = 0
  private users = 0

  /** Starts watching (counted: the watch stops when its last user releases it). */
  acquire(): () => void {
    if (this.users++ === 0) {
      this.last = performance.now()
      this.timer = setInterval(() => this.tick(), TICK_MS)
      // Never what keeps a process alive.
      this.timer.unref()
    }
    let released = false
    return () => {
      if (released) return
      released = true
      if (--this.users === 0) clearInterval(this.timer)
    }
  }

  private tick(): void {
    const now = performance.now()
    this.at.push(now)
    this.lag.push(Math.max(0, now - this.last - TICK_MS))
    this.last = now
    if (this.at.length > KEPT) {
      this.at.shift()
      this.lag.shift()
    }
  }

  /**
   * The longest the loop was blocked since `since` (a `performance.now()` time), including the stretch since the last
   * tick; 0 while nobody watches (no tick to measure from: the loop's history is unknown, not blocked).
   */
  longestBlockSince(since: number): number {
    if (this.users === 0) return 0
    let longest = Math.max(0, performance.now() - this.last - TICK_MS)
    for (let i = this.at.length - 1; i >= 0 && (this.at[i] ?? 0) >= since; i--)
      longest = Math.max(longest, this.lag[i] ?? 0)
    return Math.round(longest)
  }
}

/** One watch for the whole process: the loop it watches is one too. */
export const loopWatch = new LoopWatch()
