import type Database from 'better-sqlite3'
import type { QuotaCount, UsageLedger } from '../db.js'

interface Entry {
  workspaceId: string
  quota: string
  scope: string
  used: number
}

const READ = 'SELECT used FROM quota_usage WHERE workspace_id = ? AND quota = ? AND scope = ?'
const WRITE = `INSERT INTO quota_usage (workspace_id, quota, scope, used) VALUES (?, ?, ?, ?)
  ON CONFLICT (workspace_id, quota, scope) DO UPDATE SET used = excluded.used`

/**
 * Quota counts of SQLite's open batch (src/store/sqlite/db.ts), kept in memory and written once per usage row at
 * the batch's COMMIT instead of one upsert per counted write: under load a batch holds many keyed writes of one
 * workspace, each counting its agent and its stored answer.
 *
 * Exact as the rows: the batch holds SQLite's write lock from its BEGIN to its COMMIT, so no other process changes a
 * usage row meanwhile, and a row is read at its first count in the batch. Every other statement that names
 * `quota_usage` (a give-back, a read of the usage, a purge) first has the pending counts written
 * (`flush`, called by the statement layer), so it sees and changes the rows as if each count had been written at
 * once. A logical transaction's savepoint takes its counts with it: `mark` at its start, `keep` when it is
 * released, `undo` when it is rolled back (the rows then are as they were at `mark`, and so is this).
 */
export class SqliteUsageLedger implements UsageLedger {
  private entries = new Map<string, Entry>()
  /** The pending counts as they were at the open savepoint's start; null outside a savepoint. */
  private atMark: Map<string, Entry> | null = null
  /** Prepared at first use: the server opens its store before the migrations create the table. */
  private statements: { read: Database.Statement; write: Database.Statement } | null = null

  constructor(private readonly raw: Database.Database) {}

  private get prepared(): { read: Database.Statement; write: Database.Statement } {
    this.statements ??= { read: this.raw.prepare(READ).pluck(), write: this.raw.prepare(WRITE) }
    return this.statements
  }

  /** Counts only inside a transaction, whose COMMIT writes them. */
  get active(): boolean {
    return this.raw.inTransaction
  }

  take(counts: readonly QuotaCount[]): { taken: boolean; used: number[] } {
    const pairs = counts.map((count) => ({ count, entry: this.entry(count) }))
    const taken = pairs.every(({ count, entry }) => entry.used + count.amount <= count.limit)
    if (taken) for (const { count, entry } of pairs) entry.used += count.amount
    return { taken, used: pairs.map(({ entry }) => entry.used) }
  }

  /** Writes the pending counts to their rows (in the open transaction) and forgets them. */
  flush(): void {
    if (this.entries.size === 0) return
    const pending = this.entries
    this.entries = new Map()
    // Written inside the open savepoint, if any: rolled back to it, the rows lose these writes and `undo` brings the
    // counts pending at its start back, so the two stay one.
    const { write } = this.prepared
    for (const e of pending.values()) write.run(e.workspaceId, e.quota, e.scope, e.used)
  }

  mark(): void {
    const copy = new Map<string, Entry>()
    for (const [k, e] of this.entries)
      copy.set(k, { workspaceId: e.workspaceId, quota: e.quota, scope: e.scope, used: e.used })
    this.atMark = copy
  }

  keep(): void {
    this.atMark = null
  }

  undo(): void {
    this.entries = this.atMark ?? new Map()
    this.atMark = null
  }

  /** The batch rolled back: nothing counted in it stands. */
  discard(): void {
    this.entries = new Map()
    this.atMark = null
  }

  private entry(c: QuotaCount): Entry {
    const key = `${c.workspaceId}\u0000${c.quota}\u0000${c.scope}`
    let e = this.entries.get(key)
    if (!e) {
      const row = this.prepared.read.get(c.workspaceId, c.quota, c.scope)
      e = { workspaceId: c.workspaceId, quota: c.quota, scope: c.scope, used: Number(row ?? 0) }
      this.entries.set(key, e)
    }
    return e
  }
}
