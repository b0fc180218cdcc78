/**
 * Operators' writes on a busy embedded store. SQLite has one write lock and no queue for it: a writer that finds
 * it taken sleeps and retries, and a server that commits back to back (a long run queue draining, ingest) takes the
 * lock again within microseconds of each COMMIT, so `agentops keys create` slept through every gap and failed with
 * "database is locked" after its 5 s busy timeout.
 *
 * So an operator's process (the CLI) says it is waiting: a file named after its pid in `<db>-operators/` while its
 * BEGIN IMMEDIATE waits. A server looks for such files after its COMMITs (at most every few milliseconds), and while
 * one is there it begins no new transaction, for at most half a second per sighting: the operator's next retry takes
 * the lock, removes its file, and the server goes on (its own next BEGIN waits the operator's short transaction out).
 */
import { existsSync, mkdirSync, readdirSync, rmdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

/** How long a server holds back for one waiting operator at most. */
const YIELD_MAX_MS = 500
/** How often a busy server looks for a waiting operator. */
const LOOK_EVERY_MS = 5
/** A file older than this belongs to an operator that died waiting: ignored and removed. */
const STALE_MS = 10_000

export class OperatorSignal {
  private readonly dir: string
  private lastLook = 0

  constructor(dbPath: string) {
    this.dir = `${dbPath}-operators`
  }

  /** The operator's side: `begin` (a synchronous BEGIN IMMEDIATE) runs while this process is announced as waiting. */
  whileWaiting<T>(begin: () => T): T {
    const withdraw = this.announce()
    try {
      return begin()
    } finally {
      withdraw()
    }
  }

  /** Announces this process as an operator waiting for the write lock; the function returned withdraws it. */
  announce(): () => void {
    const file = join(this.dir, String(process.pid))
    mkdirSync(this.dir, { recursive: true })
    writeFileSync(file, '')
    return () => {
      rmSync(file, { force: true })
      try {
        rmdirSync(this.dir)
      } catch {
        // another operator is still waiting
      }
    }
  }

  /** The server's side, after a COMMIT: whether an operator waits (looked at most every few milliseconds). */
  operatorWaits(): boolean {
    const now = Date.now()
    if (now - this.lastLook < LOOK_EVERY_MS) return false
    this.lastLook = now
    if (!existsSync(this.dir)) return false
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
