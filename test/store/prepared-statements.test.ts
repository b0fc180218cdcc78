/**
 * On PostgreSQL every single statement is prepared once per connection, those without parameters too: postgres.js
 * would send a statement without parameters in the simple protocol, which PostgreSQL parses, analyses and plans
 * again each time it comes (the outbox's reads after each event were most of the hot path's connections' CPU:
 * docs/performance.md). pg_prepared_statements lists what the session has prepared.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Db } from '../../src/store/db.js'
import { openDb } from '../../src/store/open.js'
import { backends } from '../support/backends.js'

const postgres = backends().filter((b) => b.name === 'postgres')

describe.skipIf(postgres.length === 0)('statements on PostgreSQL', () => {
  let db: Db
  beforeAll(async () => {
    db = await openDb(await postgres[0]!.freshUrl())
  })
  afterAll(async () => {
    await db?.close()
  })

  it('are prepared with and without parameters', async () => {
    const prepared = await db.transaction(async (tx) => {
      expect(await tx.query('SELECT 41 + 1 AS answer')).toEqual([{ answer: 42 }])
      expect(await tx.query('SELECT $1::int + 1 AS answer', [41])).toEqual([{ answer: 42 }])
      // The same session: a transaction keeps its connection.
      return tx.query<{ statement: string }>('SELECT statement FROM pg_prepared_statements')
    })
    const texts = prepared.map((p) => p.statement)
    expect(texts).toContain('SELECT 41 + 1 AS answer')
    expect(texts).toContain('SELECT $1::int + 1 AS answer')
  })
})
