import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { canonicalize } from '../../client/src/canonical-json.js'
import { LocalChangeFeed } from '../../src/domain/changes.js'
import { ManualClock } from '../../src/domain/clock.js'
import { EventLog } from '../../src/domain/events/log.js'
import { proofFromLeafHashes, verifyInclusion } from '../../src/domain/ingestion/audit.js'
import { IngestionService } from '../../src/domain/ingestion/service.js'
import type { Db } from '../../src/store/db.js'
import { migrate } from '../../src/store/migrations/index.js'
import { openDb } from '../../src/store/open.js'
import { createRepositories } from '../../src/store/repos/index.js'
import { backends } from '../support/backends.js'
import { NO_QUOTAS } from '../support/quotas.js'
import { merkleTreeHash as mth, sha256 as sha } from '../support/rfc6962.js'

// Independent RFC 6962 root over RFC 8785 bytes of the five fields, to check the service's lineage_root.
const rootOf = (records: object[]) => mth(records.map((r) => Buffer.from(canonicalize(r)))).toString('hex')

const WS = { id: 'ws_a', policyClasses: ['public', 'internal'] }
const rec = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  ts: '2026-11-23T06:00:00Z',
  source: 'crm',
  policy_class: 'public',
  body: { n: id },
  ...extra,
})

describe.each(backends())('IngestionService on $name', (backend) => {
  let db: Db
  let service: IngestionService
  let events: EventLog
  const clock = new ManualClock(Date.UTC(2026, 10, 23, 6))

  beforeEach(async () => {
    db = await openDb(await backend.freshUrl())
    await migrate(db)
    const repos = createRepositories(db)
    events = new EventLog(repos.events, clock)
    service = new IngestionService(db, repos.records, clock, events, NO_QUOTAS)
  })
  afterEach(async () => {
    await db.close()
  })

  it('accepts the good records of a mixed batch, gives a reason for each bad one, and a recomputable root', async () => {
    const batch = [
      rec('a'),
      { ...rec('b'), ts: '2026-02-30T00:00:00Z' },
      rec('c', { body: { z: 1, a: [1, 'é', { y: null, b: true }] } }),
      { id: 'd', ts: '2026-11-23T06:00:00Z' },
      rec('e', { policy_class: 'secret' }),
      rec('a'),
      rec('f', { policy_class: 'internal' }),
      42,
    ]
    const result = await service.ingest(WS, 'crm-1', batch)
    expect(result.accepted).toBe(3)
    expect(result.rejected).toBe(5)
    expect(result.rejections.map((r) => [r.index, r.id, r.code])).toEqual([
      [1, 'b', 'invalid_timestamp'],
      [3, 'd', 'missing_field'],
      [4, 'e', 'policy_class_not_allowed'],
      [5, 'a', 'duplicate_id'],
      [7, null, 'invalid_field'],
    ])
    expect(result.batch_id).toMatch(/^batch_/)
    expect(result.lineage_root).toBe(rootOf([batch[0], batch[2], batch[6]] as object[]))

    const stored = (await service.list(WS.id, 'crm-1', 0, 50)).rows
    expect(stored.map((r) => [r.id, r.seq, r.lineage.leaf_index])).toEqual([
      ['a', 1, 0],
      ['c', 2, 1],
      ['f', 3, 2],
    ])
    for (const r of stored) {
      expect(r.lineage).toMatchObject({
        batch_id: result.batch_id,
        batch_size: 3,
        batch_root: result.lineage_root,
      })
      const leaf = sha(
        Buffer.from([0]),
        Buffer.from(
          canonicalize({ id: r.id, ts: r.ts, source: r.source, policy_class: r.policy_class, body: r.body }),
        ),
      )
      expect(r.lineage.leaf_hash).toBe(leaf.toString('hex'))
      const ok = verifyInclusion(
        leaf,
        r.lineage.leaf_index,
        r.lineage.batch_size,
        r.lineage.proof.map((p) => Buffer.from(p, 'hex')),
        Buffer.from(r.lineage.batch_root, 'hex'),
      )
      expect(ok).toBe(true)
    }
    expect(stored[1]?.body).toEqual({ z: 1, a: [1, 'é', { y: null, b: true }] })
    expect(stored[0]?.ingested_at).toBe('2026-11-23T06:00:00.000Z')
  })

  it('rejects ids already ingested by the connector in an earlier batch, but not by another connector', async () => {
    await service.ingest(WS, 'c1', [rec('a'), rec('b')])
    const again = await service.ingest(WS, 'c1', [rec('b'), rec('c')])
    expect(again.accepted).toBe(1)
    expect(again.rejections).toEqual([expect.objectContaining({ index: 0, id: 'b', code: 'duplicate_id' })])
    expect(again.lineage_root).toBe(rootOf([rec('c')]))
    const other = await service.ingest(WS, 'c2', [rec('a')])
    expect(other.accepted).toBe(1)
    // Another workspace has its own connector namespace.
    const foreign = await service.ingest({ id: 'ws_b', policyClasses: ['public'] }, 'c1', [rec('a')])
    expect(foreign.accepted).toBe(1)
    const seqs = (await service.list(WS.id, 'c1', 0, 50)).rows.map((r) => [r.id, r.seq])
    expect(seqs).toEqual([
      ['a', 1],
      ['b', 2],
      ['c', 3],
    ])
  })

  it('judges a taken id met after earlier chunks were written exactly like one met first', async () => {
    await service.ingest(WS, 'c1', [rec('old-1'), rec('old-2')])
    // 250 records span three insert chunks; the taken id sits in the second, an in-batch repeat in the first.
    const batch = Array.from({ length: 250 }, (_, i) => rec(`n-${i}`))
    batch[20] = rec('n-5')
    batch[180] = rec('old-2')
    const result = await service.ingest(WS, 'c1', batch)
    expect(result.accepted).toBe(248)
    expect(result.rejections.map((r) => [r.index, r.id, r.code])).toEqual([
      [20, 'n-5', 'duplicate_id'],
      [180, 'old-2', 'duplicate_id'],
    ])
    const accepted = batch.filter((_, i) => i !== 20 && i !== 180)
    expect(result.lineage_root).toBe(rootOf(accepted as object[]))
    const stored: { id: string; seq: number; lineage: { leaf_index: number; batch_size: number } }[] = []
    for (let after = 0; ; ) {
      const page = await service.list(WS.id, 'c1', after, 200)
      stored.push(...page.rows)
      if (!page.more) break
      after = page.rows.at(-1)?.seq ?? after
    }
    expect(stored.map((r) => r.id)).toEqual(['old-1', 'old-2', ...accepted.map((r) => r.id)])
    expect(stored.map((r) => r.seq)).toEqual(Array.from({ length: 250 }, (_, i) => i + 1))
    expect(stored.at(-1)?.lineage).toMatchObject({ leaf_index: 247, batch_size: 248 })
    expect(await service.lastSeq(WS.id, 'c1')).toBe(250)
  })

  it('answers an all-rejected batch with the empty-tree root, stores no record and no event', async () => {
    const result = await service.ingest(WS, 'c1', [{ nope: true }])
    expect(result).toMatchObject({ accepted: 0, rejected: 1 })
    expect(result.lineage_root).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855')
    // The connector exists from its first batch, even an empty one; an unknown one is a 404.
    expect((await service.list(WS.id, 'c1', 0, 50)).rows).toEqual([])
    await expect(service.list(WS.id, 'never', 0, 50)).rejects.toMatchObject({ code: 'not_found' })
    expect(await events.lastSeq()).toBe(0)
  })

  it('appends one ingest.batch_accepted event in the same transaction and notifies listeners after commit', async () => {
    const told: [string, string, number][] = []
    const changes = new LocalChangeFeed()
    changes.subscribe((c) => {
      if (c.kind === 'records') told.push([c.workspaceId, c.connectorId, c.lastSeq])
    })
    service = new IngestionService(db, createRepositories(db).records, clock, events, NO_QUOTAS, changes)
    let woken = 0
    events.subscribe(() => woken++)
    const result = await service.ingest(WS, 'c1', [rec('a'), rec('b', { ts: 'bad' })])
    const [event] = await events.read(0, 10)
    expect(event).toMatchObject({
      kind: 'ingest.batch_accepted',
      workspaceId: WS.id,
      subjectId: 'c1',
      data: {
        connector_id: 'c1',
        batch_id: result.batch_id,
        accepted: 1,
        rejected: 1,
        lineage_root: result.lineage_root,
      },
    })
    expect(told).toEqual([[WS.id, 'c1', 1]])
    expect(woken).toBe(1)
  })

  it('stores a batch atomically: a failure mid-batch leaves no record, no seq and no event', async () => {
    await service.ingest(WS, 'c1', [rec('a')])
    // Sabotage the event append so the transaction fails after the records were inserted.
    const failing = new IngestionService(
      db,
      createRepositories(db).records,
      clock,
      {
        append: async () => {
          throw new Error('boom')
        },
        notify: () => {},
      },
      NO_QUOTAS,
    )
    await expect(failing.ingest(WS, 'c1', [rec('b'), rec('c')])).rejects.toThrow('boom')
    expect((await service.list(WS.id, 'c1', 0, 50)).rows.map((r) => r.id)).toEqual(['a'])
    expect(await service.lastSeq(WS.id, 'c1')).toBe(1)
    const next = await service.ingest(WS, 'c1', [rec('b')])
    expect(next.accepted).toBe(1)
    expect((await service.list(WS.id, 'c1', 0, 50)).rows.map((r) => r.seq)).toEqual([1, 2])
  })

  it('never accepts one id twice under concurrent batches, and keeps seq dense', async () => {
    const batches = Array.from({ length: 6 }, (_, i) => [rec('shared'), rec(`own-${i}`)])
    const results = await Promise.all(batches.map((b) => service.ingest(WS, 'c1', b)))
    expect(results.reduce((n, r) => n + r.accepted, 0)).toBe(7)
    const stored = (await service.list(WS.id, 'c1', 0, 50)).rows
    expect(stored.filter((r) => r.id === 'shared')).toHaveLength(1)
    expect(stored.map((r) => r.seq)).toEqual([1, 2, 3, 4, 5, 6, 7])
  })

  it('refuses more than 500 records with payload_too_large', async () => {
    const big = Array.from({ length: 501 }, (_, i) => rec(`r${i}`))
    await expect(service.ingest(WS, 'c1', big)).rejects.toMatchObject({
      code: 'payload_too_large',
      status: 413,
    })
    const full = await service.ingest(WS, 'c1', big.slice(0, 500))
    expect(full.accepted).toBe(500)
    expect(full.lineage_root).toBe(rootOf(big.slice(0, 500)))
    const page = (await service.recordsAfter(WS.id, 'c1', 250, 10)).rows
    expect(page.map((r) => r.seq)).toEqual([251, 252, 253, 254, 255, 256, 257, 258, 259, 260])
    expect(page[0]?.lineage.proof).toEqual(
      proofFromLeafHashes(
        (await service.recordsAfter(WS.id, 'c1', 0, 500)).rows.map((r) => r.lineage.leaf_hash),
        250,
      ),
    )
  })
})
