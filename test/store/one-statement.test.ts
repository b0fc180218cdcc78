import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Db } from '../../src/store/db.js'
import { asOneStatement } from '../../src/store/one-statement.js'
import { openDb } from '../../src/store/open.js'
import { backends } from '../support/backends.js'

describe('asOneStatement', () => {
  it('makes each write a WITH query, its placeholders moved past the earlier writes’ parameters', () => {
    const one = asOneStatement([
      { sql: 'INSERT INTO a (x, y) VALUES ($1, $2)', params: ['a1', 'a2'] },
      { sql: 'UPDATE b SET x = $2 WHERE id = $1', params: ['b1', 'b2'] },
      { sql: 'INSERT INTO c (x) VALUES ($1)', params: [3] },
    ])
    expect(one).toEqual({
      sql:
        'WITH w0 AS (INSERT INTO a (x, y) VALUES ($1, $2)),\n' +
        'w1 AS (UPDATE b SET x = $4 WHERE id = $3),\n' +
        'w2 AS (INSERT INTO c (x) VALUES ($5))\nSELECT 1 WHERE false',
      params: ['a1', 'a2', 'b1', 'b2', 3],
    })
  })

  it('leaves quoted text alone, and refuses dollar quoting', () => {
    const one = asOneStatement([
      { sql: 'INSERT INTO a (x) VALUES ($1)', params: [1] },
      { sql: `INSERT INTO "t$1" (x, y) VALUES ('it''s $1', $1)`, params: [2] },
    ])
    expect(one?.sql).toContain(`w1 AS (INSERT INTO "t$1" (x, y) VALUES ('it''s $1', $2))`)
    expect(asOneStatement([{ sql: 'SELECT $$ $1 $$' }, { sql: 'SELECT 1' }])).toBeUndefined()
    // The same texts again: what was built for them is reused, and the values are this call's.
    expect(
      asOneStatement([
        { sql: 'INSERT INTO a (x) VALUES ($1)', params: [9] },
        { sql: `INSERT INTO "t$1" (x, y) VALUES ('it''s $1', $1)`, params: [8] },
      ]),
    ).toEqual({ sql: one?.sql, params: [9, 8] })
    expect(asOneStatement([{ sql: 'SELECT $q$ $1 $q$' }, { sql: 'SELECT 1' }])).toBeUndefined()
  })
})

describe('asOneStatement and parameter counts', () => {
  it('refuses writes given another number of parameters than their text takes, cached or not', () => {
    const texts = ['INSERT INTO p (x, y) VALUES ($1, $2)', 'INSERT INTO q (x) VALUES ($1)']
    expect(
      asOneStatement([
        { sql: texts[0] as string, params: [1] },
        { sql: texts[1] as string, params: [2, 3] },
      ]),
    ).toBeUndefined()
    expect(
      asOneStatement([
        { sql: texts[0] as string, params: [1, 2] },
        { sql: texts[1] as string, params: [3] },
      ])?.params,
    ).toEqual([1, 2, 3])
    expect(
      asOneStatement([{ sql: texts[0] as string, params: [1, 2, 3] }, { sql: texts[1] as string }]),
    ).toBeUndefined()
  })
})

describe.each(backends().filter((b) => b.name === 'postgres'))(
  'one statement of writes on $name',
  (backend) => {
    let db: Db
    beforeAll(async () => {
      db = await openDb(await backend.freshUrl())
      await db.exec(
        'CREATE TABLE os_a (k TEXT PRIMARY KEY); CREATE TABLE os_b (k TEXT PRIMARY KEY, n BIGSERIAL)',
      )
    })
    afterAll(() => db.close())

    const writes = (a: string, b: string) =>
      asOneStatement([
        { sql: 'INSERT INTO os_a (k) VALUES ($1)', params: [a] },
        // A write with a WITH of its own, as the event log's append is.
        {
          sql: 'WITH held AS MATERIALIZED (SELECT pg_advisory_xact_lock(42)) INSERT INTO os_b (k) SELECT $1::text FROM held',
          params: [b],
        },
      ])
    const keys = async () => ({
      a: (await db.query<{ k: string }>('SELECT k FROM os_a ORDER BY k')).map((r) => r.k),
      b: (await db.query<{ k: string }>('SELECT k FROM os_b ORDER BY k')).map((r) => r.k),
    })

    it('commits every write', async () => {
      const one = writes('a1', 'b1')
      if (!one) throw new Error('expected one statement')
      expect(await db.query(one.sql, one.params)).toEqual([])
      expect(await keys()).toEqual({ a: ['a1'], b: ['b1'] })
    })

    it('keeps none when one fails, whichever it is', async () => {
      for (const [a, b] of [
        ['a1', 'b2'],
        ['a2', 'b1'],
      ] as const) {
        const one = writes(a, b)
        if (!one) throw new Error('expected one statement')
        await expect(db.query(one.sql, one.params)).rejects.toMatchObject({ code: '23505' })
      }
      expect(await keys()).toEqual({ a: ['a1'], b: ['b1'] })
    })
  },
)
