/**
 * `agentops keys create` / `keys revoke` next to a SQLite server that commits back to back (a run queue draining,
 * ingest) must get the write lock, not sleep through every gap until "database is locked" (src/store/sqlite-operators.ts).
 * Two halves of that, each shown by structure rather than by a time measured:
 *
 * - the server: while an operator is announced as waiting, the writer leaves the lock free between two of its group
 *   commits for a whole turn of the event loop. Without that, a writer whose next work is queued begins its next
 *   batch in the same turn as its COMMIT, so from any other turn the lock is always held: a second connection with
 *   no busy timeout is refused (SQLITE_BUSY) every time it tries, until the load has ended;
 * - the operator: the CLI's own process announces itself while its BEGIN IMMEDIATE waits for the lock.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { migrate } from '../../src/store/migrations/index.js'
import { SqliteDb } from '../../src/store/sqlite.js'
import { OperatorSignal } from '../../src/store/sqlite-operators.js'
import { agentopsCli } from '../support/cluster.js'

/** The server's load: this many writes, each committed in its own group commit, one after the other. */
const LOAD_COMMITS = 3000
/** Writes committed before the operator announces itself, so it arrives at a server that is already busy. */
const BUSY_BEFORE = 100

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))
const dbPath = (name: string) => join(mkdtempSync(join(tmpdir(), 'agentops-operator-')), name)

describe('operator writes on a busy SQLite server', () => {
  it('lets an announced operator in between two group commits while the server is busy', async () => {
    const path = dbPath('busy.sqlite')
    const server = SqliteDb.open(`sqlite:${path}`)
    await server.exec('CREATE TABLE load (n INTEGER PRIMARY KEY)')
    await server.exec('CREATE TABLE ops (n INTEGER PRIMARY KEY, load_commits INTEGER NOT NULL)')
    // The operator: another connection that never sleeps on a busy lock, so each attempt is one look at it.
    const operator = new Database(path)
    operator.pragma('busy_timeout = 0')
    let committed = 0
    let loading = true
    try {
      const load = (async () => {
        try {
          for (let n = 1; n <= LOAD_COMMITS; n++) {
            await server.run('INSERT INTO load (n) VALUES ($1)', [n])
            committed = n
          }
        } finally {
          loading = false
        }
      })()
      while (loading && committed < BUSY_BEFORE) await nextTurn()

      const withdraw = new OperatorSignal(path).announce()
      let refused = 0
      let entered: { atCommit: number; seen: number } | undefined
      try {
        while (!entered) {
          await nextTurn()
          if (!loading) break
          try {
            operator.exec('BEGIN IMMEDIATE')
          } catch (err) {
            if ((err as { code?: string }).code !== 'SQLITE_BUSY') throw err
            refused++
            continue
          }
          // Done in this turn, so the server's writes cannot interleave (it shares this thread).
          const seen = (operator.prepare('SELECT COUNT(*) AS c FROM load').get() as { c: number }).c
          operator.prepare('INSERT INTO ops (n, load_commits) VALUES (1, ?)').run(seen)
          operator.exec('COMMIT')
          entered = { atCommit: committed, seen }
        }
      } finally {
        withdraw()
      }
      await load
      console.log(
        `operator: ${entered ? `in after load commit ${entered.atCommit} of ${LOAD_COMMITS}` : 'never in while the load ran'}, ${refused} attempts refused first`,
      )
      // In while the server still had writes to commit: between two of its group commits, not after the load.
      expect(entered, 'the operator got the write lock while the server was busy').toBeDefined()
      expect(entered?.atCommit).toBeLessThan(LOAD_COMMITS)
      // What it saw was committed by the server; the server went on after it, and lost nothing.
      expect(entered?.seen).toBe(entered?.atCommit)
      expect(await server.one('SELECT COUNT(*) AS c FROM load')).toEqual({ c: LOAD_COMMITS })
      expect(await server.one('SELECT load_commits FROM ops')).toEqual({ load_commits: entered?.seen })
    } finally {
      operator.close()
      await server.close()
    }
  }, 120_000)

  it("announces the CLI's process while its write waits for the lock", async () => {
    const path = dbPath('cli.sqlite')
    const url = `sqlite:${path}`
    const server = SqliteDb.open(url)
    await migrate(server)
    await server.close()
    // A fresh signal per look: the server's own looks are spaced a few milliseconds apart.
    const operatorWaits = () => new OperatorSignal(path).operatorWaits()
    // Another writer holds the lock, so the CLI's first write has to wait for it.
    const holder = new Database(path)
    holder.exec('BEGIN IMMEDIATE')
    let released = false
    const release = () => {
      if (!released) holder.exec('COMMIT')
      released = true
    }
    try {
      const cli = agentopsCli(['keys', 'create', '--workspace', 'ops', '--json'], url)
      let settled = false
      cli.then(
        () => (settled = true),
        () => (settled = true),
      )
      // Bounded by the CLI itself: it gives up after its busy timeout (or its own start-up failing).
      let announced = false
      while (!settled && !announced) {
        announced = operatorWaits()
        if (!announced) await new Promise((r) => setTimeout(r, 10))
      }
      release()
      const output = await cli
      expect(announced, 'the CLI announced itself while its write waited').toBe(true)
      const { key_id } = JSON.parse(output.trim().split('\n').at(-1) ?? '{}') as { key_id?: string }
      expect(key_id).toMatch(/^key_/)
      // Withdrawn once the CLI had the lock: a server no longer holds back for it.
      expect(operatorWaits()).toBe(false)
    } finally {
      release()
      holder.close()
    }
  }, 120_000)
})
