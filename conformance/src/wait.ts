/** Bounded polling: every wait in the suite ends, and says what it was waiting for when it gives up. */
import { CheckFailure } from './types.js'

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

export async function waitUntil<T>(
  what: string,
  probe: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs: number,
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let delay = 50
  let last: T
  for (;;) {
    last = await probe()
    if (done(last)) return last
    if (Date.now() >= deadline) {
      // The wait is the suite's setting, not the spec's: say which flag lengthens it.
      throw new CheckFailure(
        `gave up after ${timeoutMs} ms waiting for ${what}; last seen: ${short(last)} (if the deployment is merely slower, raise --wait-ms / AGENTOPS_CONFORMANCE_WAIT_MS)`,
      )
    }
    await sleep(Math.min(delay, Math.max(0, deadline - Date.now())))
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
