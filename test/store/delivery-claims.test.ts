/**
 * The outbox's claim (DeliveryRepo.claimDue): the oldest due row of each subscription, the longest waiting first,
 * skipping busy subscriptions, at most `limit`, on both stores; a backlog longer than one page of the due index
 * never hides another subscription's row.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { Db } from '../../src/store/db.js'
import { migrate } from '../../src/store/migrations/index.js'
import { openDb } from '../../src/store/open.js'
import { DeliveryRepo } from '../../src/store/repos/deliveries.js'
import { backends } from '../support/backends.js'

const opened: Db[] = []
afterEach(async () => {
  for (const d of opened.splice(0)) await d.close()
})

const NOW = Date.UTC(2026, 0, 1)

describe.each(backends())('claimDue on $name', (backend) => {
  async function setUp() {
    const db = await openDb(await backend.freshUrl())
    opened.push(db)
    await migrate(db)
    const repo = new DeliveryRepo(db)
    let n = 0
    const add = async (webhookId: string, at = NOW) => {
      const id = `dlv_${String(++n).padStart(4, '0')}`
      await repo.insert({
        id,
        webhookId,
        workspaceId: 'ws_a',
        eventId: `evt_${n}`,
        eventSeq: n,
        eventKind: 'agent.created',
        payload: {},
        now: at,
      })
      return id
    }
    return { db, repo, add }
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
    // Leased rows are not due for another worker until their leases lapse: only whk_a's next row is left.
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
})
