/** Every time read goes through a Clock so tests can move time (idempotency windows, rate limits, retries). */
export interface Clock {
  now(): number
}

export const systemClock: Clock = { now: () => Date.now() }

/** A clock tests can move by hand. */
export class ManualClock implements Clock {
  constructor(private current = Date.UTC(2026, 0, 1)) {}
  now(): number {
    return this.current
  }
  advance(ms: number): void {
    this.current += ms
  }
  set(ms: number): void {
    this.current = ms
  }
}

/** The last instant formatted: the timestamps of one request's answer, row and event are mostly one instant. */
let lastMs = Number.NaN
let lastText = ''

export function toRfc3339(ms: number): string {
  // NaN never equals itself, so an invalid time still reaches toISOString and its RangeError.
  if (ms !== lastMs) {
    lastText = new Date(ms).toISOString()
    lastMs = ms
  }
  return lastText
}

export function toRfc3339OrNull(ms: number | null | undefined): string | null {
  return ms === null || ms === undefined ? null : toRfc3339(ms)
}
