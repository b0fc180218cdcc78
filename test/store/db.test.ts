import Database from 'better-sqlite3'
import { afterEach, describe, expect, it } from 'vitest'
import type { Db } from '../../src/store/db.js'
import { migrate } from '../../src/store/migrations/index.js'
import { openDb, storeKind } from '../../src/store/open.js'
import type { PostgresDb } from '../../src/store/postgres/db.js'
import { EventRepo } from '../../src/store/repos/events.js'
import { StatementCache, translatePlaceholders } from '../../src/store/sqlite/statements.js'
import { backends } from '../support/backends.js'
import { Gate } from '../support/gate.js'

describe('the store a database URL names', () => {
  it.each([
    ['postgres://u:p@h:5432/db', 'postgres'],
    ['postgresql://h/db', 'postgres'],
    ['sqlite:./.agentops/agentops.db', 'sqlite'],
    ['sqlite:///var/lib/agentops.db', 'sqlite'],
    ['file:/tmp/a.db', 'sqlite'],
    [':memory:', 'sqlite'],
    ['./data/agentops.db', 'sqlite'],
    ['C:\\data\\agentops.db', 'sqlite'],
  ] as const)('%s is %s', (url, kind) => {
    expect(storeKind(url)).toBe(kind)
  })

  it.each(['mysql://u:secret@h/db', 'postgres:/h/db', 'redis://h'])(
    'refuses %s instead of making it a file, without echoing it',
    async (url) => {
      await expect(openDb(url)).rejects.toThrow(/must be sqlite:<file> or postgres:\/\//)
      await expect(openDb(url)).rejects.not.toThrow(/secret/)
    },
  )
})

describe('placeholder translation', () => {
  it('reorders repeated and out-of-order $n parameters for SQLite', () => {
    const t = translatePlaceholders('SELECT $2, $1, $2', ['a', 'b'])
    expect(t.sql).toBe('SELECT ?, ?, ?')
    expect(t.params).toEqual(['b', 'a', 'b'])
  })
  it('binds booleans as 0/1 and undefined as NULL', () => {
    expect(translatePlaceholders('SELECT $1, $2, $3', [true, false, undefined]).params).toEqual([1, 0, null])
  })
})

describe('SQLite statement cache', () => {
  it('prepares a text once, keeps its placeholder order, and stays within its bound', () => {
    const raw = new Database(':memory:')
    const cache = new StatementCache(raw, 3)
    const first = cache.get('SELECT $2 AS b, $1 AS a, $2 AS c')
    expect(cache.get('SELECT $2 AS b, $1 AS a, $2 AS c')).toBe(first)
    expect(first.order).toEqual([1, 0, 1])
    const params = ['x', 'y'] // $1, $2
    // Rows come back as arrays and are made into objects by the entry's compiled builder.
    const row = first.stmt.get(...first.order.map((n) => params[n])) as unknown[]
    expect(row).toEqual(['y', 'x', 'y'])
    expect(first.build(row)).toEqual({ b: 'y', a: 'x', c: 'y' })
    for (let i = 0; i < 10; i++) cache.get(`SELECT ${i}`)
    expect(cache.size).toBe(3)
    expect(cache.get('SELECT $2 AS b, $1 AS a, $2 AS c')).not.toBe(first) // evicted, prepared again
    raw.close()
  })
})

describe.each(backends())('Db on $name', (backend) => {
  let db: Db | undefined
  afterEach(async () => {
    await db?.close()
    db = undefined
  })

  it('migrates idempotently', async () => {
    const url = await backend.freshUrl()
    db = await openDb(url)
    const first = await migrate(db)
    expect(first.length).toBeGreaterThan(0)
    expect(await migrate(db)).toEqual([])
  })

  it('applies each migration in its own transaction: one that fails half-way leaves nothing behind', async () => {
    db = await openDb(await backend.freshUrl())
    const good = { id: '900_good', sql: 'CREATE TABLE good_t (k TEXT PRIMARY KEY)' }
    const broken = {
      id: '901_broken',
      sql: 'CREATE TABLE half_t (k TEXT PRIMARY KEY);\nCREATE TABLE half_t (k TEXT PRIMARY KEY);',
    }
    await expect(migrate(db, [good, broken])).rejects.toThrow()
    const applied = (await db.query<{ id: string }>('SELECT id FROM schema_migrations ORDER BY id')).map(
      (r) => r.id,
    )
    expect(applied).toEqual(['900_good'])
    await db.query('SELECT k FROM good_t')
    // The first statement of the failed migration was rolled back with it.
    await expect(db.query('SELECT k FROM half_t')).rejects.toThrow()
    // Fixed, it is applied whole on the next run.
    const fixed = { id: '901_broken', sql: 'CREATE TABLE half_t (k TEXT PRIMARY KEY);' }
    expect(await migrate(db, [good, fixed])).toEqual(['901_broken'])
    await db.query('SELECT k FROM half_t')
  })

  it('runs the same SQL: BIGSERIAL, RETURNING, ON CONFLICT, JSON text, BIGINT numbers', async () => {
    db = await openDb(await backend.freshUrl())
    await db.exec(
      'CREATE TABLE t (seq BIGSERIAL PRIMARY KEY, k TEXT UNIQUE NOT NULL, n BIGINT NOT NULL, j TEXT)',
    )
    const a = await db.one<{ seq: number }>('INSERT INTO t (k, n, j) VALUES ($1, $2, $3) RETURNING seq', [
      'a',
      1_700_000_000_000,
      '{"x":1}',
    ])
    const b = await db.one<{ seq: number }>('INSERT INTO t (k, n) VALUES ($1, $2) RETURNING seq', ['b', 2])
    expect(typeof a?.seq).toBe('number')
    expect(b!.seq).toBeGreaterThan(a!.seq)
    const changed = await db.run('INSERT INTO t (k, n) VALUES ($1, $2) ON CONFLICT (k) DO NOTHING', ['a', 3])
    expect(changed).toBe(0)
    const up = await db.one<{ n: number }>(
      'INSERT INTO t (k, n) VALUES ($1, 1) ON CONFLICT (k) DO UPDATE SET n = t.n + 1 RETURNING n',
      ['a'],
    )
    expect(up?.n).toBe(1_700_000_000_001)
    const row = await db.one<{ n: number; j: string }>('SELECT n, j FROM t WHERE k = $1', ['a'])
    expect(row).toEqual({ n: 1_700_000_000_001, j: '{"x":1}' })
  })

  it('rolls a failed transaction back and keeps concurrent transactions apart', async () => {
    db = await openDb(await backend.freshUrl())
    const d = db
    await d.exec('CREATE TABLE c (k TEXT PRIMARY KEY, n BIGINT NOT NULL)')
    await d.run('INSERT INTO c (k, n) VALUES ($1, 0)', ['x'])
    await expect(
      d.transaction(async (tx) => {
        await tx.run('UPDATE c SET n = n + 100 WHERE k = $1', ['x'])
        throw new Error('boom')
      }),
    ).rejects.toThrow('boom')
    expect((await d.one<{ n: number }>('SELECT n FROM c'))?.n).toBe(0)
    await Promise.all(
      Array.from({ length: 20 }, () =>
        d.transaction(async (tx) => {
          await tx.run('UPDATE c SET n = n + 1 WHERE k = $1', ['x'])
        }),
      ),
    )
    expect((await d.one<{ n: number }>('SELECT n FROM c'))?.n).toBe(20)
  })

  it('a statement issued while a transaction awaits sees neither its uncommitted writes nor a torn state', async () => {
    db = await openDb(await backend.freshUrl())
    const d = db
    await d.exec('CREATE TABLE v (k TEXT PRIMARY KEY, n BIGINT NOT NULL)')
    await d.run('INSERT INTO v (k, n) VALUES ($1, 0)', ['x'])
    const reached = new Gate()
    reached.hold()
    const held = new Gate()
    held.hold()
    const tx = d.transaction(async (t) => {
      await t.run('UPDATE v SET n = 1 WHERE k = $1', ['x'])
      reached.release()
      await held.pass()
      await t.run('UPDATE v SET n = 2 WHERE k = $1', ['x'])
    })
    await reached.pass()
    const read = d.one<{ n: number }>('SELECT n FROM v WHERE k = $1', ['x'])
    const outcome = await Promise.race([
      read.then((r) => Number(r?.n)),
      new Promise((r) => setTimeout(r, 50, 'waiting')),
    ])
    // SQLite queues the read behind the transaction (and its result behind the COMMIT); PostgreSQL answers from
    // the committed snapshot, at once unless a loaded machine delays it past the race.
    if (d.dialect === 'sqlite') expect(outcome).toBe('waiting')
    else expect([0, 'waiting']).toContain(outcome)
    held.release()
    await tx
    const after = Number((await read)?.n)
    if (d.dialect === 'sqlite') expect(after).toBe(2)
    else expect([0, 2]).toContain(after)
  })

  it('reuses prepared statements across calls with different parameters and types', async () => {
    db = await openDb(await backend.freshUrl())
    const d = db
    await d.exec('CREATE TABLE p (k TEXT PRIMARY KEY, n BIGINT, b INTEGER)')
    const insert = 'INSERT INTO p (k, n, b) VALUES ($1, $2, $3)'
    for (let i = 0; i < 30; i++) await d.run(insert, [`k${i}`, i % 3 === 0 ? null : i, i % 2 === 0])
    const read = 'SELECT k, n, b FROM p WHERE k = $1'
    const rows = await Promise.all(Array.from({ length: 30 }, (_, i) => d.one(read, [`k${i}`])))
    rows.forEach((row, i) => {
      expect(row).toEqual({ k: `k${i}`, n: i % 3 === 0 ? null : i, b: i % 2 === 0 ? 1 : 0 })
    })
    expect(await d.one(read, ['missing'])).toBeUndefined()
    await d.transaction(async (tx) => {
      expect(await tx.run('UPDATE p SET n = $2 WHERE k = $1', ['k1', 100])).toBe(1)
      expect((await tx.one<{ n: number }>(read, ['k1']))?.n).toBe(100)
    })
  })

  it('keeps transactions whole when BEGIN travels with the first statement, failing or not', async () => {
    db = await openDb(await backend.freshUrl())
    const d = db
    await d.exec('CREATE TABLE t (k TEXT PRIMARY KEY, n BIGINT NOT NULL)')
    const insert = 'INSERT INTO t (k, n) VALUES ($1, $2)'
    const UNIQUE = /duplicate key|UNIQUE constraint/
    // Parse the text on every pooled connection first, so each transaction below sends BEGIN with it.
    await Promise.all(Array.from({ length: 12 }, (_, i) => d.run(insert, [`warm${i}`, i])))
    await d.run('DELETE FROM t')
    await d.transaction((tx) => tx.run(insert, ['first', 1]))
    for (let round = 0; round < 3; round++) {
      await expect(
        d.transaction(async (tx) => {
          await tx.run(insert, [`dup${round}`, 1])
          await tx.run(insert, [`dup${round}`, 2]) // duplicate key: the whole transaction is undone
        }),
      ).rejects.toThrow(UNIQUE)
      // The first statement itself fails, in the same group as BEGIN; the connection goes back clean.
      await expect(d.transaction((tx) => tx.run(insert, ['first', 9]))).rejects.toThrow(UNIQUE)
      expect(await d.transaction(async () => 'no statements')).toBe('no statements')
    }
    const rows = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        d.transaction(async (tx) => {
          await tx.run(insert, [`k${i}`, i])
          return tx.one<{ n: number }>('SELECT n FROM t WHERE k = $1', [`k${i}`])
        }),
      ),
    )
    expect(rows.map((r) => r?.n)).toEqual(Array.from({ length: 20 }, (_, i) => i))
    expect((await d.query('SELECT k FROM t WHERE k LIKE $1', ['dup%'])).length).toBe(0)
    expect((await d.one<{ c: number }>('SELECT COUNT(*) AS c FROM t'))?.c).toBe(21)
  })

  it('hands out event seqs in commit order, whatever the order of the appends', async () => {
    db = await openDb(await backend.freshUrl())
    const d = db
    await migrate(d)
    const event = (id: string) => ({ id, workspaceId: 'w', kind: 'k', ts: 1, subjectId: 's', data: {} })
    const committed: string[] = []
    const reached = new Gate()
    reached.hold()
    const held = new Gate()
    held.hold()
    const first = d
      .transaction(async (tx) => {
        await new EventRepo(tx, d.dialect).append(event('evt_first'))
        reached.release()
        await held.pass()
      })
      .then(() => committed.push('evt_first'))
    await reached.pass()
    const second = d
      .transaction((tx) => new EventRepo(tx, d.dialect).append(event('evt_second')))
      .then(() => committed.push('evt_second'))
    // SQLite serialises whole transactions, so the second waits for the first; on PostgreSQL the first's append holds
    // no lock until its COMMIT, so the second commits while the first is open (waited for: a lock would hang it).
    if (d.dialect !== 'sqlite') await second
    held.release()
    await Promise.all([first, second])
    expect(committed).toEqual(
      d.dialect === 'sqlite' ? ['evt_first', 'evt_second'] : ['evt_second', 'evt_first'],
    )
    expect((await new EventRepo(d, d.dialect).after(0, 10)).map((e) => e.id)).toEqual(committed)
  })

  it('never shows an event before one with a lower seq that is still to commit (concurrent appenders)', async () => {
    db = await openDb(await backend.freshUrl())
    const d = db
    await migrate(d)
    const event = (id: string) => ({ id, workspaceId: 'w', kind: 'k', ts: 1, subjectId: 's', data: {} })
    const seen: number[][] = []
    let writing = true
    const poller = (async () => {
      // Bounded: the writers finish within a few hundred milliseconds.
      for (let i = 0; writing && i < 5000; i++) {
        seen.push((await new EventRepo(d, d.dialect).after(0, 1000)).map((e) => e.seq))
      }
    })()
    for (let round = 0; round < 4; round++) {
      await Promise.all(
        Array.from({ length: 60 }, (_, i) =>
          d.transaction(async (tx) => {
            const events = new EventRepo(tx, d.dialect)
            await tx.run('SELECT 1')
            await events.append(event(`evt_${round}_${i}`))
            if (i % 3 === 0) await events.append(event(`evt_${round}_${i}b`))
          }),
        ),
      )
    }
    writing = false
    await poller
    const all = (await new EventRepo(d, d.dialect).after(0, 1000)).map((e) => e.seq)
    expect(all).toHaveLength(320)
    // Every snapshot a reader took is a prefix of the final log: no seq became visible before a lower one.
    for (const snapshot of seen) expect(snapshot).toEqual(all.slice(0, snapshot.length))
  })

  it('rolls back the whole transaction when an event held back for the commit fails', async () => {
    db = await openDb(await backend.freshUrl())
    const d = db
    await migrate(d)
    await d.exec('CREATE TABLE marks (k TEXT PRIMARY KEY)')
    const event = { id: 'evt_dup', workspaceId: 'w', kind: 'k', ts: 1, subjectId: 's', data: {} }
    await d.transaction((tx) => new EventRepo(tx, d.dialect).append(event))
    const failing = d.transaction(async (tx) => {
      await tx.run("INSERT INTO marks (k) VALUES ('written')")
      await new EventRepo(tx, d.dialect).append({ ...event, ts: 2 }) // the same event id: a unique violation
    })
    await expect(failing).rejects.toThrow()
    expect(await d.query('SELECT k FROM marks')).toEqual([])
    expect((await new EventRepo(d, d.dialect).after(0, 10)).map((e) => e.ts)).toEqual([1])
    // The connection is usable again afterwards.
    await d.transaction((tx) => tx.run("INSERT INTO marks (k) VALUES ('later')"))
    expect(await d.query('SELECT k FROM marks')).toEqual([{ k: 'later' }])
  })

  it('keeps answering a SELECT * after a migration adds a column', async () => {
    db = await openDb(await backend.freshUrl())
    const d = db
    await d.exec('CREATE TABLE s (k TEXT PRIMARY KEY)')
    await d.run("INSERT INTO s (k) VALUES ('a')")
    // Prepare the text on every pooled connection, then change the result shape under it.
    const all = () =>
      Promise.all(Array.from({ length: 12 }, () => d.query('SELECT * FROM s WHERE k = $1', ['a'])))
    await all()
    await d.exec("ALTER TABLE s ADD COLUMN extra TEXT NOT NULL DEFAULT 'x'")
    for (const rows of await all()) expect(rows).toEqual([{ k: 'a', extra: 'x' }])
  })
})

describe.skipIf(!backends().some((b) => b.name === 'postgres'))('PostgreSQL statement pipeline', () => {
  let db: PostgresDb | undefined
  afterEach(async () => {
    await db?.close()
    db = undefined
  })
  const open = async () => {
    const backend = backends().find((b) => b.name === 'postgres')!
    db = (await openDb(await backend.freshUrl())) as PostgresDb
    return db
  }

  it('keeps a later commit from showing its event while an earlier-numbered one is still committing', async () => {
    const d = await open()
    await migrate(d)
    // A deferred trigger makes the first transaction's COMMIT take 400 ms after its event has its seq.
    await d.exec(`
      CREATE TABLE slow_commit (k TEXT PRIMARY KEY);
      CREATE FUNCTION slow_commit_sleep() RETURNS trigger LANGUAGE plpgsql AS
        $$ BEGIN PERFORM pg_sleep(0.4); RETURN NULL; END $$;
      CREATE CONSTRAINT TRIGGER slow_commit_at_commit AFTER INSERT ON slow_commit
        DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION slow_commit_sleep();`)
    const event = (id: string) => ({ id, workspaceId: 'w', kind: 'k', ts: 1, subjectId: 's', data: {} })
    let appended: () => void = () => {}
    const slowHasSeq = new Promise<void>((resolve) => {
      appended = resolve
    })
    const slow = d.transaction(async (tx) => {
      await tx.run("INSERT INTO slow_commit (k) VALUES ('a')")
      await new EventRepo(tx, 'postgres').append(event('evt_slow'))
      appended()
    })
    // The fast one must start only once the slow event HAS its seq. `append` returning is not that: the append is
    // held back and sent with the COMMIT (CommitTail), so on a loaded machine the fast transaction's whole batch
    // could reach the server first and take the lower seq ([evt_fast, evt_slow]; the promise held, the test's timing
    // did not). The slow backend sleeping in its deferred trigger is: the trigger fires at COMMIT, after the locked
    // insert took its seq and the append lock.
    await slowHasSeq
    for (let i = 0; ; i++) {
      const sleeping = await d.one<{ n: string }>(
        "SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND datname = current_database()",
      )
      if (Number(sleeping?.n) > 0) break
      if (i > 2000) throw new Error('the slow transaction never reached its COMMIT')
      await new Promise((r) => setTimeout(r, 5))
    }
    const fast = d.transaction((tx) => new EventRepo(tx, 'postgres').append(event('evt_fast')))
    const seen: string[][] = []
    let done = false
    void Promise.all([slow, fast]).finally(() => {
      done = true
    })
    for (let i = 0; !done && i < 200; i++) {
      seen.push((await new EventRepo(d, d.dialect).after(0, 10)).map((e) => e.id))
      await new Promise((r) => setTimeout(r, 10))
    }
    await Promise.all([slow, fast])
    expect((await new EventRepo(d, d.dialect).after(0, 10)).map((e) => e.id)).toEqual([
      'evt_slow',
      'evt_fast',
    ])
    // While the slow one committed, nothing was visible: never the later event alone.
    expect(seen.filter((ids) => ids.length > 0 && ids[0] !== 'evt_slow')).toEqual([])
  })

  it('runs statements issued together each as its own transaction: one failure touches no other', async () => {
    const d = await open()
    await d.exec('CREATE TABLE u (k TEXT PRIMARY KEY, n BIGINT NOT NULL)')
    const p = d.pipeline
    const insert = 'INSERT INTO u (k, n) VALUES ($1, $2)'
    // Issued in one turn; the order among them is not promised (they may spread over several connections).
    const results = await Promise.allSettled([
      p.run(insert, ['a', 1]),
      p.run(insert, ['a', 1]), // the same key: one of the two is refused, alone
      p.run(insert, ['b', 3]),
      p.query('SELECT k FROM u WHERE k = $1', ['zz']),
      p.run('UPDATE u SET n = n + 0 WHERE k = $1', ['zz']),
    ])
    expect(results.filter((r) => r.status === 'rejected')).toHaveLength(1)
    const refused = results.findIndex((r) => r.status === 'rejected')
    expect([0, 1]).toContain(refused)
    expect((results[refused] as PromiseRejectedResult).reason).toMatchObject({ code: '23505' })
    expect((results[3] as PromiseFulfilledResult<unknown>).value).toEqual([])
    expect((results[4] as PromiseFulfilledResult<unknown>).value).toBe(0)
    expect(await p.run('UPDATE u SET n = n + 10', [])).toBe(2)
    // The statement keeps working after one of its runs failed.
    expect(await p.run(insert, ['c', 4])).toBe(1)
    expect(await d.query('SELECT k, n FROM u ORDER BY k')).toEqual([
      { k: 'a', n: 11 },
      { k: 'b', n: 13 },
      { k: 'c', n: 4 },
    ])
  })

  it('fails a transaction whose connection was lost, runs none of its later statements elsewhere, and serves on', async () => {
    const d = await open()
    await d.exec('CREATE TABLE lost (k TEXT PRIMARY KEY)')
    const outcome = await d
      .transaction(async (tx) => {
        await tx.run("INSERT INTO lost (k) VALUES ('before')")
        // The transaction's own session ends while it waits between two statements.
        await d.query(
          `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
           WHERE application_name = 'agentops' AND datname = current_database() AND pid <> pg_backend_pid()
             AND state = 'idle in transaction'`,
        )
        for (
          let i = 0;
          i < 100 &&
          (await d.one(
            "SELECT 1 AS x FROM pg_stat_activity WHERE state = 'idle in transaction' AND datname = current_database()",
          ));
          i++
        ) {
          await new Promise((r) => setTimeout(r, 10))
        }
        // No wait for the close to reach the driver: postgres.js may report the reset socket to this statement
        // before it reports the close, and a ROLLBACK sent in between would never be answered.
        await tx.run("INSERT INTO lost (k) VALUES ('after')")
      })
      .then(
        () => 'committed',
        (err: { code?: string }) => err.code,
      )
    expect(outcome).toBe('CONNECTION_CLOSED')
    // Neither insert survived: the first died with its session, the second was never sent to another one.
    expect(await d.query('SELECT k FROM lost')).toEqual([])
    // Every pooled connection still serves transactions.
    const many = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        d.transaction((tx) => tx.one<{ n: number }>('SELECT $1::int AS n', [i])),
      ),
    )
    expect(many.map((r) => r?.n)).toEqual(Array.from({ length: 12 }, (_, i) => i))
  })

  it('times every statement by the path it took', async () => {
    const d = await open()
    const seen = new Map<string, number>()
    d.timeStatements((path, seconds) => {
      expect(seconds).toBeGreaterThanOrEqual(0)
      seen.set(path, (seen.get(path) ?? 0) + 1)
    })
    await d.pipeline.query('SELECT 1 AS x')
    await d.query('SELECT 1 AS x')
    await d.transaction(async (tx) => {
      await tx.query('SELECT 1 AS x')
      await tx.query('SELECT 2 AS x')
    })
    expect(Object.fromEntries(seen)).toEqual({ pipeline: 1, pool: 1, transaction: 2 })
  })

  it('keeps answering a SELECT * after a migration adds a column, and reconnects after losing its connection', async () => {
    const d = await open()
    const p = d.pipeline
    await d.exec('CREATE TABLE s (k TEXT PRIMARY KEY)')
    await d.run("INSERT INTO s (k) VALUES ('a')")
    const read = 'SELECT * FROM s WHERE k = $1'
    expect(await p.query(read, ['a'])).toEqual([{ k: 'a' }])
    await d.exec("ALTER TABLE s ADD COLUMN extra TEXT NOT NULL DEFAULT 'x'")
    expect(await p.query(read, ['a'])).toEqual([{ k: 'a', extra: 'x' }])
    await d.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
       WHERE application_name = 'agentops-pipeline' AND datname = current_database()`,
    )
    let answer: unknown
    for (let i = 0; i < 50 && answer === undefined; i++) {
      answer = await p.query(read, ['a']).catch(() => new Promise((r) => setTimeout(r, 20)))
    }
    expect(answer).toEqual([{ k: 'a', extra: 'x' }])
  })
})
