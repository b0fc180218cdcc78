/**
 * `agentops keys create` / `keys revoke` next to a SQLite server that commits back to back (a run queue draining,
 * ingest) must get the write lock, not sleep through every gap until "database is locked" (src/store/sqlite/operators.ts).
 * Two halves of that, each shown by structure rather than by a time measured:
 *
 * - the server: while an operator is announced as waiting, the writer leaves the lock free between two of its group
 *   commits for a whole turn of the event loop. Without that, a writer whose next work is queued begins its next
 *   batch in the same turn as its COMMIT, so from any other turn the lock is always held: a second connection with
 *   no busy timeout is refused (SQLITE_BUSY) every time it tries, until the load has ended;
 * - the operator: the CLI's own process announces itself while its BEGIN IMMEDIATE waits for the lock.
 *
 * And the whole of it: a real `agentops serve` drains a large queued-run backlog and takes ingest batches while the
 * compiled CLI (spawned asynchronously, in its own process) issues a key and revokes another; both succeed, the new
 * key works and the revoked one is refused. The CLI's durations are printed, not asserted.
 */
import { execFile } from 'node:child_process'
import { statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { migrate } from '../../src/store/migrations/index.js'
import { SqliteDb } from '../../src/store/sqlite/db.js'
import { OperatorSignal } from '../../src/store/sqlite/operators.js'
import { agentopsCli } from '../support/cluster.js'
import { startOperatorLoad } from '../support/operator-load.js'
import { testTempDir } from '../support/temp.js'

/** The server's load: this many writes, each committed in its own group commit, one after the other. */
const LOAD_COMMITS = 3000
/** Writes committed before the operator announces itself, so it arrives at a server that is already busy. */
const BUSY_BEFORE = 100

const CLI = fileURLToPath(new URL('../../bin/agentops.mjs', import.meta.url))
/** Queued runs the real server starts with: a drain of several seconds at its ~2,000 runs/s. */
const BACKLOG = 30_000
/** Ingest clients beside the drain, each sending batches of INGEST_BATCH records back to back. */
const INGEST_CLIENTS = 4
const INGEST_BATCH = 50

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))
const dbPath = (name: string) => join(testTempDir('operator-'), name)

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

  it('waits beyond its busy timeout for a writer that holds the lock longer, and says so', async () => {
    const path = dbPath('long.sqlite')
    const url = `sqlite:${path}`
    const store = SqliteDb.open(url)
    await migrate(store)
    await store.close()
    // One writer holds the lock past the CLI's 5 s busy timeout: until the CLI says it is waiting for it.
    const holder = new Database(path)
    holder.exec('BEGIN IMMEDIATE')
    let released = false
    const release = () => {
      if (!released) holder.exec('COMMIT')
      released = true
    }
    try {
      let stderr = ''
      const began = performance.now()
      const cli = new Promise<{ code: number | null; stdout: string }>((resolve) => {
        const child = execFile(
          process.execPath,
          [CLI, 'keys', 'create', '--workspace', 'ops', '--json', '--database-url', url],
          { timeout: 60_000 },
          (err, stdout) => resolve({ code: err ? (err.code as number | null) : 0, stdout }),
        )
        child.stderr?.on('data', (d: Buffer) => {
          stderr += d.toString()
        })
      })
      let settled = false
      void cli.then(() => {
        settled = true
      })
      // Bounded by the CLI: before the fix it gave up ("database is locked") after its 5 s busy timeout.
      while (!settled && !stderr.includes('waiting for it')) await new Promise((r) => setTimeout(r, 20))
      const waitedMs = Math.round(performance.now() - began)
      const ended = settled
      release()
      const { code, stdout } = await cli
      console.log(
        ended
          ? `[operator] the CLI ended after ${waitedMs} ms while the lock was held`
          : `[operator] the CLI said it was waiting after ${waitedMs} ms; done once the lock was free`,
      )
      expect(stderr).toMatch(/^agentops: the database is busy .* waiting for it, up to 120 s$/m)
      expect(code, stderr).toBe(0)
      expect(JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}')).toMatchObject({
        key_id: expect.stringMatching(/^key_/),
      })
    } finally {
      release()
      holder.close()
    }
  }, 120_000)

  it("leaves a busy server's WAL to the server's checkpoints: an operator's COMMIT does not copy it", async () => {
    const path = dbPath('wal.sqlite')
    // The server's side: a connection that checkpoints on its own schedule (the worker thread), with a WAL well past
    // SQLite's automatic checkpoint threshold of 1,000 pages.
    const server = new Database(path)
    server.pragma('journal_mode = WAL')
    server.pragma('wal_autocheckpoint = 0')
    server.exec('CREATE TABLE load (n INTEGER PRIMARY KEY, pad BLOB NOT NULL)')
    const insert = server.prepare('INSERT INTO load (n, pad) VALUES (?, zeroblob(4096))')
    server.transaction(() => {
      for (let n = 0; n < 2_000; n++) insert.run(n)
    })()
    const fileSize = () => statSync(path).size
    const before = fileSize()
    const operator = SqliteDb.open(`sqlite:${path}`, { operator: true })
    try {
      expect(await operator.run('DELETE FROM load WHERE n = $1', [0])).toBe(1)
      // A checkpoint would have moved the 2,000 pages into the database file (about 8 MB).
      expect(fileSize()).toBe(before)
    } finally {
      await operator.close()
      server.close()
    }
  })

  it('issues and revokes keys with the CLI while a real server drains a large queue and ingests', async () => {
    const load = await startOperatorLoad({
      backlog: BACKLOG,
      revocable: 1,
      ingestClients: INGEST_CLIENTS,
      ingestBatch: INGEST_BATCH,
    })
    try {
      const doomed = load.revocable[0]
      if (!doomed) throw new Error('no revocable key was issued')
      const queuedBefore = load.queued()
      const timed = async (args: string[]) => {
        const began = performance.now()
        const output = await agentopsCli(args, load.url)
        return { output, ms: Math.round(performance.now() - began) }
      }
      const created = await timed(['keys', 'create', '--workspace', 'ops', '--json'])
      const revoked = await timed(['keys', 'revoke', doomed.keyId, '--json'])
      const queuedAfter = load.queued()
      console.log(
        `[operator] keys create ${created.ms} ms, keys revoke ${revoked.ms} ms, while the server drained ${queuedBefore - queuedAfter} queued runs (${queuedAfter} left) and took ${load.batches()} ingest batches`,
      )

      const issued = JSON.parse(created.output.trim().split('\n').at(-1) ?? '{}') as { token?: string }
      expect(JSON.parse(revoked.output.trim())).toEqual({ key_id: doomed.keyId, revoked: true })
      // The load was there for the whole of both commands.
      expect(queuedAfter).toBeGreaterThan(0)
      expect(await load.status('/v1/agents', issued.token ?? '')).toBe(200)
      expect(await load.status('/v1/agents', doomed.token)).toBe(401)
    } finally {
      await load.stop()
    }
  }, 180_000)
})
