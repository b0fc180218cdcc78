import type { CounterWindow } from './types.js'

/**
 * Rate counters. Counts one request in each window in order, and stops counting after the first window it
 * overflows (so a request the burst window refuses does not burn the hour). Answers each window's count:
 * including this request where it was counted, the current figure where it was not.
 */
export interface RateCounterRepository {
  consume(workspaceId: string, windows: readonly CounterWindow[]): Promise<number[]>
  /**
   * `consume` without waiting, where counts live in memory: undefined (nothing counted) when a window must be read
   * from the store first, or when the counts are not this process's to keep.
   */
  consumeNow?(workspaceId: string, windows: readonly CounterWindow[]): number[] | undefined
  /** Persists counts still held in memory (no-op where every count is already in the store). */
  flush(now: number): Promise<void>
  purgeBefore(windowStart: number): Promise<number>
}
