/**
 * Operators' writes on a busy embedded store. SQLite has one write lock and no queue for it: a writer that finds
 * it taken sleeps and retries, and a server that commits back to back (a long run queue draining, ingest) takes the
 * lock again within microseconds of each COMMIT, so `agentops keys create` slept through every gap and failed with
 * "database is locked" after its 5 s busy timeout.
 *
 * So an operator's process (the CLI) says it is waiting: a file named after its pid in `<db>-operators/` while its
 * BEGIN IMMEDIATE waits. A server looks for such files after its COMMITs (at most every 25 ms), and while
 * one is there it begins no new transaction, for at most half a second per sighting: the operator's next retry takes
 * the lock, removes its file, and the server goes on (its own next BEGIN waits the operator's short transaction out).
 *
 * The operator does not give up at its connection's 5 s busy timeout either: a lock held longer than that by one
 * writer (a long transaction, a server migrating the store, another operator's command) would otherwise make the
 * command fail with "database is locked". It tries again, announced afresh each time (so a server never takes its
 * file for a dead operator's), says once that it is waiting, and gives up only after OPERATOR_WAIT_MS in all.
 */
import { mkdirSync, readdirSync, rmdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

/** How long a server holds back for one waiting operator at most. */
const YIELD_MAX_MS = 500
/**
 * How often a busy server looks for a waiting operator: a look is a file-system call, which the keyed POST's profile
 * showed among its costs when made every 5 ms; a waiting operator's BEGIN waits this much longer at most.
 */
const LOOK_EVERY_MS = 25
/** A file older than this belongs to an operator that died waiting: ignored and removed. */
const STALE_MS = 10_000
/** How long an operator's write waits for the lock in all, over busy timeouts of its connection (5 s each). */
export const OPERATOR_WAIT_MS = 120_000

const isBusy = (err: unknown) => (err as { code?: string }).code === 'SQLITE_BUSY'

export class OperatorSignal {
  private readonly dir: string
  private lastLook = 0

  constructor(dbPath: string) {
    this.dir = `${dbPath}-operators`
  }

  /**
   * The operator's side: `begin` (a synchronous BEGIN IMMEDIATE, which waits up to the connection's busy timeout)
   * runs while this process is announced as waiting, again while the lock stays busy, for `totalMs` in all;
   * `onWait` is told once, when the first attempt found the lock busy for its whole timeout.
   */
  whileWaiting<T>(begin: () => T, onWait?: (totalMs: number) => void, totalMs = OPERATOR_WAIT_MS): T {
    const until = Date.now() + totalMs
    for (let attempt = 1; ; attempt++) {
      const withdraw = this.announce()
      try {
        return begin()
      } catch (err) {
        if (!isBusy(err) || Date.now() >= until) throw err
        if (attempt === 1) onWait?.(totalMs)
      } finally {
        withdraw()
      }
    }
  }

  /** Announces this process as an operator waiting for the write lock; the function returned withdraws it. */
  announce(): () => void {
    const file = join(this.dir, String(process.pid))
    // Another operator withdrawing removes the folder when it is empty, which it is between our mkdir and our
    // write, or while a recursive mkdir looks at what it found: either then fails with ENOENT, and the folder is
    // made again (ten `keys create` at once hit both).
    for (let attempt = 1; ; attempt++) {
      try {
        mkdirSync(this.dir, { recursive: true })
        writeFileSync(file, '')
        break
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || attempt >= 100) throw err
      }
    }
    return () => {
      rmSync(file, { force: true })
      try {
        rmdirSync(this.dir)
      } catch {
        // another operator is still waiting
      }
    }
  }

  /** The server's side, after a COMMIT: whether an operator waits (looked at most every LOOK_EVERY_MS). */
  operatorWaits(): boolean {
    const now = Date.now()
    if (now - this.lastLook < LOOK_EVERY_MS) return false
    this.lastLook = now
    // The usual answer is "none": a missing folder answers undefined, no exception.
    if (!statSync(this.dir, { throwIfNoEntry: false })) return false
    return this.waiting(now)
  }

  /** Holds back (the caller holds the store's lock) until no operator waits, at most YIELD_MAX_MS. */
  async yieldToOperators(): Promise<void> {
    const until = Date.now() + YIELD_MAX_MS
    while (Date.now() < until && this.waiting(Date.now())) await new Promise((r) => setTimeout(r, 1))
  }

  private waiting(now: number): boolean {
    let names: string[]
    try {
      names = readdirSync(this.dir)
    } catch {
      return false
    }
    for (const name of names) {
      const file = join(this.dir, name)
      try {
        if (now - statSync(file).mtimeMs < STALE_MS) return true
        rmSync(file, { force: true })
      } catch {
        // gone meanwhile
      }
    }
    return false
  }
}
