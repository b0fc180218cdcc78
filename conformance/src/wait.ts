/** Bounded polling: every wait in the suite ends, and says what it was waiting for when it gives up. */
import { CheckFailure } from './types.js'

/** Sleeps in progress, each with the function that ends it early. */
const sleeping = new Set<() => void>()
let woken = false

export const sleep = (ms: number) =>
  woken
    ? Promise.resolve()
    : new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer)
          sleeping.delete(wake)
          resolve()
        }
        const timer = setTimeout(wake, ms)
        sleeping.add(wake)
      })

/**
 * A run was cut short (--deadline, an interrupt): every sleep of a check still going ends now, and later ones at
 * once, so that check reaches its next request (which the ended run refuses) instead of holding the process.
 * `false` makes sleeps sleep again, for the next run in the same process.
 */
export function wakeSleepers(wake = true): void {
  woken = wake
  if (wake) for (const w of [...sleeping]) w()
}

/** Milliseconds of wall time the deployment or the suite could not use (see giveBackWithheldTime); none by default. */
let withheld: () => number = () => 0

/**
 * A clock of the time a busy machine withheld from the run (its processes' CPU wait), given back to every wait that
 * spans it: a wait gives up after its timeout of time the deployment could use. Only a caller that measures it sets
 * it (the StrykerJS runner, whose shorter mutant waits must not read a starved reference as a stalled one);
 * `undefined` resets it.
 */
export function giveBackWithheldTime(clock: (() => number) | undefined): void {
  withheld = clock ?? (() => 0)
}

/** The time withheld so far (see giveBackWithheldTime), to measure a wait's share of it. */
export function withheldMs(): number {
  return withheld()
}

/**
 * What a wait of `timeoutMs` that began when withheldMs() read `atStart` gets back: the time withheld since, at
 * most its own timeout (a wait at most doubles). A server spinning in a loop is itself always waiting for a CPU on
 * a busy machine: uncapped, its wait would stretch every wait of the suite with it.
 */
export function givenBack(atStart: number, timeoutMs: number): number {
  return Math.min(timeoutMs, Math.max(0, withheld() - atStart))
}

export async function waitUntil<T>(
  what: string,
  probe: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs: number,
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  const withheldAtStart = withheld()
  const left = () => deadline + givenBack(withheldAtStart, timeoutMs) - Date.now()
  let delay = 50
  let last: T
  for (;;) {
    last = await probe()
    if (done(last)) return last
    if (left() <= 0) {
      // The wait is the suite's setting, not the spec's: say which flag lengthens it.
      throw new CheckFailure(
        `gave up after ${timeoutMs} ms waiting for ${what}; last seen: ${short(last)} (if the deployment is merely slower, raise --wait-ms / AGENTOPS_CONFORMANCE_WAIT_MS)`,
      )
    }
    await sleep(Math.min(delay, Math.max(0, left())))
    delay = Math.min(delay * 2, 200)
  }
}

export function short(value: unknown, max = 300): string {
  let text: string
  try {
    text = typeof value === 'string' ? value : JSON.stringify(value)
  } catch {
    text = String(value)
  }
  if (text === undefined) return 'undefined'
  return text.length > max ? `${text.slice(0, max)}…` : text
}
