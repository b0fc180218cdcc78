/**
 * The store's count of live stream connections per key (src/store/repos/stream-sockets.ts) on both stores: exact
 * under concurrent opens, topics counted across a key's sockets, and a row whose lease lapsed (its replica crashed
 * or could not renew) no longer counts, is purged, and is not renewed.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { Clock } from '../../src/domain/clock.js'
import type { Db } from '../../src/domain/ports.js'
import { quotaExceeded } from '../../src/domain/quotas/quota.js'
import { StreamSocketQuotas } from '../../src/domain/quotas/stream-sockets.js'
import { migrate } from '../../src/store/migrations/index.js'
import { openDb } from '../../src/store/open.js'
import { StreamSocketRepo } from '../../src/store/repos/stream-sockets.js'
import { backends } from '../support/backends.js'

const socket = (id: string, keyId = 'key_a', replicaId = 'replica-1') => ({
  id,
  workspaceId: 'ws_1',
  keyId,
  replicaId,
})

describe.each(backends())('stream socket rows ($name)', (backend) => {
  let db: Db | undefined
  afterEach(async () => {
    await db?.close()
    db = undefined
  })
  const fresh = async () => {
    db = await openDb(await backend.freshUrl())
    await migrate(db)
    return new StreamSocketRepo(db)
  }

  it("admits exactly `limit` of a key's concurrent opens, counting each key apart", async () => {
    const repo = await fresh()
    const outcomes = await Promise.all(
      Array.from({ length: 12 }, async (_, i) => ({
        id: `s${i}`,
        ...(await repo.open(socket(`s${i}`), 4, 1_000, 60_000)),
      })),
    )
    // Which four get in depends on how the opens interleave; exactly four do.
    const opened = outcomes.filter((o) => o.opened).map((o) => o.id)
    expect(opened).toHaveLength(4)
    expect(outcomes.filter((o) => !o.opened).every((o) => o.used === 4)).toBe(true)
    expect(await repo.open(socket('other', 'key_b'), 4, 1_000, 60_000)).toEqual({ opened: true, used: 1 })
    for (const id of opened.slice(0, 2)) await repo.close(id)
    expect(await repo.usage('key_a', 1_000)).toEqual({ sockets: 2, subscriptions: 0 })
  })

  it("grants topics within the key's quota across its sockets, exactly under concurrency", async () => {
    const repo = await fresh()
    await repo.open(socket('s1'), 10, 1_000, 60_000)
    await repo.open(socket('s2'), 10, 1_000, 60_000)
    const grants = await Promise.all(
      Array.from({ length: 10 }, (_, i) => repo.subscribe(socket(i % 2 ? 's1' : 's2'), 3, 20, 1_000)),
    )
    expect(grants.reduce((sum, g) => sum + g.granted, 0)).toBe(20)
    expect(await repo.usage('key_a', 1_000)).toEqual({ sockets: 2, subscriptions: 20 })
    await repo.unsubscribe('s1', 2)
    expect(await repo.subscribe(socket('s2'), 5, 20, 1_000)).toEqual({ granted: 2, used: 18 })
    // A socket whose row is gone is granted nothing.
    await repo.close('s1')
    const left = (await repo.usage('key_a', 1_000)).subscriptions
    expect(await repo.subscribe(socket('s1'), 1, 100, 1_000)).toEqual({ granted: 0, used: left })
  })

  it('stops counting a row whose lease lapsed, purges it, and does not renew it', async () => {
    const repo = await fresh()
    await repo.open(socket('crashed', 'key_a', 'replica-dead'), 1, 1_000, 5_000)
    await repo.subscribe(socket('crashed'), 3, 3, 1_000)
    expect(await repo.open(socket('s1'), 1, 4_999, 60_000)).toEqual({ opened: false, used: 1 })
    expect(await repo.usage('key_a', 5_000)).toEqual({ sockets: 0, subscriptions: 0 })
    expect(await repo.open(socket('s1'), 1, 5_000, 60_000)).toEqual({ opened: true, used: 1 })
    expect(await repo.subscribe(socket('s1'), 3, 3, 5_000)).toEqual({ granted: 3, used: 0 })
    expect(await repo.renew('replica-dead', 5_000, 90_000)).toEqual([])
    expect(await repo.renew('replica-1', 5_000, 90_000)).toEqual(['s1'])
    await repo.closeReplica('replica-1')
    expect(await repo.usage('key_a', 5_000)).toEqual({ sockets: 0, subscriptions: 0 })
  })

  it("closes a replica's socket whose lease lapsed before it renewed, and keeps the renewed ones", async () => {
    const repo = await fresh()
    let now = 1_000
    const clock: Clock = { now: () => now }
    const noLog = { error: () => undefined }
    const limits = { limitOf: () => 10, refuse: quotaExceeded, admitted: () => undefined }
    const quotas = new StreamSocketQuotas(repo, limits, clock, noLog, { leaseMs: 1_000 })
    const lost: string[] = []
    const workspace = {
      id: 'ws_1',
      name: 'w',
      tier: 'pro' as const,
      limitPerHour: 1,
      burstLimit: 1,
      burstWindowSeconds: 10,
      policyClasses: [],
      features: [],
      createdAt: 0,
    }
    await quotas.open(workspace, 'key_a', () => lost.push('first'))
    now = 1_500
    await quotas.renew()
    expect(lost).toEqual([])
    // Past its lease (renewed to 2,500) another replica's open purges it: this one then closes its socket.
    now = 2_600
    const other = new StreamSocketQuotas(repo, limits, clock, noLog, { leaseMs: 1_000 })
    await other.open(workspace, 'key_a', () => lost.push('other'))
    await quotas.renew()
    expect(lost).toEqual(['first'])
    expect(await quotas.usage('key_a')).toEqual({ sockets: 1, subscriptions: 0 })
    await other.stop()
    expect(await quotas.usage('key_a')).toEqual({ sockets: 0, subscriptions: 0 })
  })
})
