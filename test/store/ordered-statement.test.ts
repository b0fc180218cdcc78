/**
 * A deferred unit with counts as one statement (src/store/ordered-statement.ts): the counts run in their order and
 * before every write that may wait, as they do when the unit goes as its statements (COUNTS_FIRST), so a unit never
 * holds a lock an ordinary transaction takes later while it waits for one that transaction took earlier.
 */
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Db, InOneStatement } from '../../src/store/db.js'
import { openDb } from '../../src/store/open.js'
import { asOrderedStatement, type OrderedWrite, zeroAfter } from '../../src/store/ordered-statement.js'
import { backends } from '../support/backends.js'

/** A count of `table`'s row $1 by $2, returning the new total; in a unit, after the WITH query it is given. */
function count(table: string, key: string, by: number): OrderedWrite {
  const text = (amount: string) =>
    `INSERT INTO ${table} (k, n) VALUES ($1, ${amount}) ON CONFLICT (k) DO UPDATE SET n = ${table}.n + excluded.n RETURNING n`
  const order: InOneStatement = { after: (after) => text(after === null ? '$2' : `$2 + ${zeroAfter(after)}`) }
  return { sql: text('$2'), params: [key, by], order }
}

/** An append under advisory lock 42, as the event log's; in a unit, the lock taken after the WITH query given. */
function append(value: string): OrderedWrite {
  const text = (from: string) =>
    `WITH held AS MATERIALIZED (SELECT pg_advisory_xact_lock(42)${from}) INSERT INTO os_log (v) SELECT $1::text FROM held`
  return {
    sql: text(''),
    params: [value],
    order: {
      after: (after) => (after === null ? text('') : text(` FROM (SELECT count(*) FROM ${after}) AS c`)),
    },
  }
}

const fresh = (value: string): OrderedWrite => ({
  sql: 'INSERT INTO os_fresh (v) VALUES ($1)',
  params: [value],
  order: 'waits-for-nothing',
})

describe('asOrderedStatement', () => {
  it('chains the counts, puts every write that may wait after the last, and returns the counts’ rows', () => {
    const one = asOrderedStatement({
      first: [fresh('f')],
      counts: [count('os_usage', 'a', 1), count('os_usage', 'b', 2)],
      others: [fresh('g'), append('e')],
    })
    expect(one?.params).toEqual(['f', 'a', 1, 'b', 2, 'g', 'e'])
    expect(one?.countColumns).toEqual(['c0', 'c1'])
    expect(one?.sql).toBe(
      [
        'WITH b0 AS (INSERT INTO os_fresh (v) VALUES ($1)),',
        'c0 AS (INSERT INTO os_usage (k, n) VALUES ($2, $3) ON CONFLICT (k) DO UPDATE SET n = os_usage.n + excluded.n RETURNING n),',
        'c1 AS (INSERT INTO os_usage (k, n) VALUES ($4, $5 + 0 * (SELECT count(*) FROM c0)) ON CONFLICT (k) DO UPDATE SET n = os_usage.n + excluded.n RETURNING n),',
        'w0 AS (INSERT INTO os_fresh (v) VALUES ($6)),',
        'w1 AS (WITH held AS MATERIALIZED (SELECT pg_advisory_xact_lock(42) FROM (SELECT count(*) FROM c1) AS c) INSERT INTO os_log (v) SELECT $7::text FROM held)',
        'SELECT (SELECT json_agg(c0) FROM c0) AS c0, (SELECT json_agg(c1) FROM c1) AS c1',
      ].join('\n'),
    )
  })

  it('leaves a unit without counts, or with a write that has no place, to be sent otherwise', () => {
    expect(asOrderedStatement({ first: [fresh('f')], counts: [], others: [append('e')] })).toBeUndefined()
    const unplaced = { sql: 'UPDATE os_usage SET n = 0 WHERE k = $1', params: ['a'] }
    expect(
      asOrderedStatement({ first: [], counts: [count('os_usage', 'a', 1)], others: [unplaced] }),
    ).toBeUndefined()
    // A count must be ordered: it waits for its row.
    expect(
      asOrderedStatement({
        first: [],
        counts: [{ ...count('os_usage', 'a', 1), order: 'waits-for-nothing' }],
        others: [],
      }),
    ).toBeUndefined()
  })
})

describe.each(backends().filter((b) => b.name === 'postgres'))('an ordered unit on $name', (backend) => {
  let db: Db
  let url: string
  let other: postgres.Sql
  beforeAll(async () => {
    url = await backend.freshUrl()
    db = await openDb(url)
    await db.exec(
      'CREATE TABLE os_usage (k TEXT PRIMARY KEY, n INTEGER NOT NULL); CREATE TABLE os_log (v TEXT NOT NULL); ' +
        'CREATE TABLE os_fresh (v TEXT NOT NULL)',
    )
    await db.run("INSERT INTO os_usage (k, n) VALUES ('a', 0), ('b', 0)")
    other = postgres(url, { max: 4, onnotice: () => {} })
  })
  afterAll(async () => {
    await other.end()
    await db.close()
  })

  const unit = (tag: string) => {
    const one = asOrderedStatement({
      first: [fresh(`first-${tag}`)],
      counts: [count('os_usage', 'a', 1), count('os_usage', 'b', 10)],
      others: [append(tag)],
    })
    if (!one) throw new Error('expected one statement')
    return db.query<Record<string, unknown>>(one.sql, one.params)
  }

  /** Whether another session can take `row`'s lock, and the append lock, right now (it gives them back at once). */
  async function free(): Promise<{ a: boolean; b: boolean; append: boolean }> {
    return other.begin(async (tx) => {
      const row = async (k: string) =>
        (await tx`SELECT k FROM os_usage WHERE k = ${k} FOR UPDATE SKIP LOCKED`).length === 1
      const [lock] = await tx`SELECT pg_try_advisory_xact_lock(42) AS taken`
      return { a: await row('a'), b: await row('b'), append: lock?.taken === true }
    })
  }

  /** A transaction of another session holding `k`'s row until `release`. */
  async function holding(k: string): Promise<{ release: () => void; done: Promise<unknown> }> {
    let release = () => {}
    const released = new Promise<void>((resolve) => {
      release = resolve
    })
    let held = () => {}
    const taken = new Promise<void>((resolve) => {
      held = resolve
    })
    const done = other.begin(async (tx) => {
      await tx`UPDATE os_usage SET n = n WHERE k = ${k}`
      held()
      await released
    })
    await taken
    return { release, done }
  }

  /** Until the unit waits for a lock (PostgreSQL's own view of it), at most 10 s. */
  async function untilWaiting(): Promise<void> {
    for (let i = 0; i < 1000; i++) {
      const [waiting] = await other`SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'WITH b0 AS%'`
      if ((waiting?.n as number) > 0) return
      await new Promise((r) => setTimeout(r, 10))
    }
    throw new Error('the unit never waited')
  }

  it('takes the first count’s row before the second’s, and both before the append lock', async () => {
    // Waiting for the first count's row, it holds nothing.
    const first = await holding('a')
    const waitingForA = unit('x')
    await untilWaiting()
    expect(await free()).toEqual({ a: false, b: true, append: true })
    // Waiting for the second count's row, it holds the first's, not the append lock.
    const second = await holding('b')
    first.release()
    await first.done
    // Once it has the first count's row, it waits for the second's.
    for (let i = 0; i < 1000 && (await free()).a; i++) await new Promise((r) => setTimeout(r, 10))
    await untilWaiting()
    expect(await free()).toEqual({ a: false, b: false, append: true })
    second.release()
    await second.done
    const [row] = await waitingForA
    expect(row).toEqual({ c0: [{ n: 1 }], c1: [{ n: 10 }] })
    expect(await db.query('SELECT v FROM os_log')).toEqual([{ v: 'x' }])
    expect(await db.query('SELECT v FROM os_fresh')).toEqual([{ v: 'first-x' }])
  })
})
