/**
 * A PostgreSQL connection sends nothing but its opening statement until its session is open (Connection.open).
 * postgres.js hands what was sent while it connected to the new session only in part, and takes statements sent
 * after that first: without the wait, statements run out of the order they were sent in, and a deferred unit sent as
 * BEGIN … COMMIT on a shared connection takes in other units' statements, which its failure then fails (or rolls
 * back after they were answered).
 */
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SharedConnections } from '../../src/store/postgres/connections.js'
import { DeferredTransaction, PipelinedQueryable, Timing } from '../../src/store/postgres/statements.js'
import { backends } from '../support/backends.js'

describe.each(backends().filter((b) => b.name === 'postgres'))('a fresh connection on $name', (backend) => {
  let url: string
  let admin: ReturnType<typeof postgres>

  beforeAll(async () => {
    url = await backend.freshUrl()
    admin = postgres(url, { max: 1, onnotice: () => {} })
    await admin.unsafe('CREATE TABLE sent (id BIGSERIAL PRIMARY KEY, n INT NOT NULL)')
  })

  afterAll(async () => {
    await admin?.end()
  })

  const order = async (from: number) =>
    (await admin.unsafe('SELECT n FROM sent WHERE n >= $1 ORDER BY id', [from])).map((r) => Number(r.n))

  it('runs pipelined statements in the order they were sent, those sent while it connected included', async () => {
    const pipeline = new PipelinedQueryable(url, 1, new Timing())
    try {
      const insert = (n: number) => pipeline.run('INSERT INTO sent (n) VALUES ($1)', [n])
      // Twelve sent while the connection opens, and one more as soon as the first is answered.
      let late: Promise<number> | undefined
      const early = Array.from({ length: 12 }, (_, i) => insert(100 + i))
      await early[0]?.then(() => {
        late = insert(112)
      })
      await Promise.all([...early, late])
      expect(await order(100)).toEqual(Array.from({ length: 13 }, (_, i) => 100 + i))
    } finally {
      await pipeline.close()
    }
  })

  it('keeps a deferred unit sent as BEGIN … COMMIT apart from the units sharing its connection', async () => {
    const shared = new SharedConnections(url, 1, 'agentops-test')
    const timing = new Timing()
    const unit = (statements: [string, number[]][]) => {
      const tx = new DeferredTransaction(shared, timing)
      for (const [sql, params] of statements) tx.atCommit(sql, params)
      return tx.commit()
    }
    try {
      // One-statement units sent while the connection opens; once the first commits, a unit that cannot be one
      // statement (dollar quoting) and fails in its middle.
      let failing: Promise<void> | undefined
      const others = Array.from({ length: 12 }, (_, i) =>
        unit([['INSERT INTO sent (n) VALUES ($1)', [200 + i]]]),
      )
      await others[0]?.then(() => {
        failing = unit([
          ['INSERT INTO sent (n) VALUES ($1)', [300]],
          ['INSERT INTO sent (n) VALUES (CAST(NULLIF($1, $1) AS INT))', [1]],
          ['INSERT INTO sent (n) SELECT $1 WHERE $q$x$q$ = $q$x$q$', [301]],
        ])
      })
      const outcomes = await Promise.allSettled([...others, failing])
      expect(outcomes.slice(0, 12).map((o) => o.status)).toEqual(Array(12).fill('fulfilled'))
      expect(outcomes[12]?.status).toBe('rejected')
      expect(await order(200)).toEqual(Array.from({ length: 12 }, (_, i) => 200 + i))
    } finally {
      await shared.close()
    }
  })
})
