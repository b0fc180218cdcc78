/**
 * A synchronous check given a deadline: it runs in a `node:vm` script with a timeout, whose watchdog stops whatever
 * JavaScript runs on this thread once the time is up (the check itself lives in the server's realm; only the call
 * goes through the script). A tool's `output_schema` is a tenant's text, and JSON Schema lets a few kilobytes of it
 * cost time exponential in an answer's depth (`anyOf` alternatives that each descend, chained through `$defs`): no
 * rewrite of the keywords bounds that, the deadline does. Each call starts the watchdog, tens of microseconds.
 */
import { createContext, Script } from 'node:vm'

export type Bounded<T> = { done: true; value: T } | { done: false }

const CALL = new Script('check()', { filename: 'bounded-check' })
const realm = createContext({ check: undefined as (() => unknown) | undefined })

function timedOut(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === 'ERR_SCRIPT_EXECUTION_TIMEOUT'
}

/** `check()`'s value, or `{ done: false }` when it ran past `ms`; any other error it throws is thrown on. */
export function withinDeadline<T>(check: () => T, ms: number): Bounded<T> {
  let result: Bounded<T> = { done: false }
  realm.check = () => {
    result = { done: true, value: check() }
  }
  try {
    CALL.runInContext(realm, { timeout: ms })
    return result
  } catch (err) {
    if (timedOut(err)) return { done: false }
    throw err
  } finally {
    realm.check = undefined
  }
}
