/**
 * The outbox's claim (DeliveryRepo.claimDue): the oldest due row of each subscription, the longest waiting first,
 * skipping busy subscriptions, at most `limit`, on both stores; a backlog longer than one page of the due index
 * never hides another subscription's row, nor makes the walk read it page after page. And the fan-out's batched
 * insert (insertMany): one row per (subscription, event), whatever was there before or repeats in the batch. And
 * the outcomes' batched write (recordAttempts): every outcome of the batch in one statement on PostgreSQL (in one
 * transaction on SQLite), each written only under the lease and attempt count it was claimed with.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { Db, Queryable, SqlValue } from '../../src/store/db.js'
import { migrate } from '../../src/store/migrations/index.js'
import { openDb } from '../../src/store/open.js'
import { DeliveryRepo } from '../../src/store/repos/deliveries.js'
import { backends } from '../support/backends.js'

const opened: Db[] = []
afterEach(async () => {
  for (const d of opened.splice(0)) await d.close()
})

const NOW = Date.UTC(2026, 0, 1)

/** The plan each store gives `statement`: SQLite's EXPLAIN QUERY PLAN, PostgreSQL's EXPLAIN with sequential scans off. */
async function planOf(db: Db, statement: { sql: string; params: readonly SqlValue[] }): Promise<string> {
  const lines =
    db.dialect === 'sqlite'
      ? (await db.query<{ detail: string }>(`EXPLAIN QUERY PLAN ${statement.sql}`, statement.params)).map(
          (r) => r.detail,
        )
      : await db.transaction(async (tx) => {
          await tx.exec('SET LOCAL enable_seqscan = off')
          const rows = await tx.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${statement.sql}`, statement.params)
          return rows.map((r) => r['QUERY PLAN'])
        })
  return lines.join('\n')
}

describe.each(backends())('claimDue on $name', (backend) => {
  async function setUp() {
    const db = await openDb(await backend.freshUrl())
    opened.push(db)
    await migrate(db)
    const repo = new DeliveryRepo(db)
    /** The SELECTs the repository sends through `counted`, for bounding a walk of the due index. */
    const selects: string[] = []
    /** Every statement sent through `counted` with its parameters, for asking its plan. */
    const sent: { sql: string; params: readonly SqlValue[] }[] = []
    const counted: Queryable = {
      query: (sql, params) => {
        if (/^\s*SELECT/i.test(sql)) selects.push(sql)
        sent.push({ sql, params: params ?? [] })
        return db.query(sql, params)
      },
      one: (sql, params) => db.one(sql, params),
      run: (sql, params) => {
        sent.push({ sql, params: params ?? [] })
        return db.run(sql, params)
      },
      exec: (script) => db.exec(script),
    }
    let n = 0
    const add = async (webhookId: string, at = NOW) => {
      const id = `dlv_${String(++n).padStart(4, '0')}`
      await repo.insertMany([
        {
          id,
          webhookId,
          workspaceId: 'ws_a',
          eventId: `evt_${n}`,
          eventSeq: n,
          eventKind: 'agent.created',
          payload: {},
          now: at,
        },
      ])
      return id
    }
    const row = (webhookId: string, eventId: string, at = NOW) => ({
      id: `dlv_${String(++n).padStart(4, '0')}`,
      webhookId,
      workspaceId: 'ws_a',
      eventId,
      eventSeq: n,
      eventKind: 'agent.created' as const,
      payload: { id: eventId },
      now: at,
    })
    return { db, repo, add, row, selects, sent, counted }
  }

  it('takes the oldest due row of each subscription, the longest waiting first, skipping busy ones', async () => {
    const { repo, add } = await setUp()
    const a1 = await add('whk_a', NOW - 3_000)
    const a2 = await add('whk_a', NOW - 2_000)
    const b1 = await add('whk_b', NOW - 1_000)
    const c1 = await add('whk_c', NOW - 2_500)
    await add('whk_d', NOW + 60_000) // not due yet
    const claimed = await repo.claimDue(NOW, 10, [], 'me', NOW + 30_000)
    expect(claimed.map((c) => c.row.id)).toEqual([a1, c1, b1])
    expect(claimed.every((c) => c.claim === 'claimed' && c.row.leaseOwner === 'me')).toBe(true)
    // Leased rows are not due for another worker until their leases lapse, nor are their subscriptions' later
    // rows: whk_a's next row waits for the attempt at its first, wherever it is made.
    expect(await repo.claimDue(NOW, 10, [], 'other', NOW + 30_000)).toEqual([])
    await repo.recordAttempts('me', [
      { id: a1, attemptsBefore: 0, outcome: { kind: 'delivered', statusCode: 204 }, now: NOW },
    ])
    expect((await repo.claimDue(NOW, 10, [], 'other', NOW + 30_000)).map((c) => c.row.id)).toEqual([a2])
    expect(await repo.claimDue(NOW, 10, [], 'third', NOW + 30_000)).toEqual([])
  })

  it('stops at the limit, skips busy subscriptions, and finds a row behind a backlog longer than a page', async () => {
    const { repo, add } = await setUp()
    for (let i = 0; i < 150; i++) await add('whk_backlog', NOW - 10_000)
    const late = await add('whk_late', NOW - 5_000)
    const other = await add('whk_other', NOW - 4_000)
    expect((await repo.claimDue(NOW, 1, ['whk_backlog'], 'me', NOW + 30_000)).map((c) => c.row.id)).toEqual([
      late,
    ])
    const next = await repo.claimDue(NOW, 5, [], 'me', NOW + 30_000)
    expect(next.map((c) => c.row.webhookId)).toEqual(['whk_backlog', 'whk_other'])
    expect(next[1]?.row.id).toBe(other)
  })

  it('says when it took over a lapsed lease of another owner', async () => {
    const { repo, add } = await setUp()
    const id = await add('whk_a')
    expect((await repo.claimDue(NOW, 1, [], 'dead', NOW + 1_000))[0]?.claim).toBe('claimed')
    const later = NOW + 2_000
    expect(await repo.claimDue(later, 1, [], 'me', later + 30_000)).toEqual([
      expect.objectContaining({
        claim: 'taken-over',
        row: expect.objectContaining({ id, leaseOwner: 'me' }),
      }),
    ])
  })

  it('walks past long backlogs of several subscriptions in a bounded number of reads', async () => {
    const { repo, add, row, selects, counted } = await setUp()
    // Two subscriptions with 400 due rows each, interleaved, older than a third subscription's single row.
    const backlog = Array.from({ length: 800 }, (_, i) =>
      row(i % 2 === 0 ? 'whk_x' : 'whk_y', `evt_b${i}`, NOW - 20_000 + i),
    )
    expect(await repo.insertMany(backlog)).toBe(800)
    const z = await add('whk_z', NOW - 1_000)
    const claimed = await repo.in(counted).claimDue(NOW, 16, [], 'me', NOW + 30_000)
    expect(claimed.map((c) => c.row.webhookId)).toEqual(['whk_x', 'whk_y', 'whk_z'])
    expect(claimed.map((c) => c.row.id)).toEqual([backlog[0]?.id, backlog[1]?.id, z])
    // A page leaves out what is busy or picked already: two reads, not one per page of the 800 rows.
    expect(selects.length).toBeLessThanOrEqual(3)
    selects.length = 0
    // With x and y busy, the walk never reads their backlogs at all.
    const more = await repo.in(counted).claimDue(NOW, 16, ['whk_x', 'whk_y'], 'other', NOW + 30_000)
    expect(more).toEqual([])
    expect(selects.length).toBe(1)
  })

  it('insertMany creates one row per (subscription, event), skipping pairs already there or repeated', async () => {
    const { db, repo, row } = await setUp()
    expect(await repo.insertMany([])).toBe(0)
    const first = row('whk_a', 'evt_1')
    expect(await repo.insertMany([first])).toBe(1)
    const payload = { id: 'evt_2', event: 'agent.created' }
    const batch = [
      row('whk_a', 'evt_1'), // already there
      { ...row('whk_a', 'evt_2'), payload },
      { ...row('whk_b', 'evt_2'), payload },
      row('whk_b', 'evt_2'), // repeated in the batch
    ]
    expect(await repo.insertMany(batch)).toBe(2)
    const rows = await db.query<{ id: string; webhook_id: string; event_id: string; payload: string }>(
      'SELECT id, webhook_id, event_id, payload FROM webhook_deliveries ORDER BY seq',
    )
    expect(rows.map((r) => [r.webhook_id, r.event_id])).toEqual([
      ['whk_a', 'evt_1'],
      ['whk_a', 'evt_2'],
      ['whk_b', 'evt_2'],
    ])
    expect(rows[0]?.id).toBe(first.id)
    const stored = await repo.get('whk_b', batch[2]?.id ?? '')
    expect(stored).toMatchObject({ status: 'pending', attempts: 0, nextAttemptAt: NOW, payload })
  })

  it('insertMany takes more rows than one statement holds', async () => {
    const { repo, row } = await setUp()
    const rows = Array.from({ length: 1_234 }, (_, i) => row(`whk_${i % 7}`, `evt_${i}`))
    expect(await repo.insertMany(rows)).toBe(1_234)
    expect(await repo.insertMany(rows)).toBe(0)
    expect((await repo.list('whk_3', 0, 1_000)).rows).toHaveLength(Math.ceil((1_234 - 3) / 7))
  })

  it("takes the picked rows by id, not by walking the due index's pending rows", async () => {
    const { db, repo, row, sent, counted } = await setUp()
    await repo.insertMany(Array.from({ length: 300 }, (_, i) => row(`whk_${i}`, `evt_${i}`)))
    expect(await repo.in(counted).claimDue(NOW, 16, [], 'me', NOW + 30_000)).toHaveLength(16)
    const take = sent.find((s) => /^\s*UPDATE/i.test(s.sql))
    expect(take).toBeDefined()
    if (!take) return
    const plan = await planOf(db, take)
    expect(plan).toMatch(/webhook_deliveries_id_key|sqlite_autoindex_webhook_deliveries_1/)
    expect(plan).not.toMatch(/webhook_deliveries_due/)
  })

  it('finds the subscriptions with an attempt in flight through the leased index, not the whole table', async () => {
    const { db, repo, row, sent, counted } = await setUp()
    await repo.insertMany(Array.from({ length: 300 }, (_, i) => row(`whk_${i % 30}`, `evt_${i}`)))
    expect(await repo.in(counted).claimDue(NOW, 16, [], 'me', NOW + 30_000)).toHaveLength(16)
    const walk = sent.find((s) => /^\s*SELECT/i.test(s.sql))
    expect(walk?.sql).toMatch(/NOT IN \(SELECT/)
    if (!walk) return
    const plan = await planOf(db, walk)
    expect(plan, plan).toMatch(/webhook_deliveries_leased/)
  })

  it('recordAttempts writes each outcome of a batch, in one statement on PostgreSQL, and none whose lease was lost', async () => {
    const { db, repo, add, counted, sent } = await setUp()
    const ids = [await add('whk_a'), await add('whk_b'), await add('whk_c'), await add('whk_d')]
    expect(await repo.claimDue(NOW, 10, [], 'me', NOW + 30_000)).toHaveLength(4)
    const theirs = await add('whk_e')
    expect(await repo.claimDue(NOW, 10, [], 'other', NOW + 30_000)).toHaveLength(1)
    const [delivered, retried, failed, stale] = ids as [string, string, string, string]
    const at = NOW + 100
    sent.length = 0
    const recorded = await repo.in(counted).recordAttempts('me', [
      { id: delivered, attemptsBefore: 0, outcome: { kind: 'delivered', statusCode: 204 }, now: at },
      {
        id: retried,
        attemptsBefore: 0,
        outcome: {
          kind: 'retry',
          statusCode: 503,
          error: 'receiver answered 503',
          nextAttemptAt: at + 5_000,
        },
        now: at,
      },
      {
        id: failed,
        attemptsBefore: 0,
        outcome: { kind: 'failed', statusCode: null, error: 'timed out' },
        now: at,
      },
      // Claimed at another attempt count (an older claim's late outcome) and another owner's row: left alone.
      { id: stale, attemptsBefore: 1, outcome: { kind: 'delivered', statusCode: 200 }, now: at },
      { id: theirs, attemptsBefore: 0, outcome: { kind: 'delivered', statusCode: 200 }, now: at },
    ])
    expect([...recorded].sort()).toEqual([delivered, retried, failed].sort())
    // PostgreSQL: one statement. SQLite: one per outcome, all issued at once, so one transaction (group commit).
    expect(sent).toHaveLength(db.dialect === 'postgres' ? 1 : 5)
    const read = async (id: string) =>
      (await db.one<{ webhook_id: string }>('SELECT webhook_id FROM webhook_deliveries WHERE id = $1', [id]))
        ?.webhook_id ?? ''
    const row = async (id: string) => repo.get(await read(id), id)
    expect(await row(delivered)).toMatchObject({
      status: 'delivered',
      attempts: 1,
      lastStatusCode: 204,
      lastError: null,
      nextAttemptAt: null,
      deliveredAt: at,
      leaseOwner: null,
      leaseUntil: null,
      updatedAt: at,
    })
    expect(await row(retried)).toMatchObject({
      status: 'pending',
      attempts: 1,
      lastStatusCode: 503,
      lastError: 'receiver answered 503',
      nextAttemptAt: at + 5_000,
      deliveredAt: null,
      leaseOwner: null,
    })
    expect(await row(failed)).toMatchObject({
      status: 'failed',
      attempts: 1,
      lastStatusCode: null,
      lastError: 'timed out',
      nextAttemptAt: null,
      leaseOwner: null,
    })
    expect(await row(stale)).toMatchObject({ status: 'pending', attempts: 0, leaseOwner: 'me' })
    expect(await row(theirs)).toMatchObject({ status: 'pending', attempts: 0, leaseOwner: 'other' })
    // Written once: the same outcomes again change nothing (the attempt count moved on).
    expect(
      (
        await repo.recordAttempts('me', [
          { id: delivered, attemptsBefore: 0, outcome: { kind: 'delivered', statusCode: 200 }, now: at },
        ])
      ).size,
    ).toBe(0)
  })

  it('recordAttempts takes more outcomes than one statement holds, and finds the rows by id', async () => {
    const { db, repo, row, sent, counted } = await setUp()
    await repo.insertMany(Array.from({ length: 150 }, (_, i) => row(`whk_${i}`, `evt_${i}`)))
    const claimed = await repo.claimDue(NOW, 150, [], 'me', NOW + 30_000)
    expect(claimed).toHaveLength(150)
    sent.length = 0
    const recorded = await repo.in(counted).recordAttempts(
      'me',
      claimed.map(({ row: r }) => ({
        id: r.id,
        attemptsBefore: 0,
        outcome: { kind: 'delivered' as const, statusCode: 200 },
        now: NOW,
      })),
    )
    expect(recorded.size).toBe(150)
    expect(sent.length).toBe(db.dialect === 'postgres' ? 3 : 150)
    const left = await db.one<{ n: number | string }>(
      "SELECT COUNT(*) AS n FROM webhook_deliveries WHERE status = 'pending'",
    )
    expect(Number(left?.n)).toBe(0)
    const first = sent[0]
    expect(first).toBeDefined()
    if (!first) return
    const plan = await planOf(db, first)
    expect(plan).toMatch(/webhook_deliveries_id_key|sqlite_autoindex_webhook_deliveries_1/)
  })
})
