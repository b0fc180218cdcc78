import { outsideUnits } from '../unit-of-work.js'

/** A run asked for by id, in the workspace of the request that asks. */
export interface RunKey {
  workspaceId: string
  id: string
}

/**
 * Reads the current row version of each run in `keys` with ONE statement, sent when called: the versions by the
 * keys' positions, none where the workspace has no such run (src/store/repos/runs.ts versionsOf).
 */
export type ReadVersions = (keys: readonly RunKey[]) => Promise<Map<number, string>>

/** Runs confirmed by one statement at most; more waiting requests go in further statements of the same turn. */
export const GROUP_READ_MAX = 256

interface Waiter {
  resolve: (version: string | undefined) => void
  reject: (error: unknown) => void
}

/**
 * A group read, as group commit is for writes: the row-version confirmations of every cached GET waiting at one
 * moment (PostgreSQL, src/store/repos/run-cache.ts) go out as one statement instead of one each. A statement's
 * cost on a 2-core machine is mostly per statement (postgres.js encoding and parsing it, the backend's Bind,
 * Execute and Sync), not per row, so under load the confirmations cost a fraction of what they did.
 *
 * At most one statement is in flight. A request arriving while none is waits for the end of the event loop's turn
 * (setImmediate), so the requests read in that turn go together; one arriving while a statement is in flight
 * waits for its answer, and goes in the next statement, sent as that answer arrives.
 *
 * Read-your-writes holds as with one statement per request, because a request is never answered from a statement
 * sent before it arrived: each statement is issued after every request in it joined, and PostgreSQL takes a
 * statement's snapshot when it starts, after it was sent, so the snapshot includes every write committed before
 * any of its requests began (a write acknowledged to a client, on this replica or another, before the client sent
 * this GET). A request never joins the statement in flight, whose snapshot may be older than the request.
 */
export class RunVersionReads {
  /** The requests not yet sent, distinct runs in arrival order, each with every request that asked for it. */
  private keys: RunKey[] = []
  private waiters: Waiter[][] = []
  private readonly positions = new Map<string, number>()
  private busy = false
  private scheduled = false

  constructor(
    private readonly read: ReadVersions,
    private readonly max = GROUP_READ_MAX,
  ) {}

  /** The run's current row version, undefined when the workspace has no such run. */
  versionOf(workspaceId: string, id: string): Promise<string | undefined> {
    return new Promise((resolve, reject) => {
      // Keyed by both: a request for another workspace's run must not share the answer of one for its own.
      const key = `${workspaceId}\u0000${id}`
      const at = this.positions.get(key)
      if (at !== undefined) (this.waiters[at] as Waiter[]).push({ resolve, reject })
      else {
        this.positions.set(key, this.keys.length)
        this.keys.push({ workspaceId, id })
        this.waiters.push([{ resolve, reject }])
      }
      if (!this.busy && !this.scheduled) {
        this.scheduled = true
        setImmediate(() => {
          this.scheduled = false
          this.send()
        })
      }
    })
  }

  /** Sends everything waiting now, at most `max` runs per statement; the next send follows the answers. */
  private send(): void {
    if (this.keys.length === 0) {
      this.busy = false
      return
    }
    const keys = this.keys
    const waiters = this.waiters
    this.keys = []
    this.waiters = []
    this.positions.clear()
    this.busy = true
    const reads: Promise<void>[] = []
    for (let from = 0; from < keys.length; from += this.max) {
      reads.push(this.confirm(keys.slice(from, from + this.max), waiters.slice(from, from + this.max)))
    }
    void Promise.all(reads).then(() => this.send())
  }

  /** Never rejects: a failed statement fails the requests it was confirming, with its error, and the reads go on. */
  private async confirm(keys: RunKey[], waiters: Waiter[][]): Promise<void> {
    let versions: Map<number, string>
    try {
      // Sent outside any unit of work: reads in one never come here, and a statement shared by many requests must
      // not run in a transaction, whose uncommitted writes it would see, if a context ever carried one this far.
      versions = await outsideUnits(() => this.read(keys))
    } catch (error) {
      for (const list of waiters) for (const w of list) w.reject(error)
      return
    }
    for (let i = 0; i < waiters.length; i++) {
      const version = versions.get(i)
      for (const w of waiters[i] as Waiter[]) w.resolve(version)
    }
  }
}
