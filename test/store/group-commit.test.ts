/**
 * Group commit on the embedded store (src/store/sqlite.ts): work from one turn of the event loop shares one
 * SQLite transaction, each logical transaction in its own savepoint. What must hold: nothing is acknowledged
 * before it is durable (a second connection sees it when the promise resolves), one caller's failure undoes only
 * its own work, a reader never gets data that might still vanish, and a failed COMMIT fails everyone in it.
 */
import { statSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, describe, expect, it } from 'vitest'
import { SqliteDb } from '../../src/store/sqlite/db.js'
import { testTempDir } from '../support/temp.js'

let db: SqliteDb | undefined
let observer: Database.Database | undefined
afterEach(async () => {
  observer?.close()
  observer = undefined
  await db?.close()
  db = undefined
})

/** The store under test, and a second connection to the same file that sees only committed data. */
async function open(): Promise<{ d: SqliteDb; committed: (sql: string) => unknown }> {
  const path = join(testTempDir('group-'), 'g.db')
  db = SqliteDb.open(`sqlite:${path}`)
  await db.exec('CREATE TABLE t (k TEXT PRIMARY KEY, n INTEGER NOT NULL)')
  observer = new Database(path, { readonly: true })
  const o = observer
  return { d: db, committed: (sql) => o.prepare(sql).all() }
}

const count = (committed: (sql: string) => unknown) =>
  (committed('SELECT COUNT(*) AS c FROM t') as { c: number }[])[0]?.c

describe('SQLite group commit', () => {
  it('acknowledges each transaction and write only once another connection can see it', async () => {
    const { d, committed } = await open()
    const seenAtResolve: number[] = []
    await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        (i % 2 === 0
          ? d.transaction(async (tx) => {
              await tx.run('INSERT INTO t (k, n) VALUES ($1, $2)', [`k${i}`, i])
            })
          : d.run('INSERT INTO t (k, n) VALUES ($1, $2)', [`k${i}`, i])
        ).then(() => {
          seenAtResolve.push(
            (committed(`SELECT COUNT(*) AS c FROM t WHERE k = 'k${i}'`) as { c: number }[])[0]?.c ?? 0,
          )
        }),
      ),
    )
    expect(seenAtResolve).toEqual(Array.from({ length: 30 }, () => 1))
    expect(count(committed)).toBe(30)
  })

  it('undoes only the failing transaction of a batch', async () => {
    const { d, committed } = await open()
    const outcomes = await Promise.allSettled([
      d.transaction(async (tx) => tx.run("INSERT INTO t (k, n) VALUES ('a', 1)")),
      d.transaction(async (tx) => {
        await tx.run("INSERT INTO t (k, n) VALUES ('b', 2)")
        throw new Error('handler failed')
      }),
      d.transaction(async (tx) => tx.run("INSERT INTO t (k, n) VALUES ('a', 3)")), // duplicate key
      d.run("INSERT INTO t (k, n) VALUES ('c', 4)"),
    ])
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled'])
    expect(committed('SELECT k, n FROM t ORDER BY k')).toEqual([
      { k: 'a', n: 1 },
      { k: 'c', n: 4 },
    ])
  })

  it("keeps a savepoint's undo pages in memory (temp_store), and a failing transaction still undoes all its pages", async () => {
    const { d, committed } = await open()
    expect(await d.one('SELECT temp_store FROM pragma_temp_store')).toEqual({ temp_store: 2 })
    const outcomes = await Promise.allSettled([
      d.transaction(async (tx) => tx.run("INSERT INTO t (k, n) VALUES ('kept', 1)")),
      d.transaction(async (tx) => {
        // Rows of 2 kB: the undo pages of some hundred pages, more than fit one.
        for (let i = 0; i < 200; i++)
          await tx.run('INSERT INTO t (k, n) VALUES ($1, $2)', [`${i}`.padEnd(2000, 'x'), i])
        throw new Error('handler failed')
      }),
    ])
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected'])
    expect(committed('SELECT k FROM t')).toEqual([{ k: 'kept' }])
  })

  it('holds back a read that saw uncommitted writes until they are committed', async () => {
    const { d, committed } = await open()
    const write = d.run("INSERT INTO t (k, n) VALUES ('w', 1)")
    // Same turn: the read runs inside the open batch, so it sees the write, and must not answer before COMMIT.
    const read = d.one<{ n: number }>("SELECT n FROM t WHERE k = 'w'").then((row) => ({
      row,
      visibleElsewhere: count(committed),
    }))
    await write
    expect(await read).toEqual({ row: { n: 1 }, visibleElsewhere: 1 })
  })

  it('answers reads at once when no write is pending, and a read after a write in the same turn once committed', async () => {
    const { d, committed } = await open()
    await d.run("INSERT INTO t (k, n) VALUES ('x', 1)")
    const reads = await Promise.all([d.one("SELECT n FROM t WHERE k = 'x'"), d.query('SELECT * FROM t')])
    expect(reads[0]).toEqual({ n: 1 })
    // The first read runs on its own snapshot; the write opens a batch; the read after it joins the batch.
    const [, , written] = await Promise.all([
      d.one('SELECT COUNT(*) AS c FROM t'),
      d.run("INSERT INTO t (k, n) VALUES ('y', 2)"),
      d.one<{ c: number }>('SELECT COUNT(*) AS c FROM t'),
    ])
    expect(written).toEqual({ c: 2 })
    expect(count(committed)).toBe(2)
  })

  it('fails every member of a batch whose COMMIT fails, and keeps none of their work', async () => {
    const { d, committed } = await open()
    // A deferred foreign key is checked at COMMIT: the one way to make a COMMIT itself fail on demand.
    await d.exec(
      `CREATE TABLE parent (id TEXT PRIMARY KEY);
       CREATE TABLE child (id TEXT PRIMARY KEY, parent TEXT REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)`,
    )
    await d.exec('PRAGMA foreign_keys = ON')
    const outcomes = await Promise.allSettled([
      d.run("INSERT INTO t (k, n) VALUES ('kept?', 1)"),
      d.transaction(async (tx) => tx.run("INSERT INTO child (id, parent) VALUES ('c', 'missing')")),
      d.one('SELECT COUNT(*) AS c FROM t'),
    ])
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected', 'rejected'])
    expect(count(committed)).toBe(0)
    // The store goes on working afterwards.
    await d.run("INSERT INTO t (k, n) VALUES ('after', 1)")
    expect(count(committed)).toBe(1)
  })
})

describe('SQLite WAL checkpoints', () => {
  it('are taken off the event loop once the server writes steadily: pages reach the database file meanwhile', {
    timeout: 30_000,
  }, async () => {
    const path = join(testTempDir('ckpt-'), 'c.db')
    db = SqliteDb.open(`sqlite:${path}`)
    const d = db
    await d.exec('CREATE TABLE blob (id INTEGER PRIMARY KEY, data TEXT NOT NULL)')
    const before = statSync(path).size
    // 150 separate commits of ~4 kB each: past the hand-over, and under SQLite's own 1000-page trigger, so only
    // the worker's checkpoints can move these pages into the database file before close.
    for (let i = 0; i < 150; i++) await d.run('INSERT INTO blob (data) VALUES ($1)', ['x'.repeat(4000)])
    // Generous: a worker thread starts slowly on a loaded 2-core machine; the loop ends as soon as pages land.
    const deadline = Date.now() + 15_000
    while (statSync(path).size < before + 400_000 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50))
    }
    expect(statSync(path).size).toBeGreaterThan(before + 400_000)
    expect((await d.one<{ n: number }>('SELECT COUNT(*) AS n FROM blob'))?.n).toBe(150)
  })
})
