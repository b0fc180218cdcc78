/** Spec §2, §4 ingestion: 202 with accepted, rejected and lineage_root for a REST batch. */
import { createHash, randomBytes } from 'node:crypto'
import { canonicalize, sameJson } from '../canonical.js'
import type { Check, CheckContext } from '../check.js'
import { expectStatus, pageItems, unservedPart } from '../fixtures.js'
import { type HttpResponse, obj } from '../http.js'
import { assert } from '../types.js'
import { short } from '../wait.js'

type Json = Record<string, unknown>

/** RFC 6962 Merkle tree hash over the given leaves (SHA-256, 0x00 leaf and 0x01 node prefixes). */
export function merkleRoot(leaves: Buffer[]): string {
  const sha = (...parts: Buffer[]) => createHash('sha256').update(Buffer.concat(parts)).digest()
  const mth = (items: Buffer[]): Buffer => {
    if (items.length === 0) return sha()
    if (items.length === 1) return sha(Buffer.from([0]), items[0]!)
    let k = 1
    while (k * 2 < items.length) k *= 2
    return sha(Buffer.from([1]), mth(items.slice(0, k)), mth(items.slice(k)))
  }
  return mth(leaves).toString('hex')
}

/** POSTs `records` to `connector`'s batch ingest, which must answer 202 (`what` names the step in a failure). */
export async function ingestAccepted(
  ctx: CheckContext,
  connector: string,
  records: Json[],
  what = 'ingest',
): Promise<HttpResponse> {
  const res = await ctx.http.post(`/v1/grid/connectors/${connector}/ingest`, { records })
  expectStatus(res, 202, what)
  return res
}

export function batch(ctx: CheckContext, n: number): Json[] {
  const now = Date.now()
  return Array.from({ length: n }, (_, i) => ({
    id: `rec-${i}-${randomBytes(3).toString('hex')}`,
    ts: new Date(now - i * 1000).toISOString(),
    source: 'conformance',
    policy_class: ctx.config.profile.policyClass,
    body: { n: i, text: `record ${i}` },
  }))
}

/**
 * Timestamps RFC 3339 §5.6 refuses, each for one rule of its grammar or of the calendar: no such day (February 30,
 * February 29 of a common year and of a century not divisible by 400, the 31st of each 30-day month), month 13,
 * hour 24, minute 60, second 61, no offset, an offset hour of 24, an offset without its colon or with seconds, a
 * fraction without digits, another separator at each place, a letter or a '/' where a digit goes, no seconds.
 */
export const NOT_RFC3339 = [
  '2026-02-30T10:00:00Z',
  '2025-02-29T10:00:00Z',
  '2100-02-29T10:00:00Z',
  '2026-04-31T10:00:00Z',
  '2026-06-31T10:00:00Z',
  '2026-09-31T10:00:00Z',
  '2026-11-31T10:00:00Z',
  '20x6-11-23T10:00:00Z',
  '2026-11-2/T10:00:00Z',
  '2026-11-23T1x:00:00Z',
  '2026-11-23T10:x0:00Z',
  '2026-11-23T10:00:x0Z',
  '2026/11-23T10:00:00Z',
  '2026-11/23T10:00:00Z',
  '2026-11-23T10-00:00Z',
  '2026-11-23T10:00-00Z',
  '2026-11-23T10:00Z',
  '2026-11-23T10:00:00 01:00',
  '2026-11-23T10:00:00+01:00:00',
  '2026-11-23T10:00:00+01-00',
  '2026-11-23T10:00:00+x1:00',
  '2026-11-23T10:00:00+01:x0',
  '2026-13-01T10:00:00Z',
  '2026-00-10T10:00:00Z',
  '2026-11-00T10:00:00Z',
  '2026-11-23T24:00:00Z',
  '2026-11-23T10:60:00Z',
  '2026-11-23T10:00:61Z',
  '2026-11-23T10:00:00',
  '2026-11-23T10:00:00+24:00',
  '2026-11-23T10:00:00+01:60',
  '2026-11-23T10:00:00+0100',
  '2026-11-23T10:00:00.Z',
  '2026-11-23X10:00:00Z',
  '2026-11-23T10:00:00Zjunk',
  '2026/11/23T10:00:00Z',
]

/**
 * RFC 3339 §5.6 timestamps of the common forms: offsets east and west (one under an hour), a fraction, a leap day of
 * 2024 and 2000, the first and last day of a year, the 31st of a 31-day month.
 */
export const RFC3339_COMMON = [
  '2026-11-23T10:00:00+05:30',
  '2026-11-23T10:00:00-08:00',
  '2026-11-23T10:00:00.123456Z',
  '2024-02-29T23:59:59Z',
  '2000-02-29T00:00:00+23:59',
  '2026-01-01T00:00:00+00:45',
  '2026-12-31T23:59:59Z',
  '2026-07-31T12:00:00.5-03:30',
]

/** Three good records and one without ts, sent once per run. */
const sent = new WeakMap<object, Promise<{ connector: string; records: Json[]; res: HttpResponse }>>()

function mixedBatch(ctx: CheckContext) {
  let p = sent.get(ctx.config)
  if (!p) {
    p = (async () => {
      const connector = ctx.name('conn')
      const records = batch(ctx, 3)
      const { ts: _dropped, ...noTs } = batch(ctx, 1)[0]!
      const all = [...records, noTs]
      const res = await ctx.http.post(`/v1/grid/connectors/${connector}/ingest`, { records: all })
      return { connector, records: all, res }
    })()
    sent.set(ctx.config, p)
    p.catch(() => sent.delete(ctx.config))
  }
  return p
}

export const ingestChecks: Check[] = [
  {
    id: 'ingest.batch-202-counts',
    title:
      'A batch answers 202 with integer accepted and rejected adding up to the records sent, and a lineage_root',
    level: 'core',
    clauses: ['S1.6', 'S2.10', 'S2.11', 'S4.9'],
    async run(ctx) {
      const { res, records } = await mixedBatch(ctx)
      expectStatus(res, 202, 'POST /v1/grid/connectors/{id}/ingest')
      const b = obj(res.body)
      assert(
        Number.isInteger(b.accepted) && Number.isInteger(b.rejected),
        `accepted/rejected are not integers: ${short(b)}`,
      )
      assert(
        (b.accepted as number) + (b.rejected as number) === records.length,
        `accepted ${String(b.accepted)} + rejected ${String(b.rejected)} ≠ ${records.length} records sent`,
      )
      assert(
        typeof b.lineage_root === 'string' && b.lineage_root !== '',
        `lineage_root is ${short(b.lineage_root)}`,
      )
    },
  },
  {
    id: 'ingest.invalid-records-rejected',
    title:
      'Records whose ts is not RFC 3339, or that lack an id, are rejected; accepted counts exactly the records stored',
    level: 'core',
    clauses: ['S2.10', 'S1.11', 'S2.11', 'S4.9'],
    async run(ctx) {
      const connector = ctx.name('conn-invalid')
      // §2 Ingest record "ts | string (RFC 3339)": the common forms of RFC 3339 are records to accept, anything
      // its grammar or calendar refuses (NOT_RFC3339) a record to reject.
      const good = [
        ...batch(ctx, 2),
        ...batch(ctx, RFC3339_COMMON.length).map((r, i): Json => ({ ...r, ts: RFC3339_COMMON[i] })),
      ]
      const [a, b, c] = batch(ctx, 3) as [Json, Json, Json]
      const { id: _noId, ...withoutId } = c
      const bad = [
        { ...a, ts: '23/11/2026 10:00:00' },
        { ...b, ts: '2026-11-23 10:00' },
        withoutId,
        ...batch(ctx, NOT_RFC3339.length).map((r, i): Json => ({ ...r, ts: NOT_RFC3339[i] })),
      ]
      const records = [good[0], bad[0], good[1], bad[1], bad[2], ...good.slice(2), ...bad.slice(3)]
      const res = await ctx.http.post(`/v1/grid/connectors/${connector}/ingest`, { records })
      expectStatus(res, 202, `a batch of ${good.length} valid and ${bad.length} invalid records`)
      const body = obj(res.body)
      const rejectedTs = (Array.isArray(body.rejections) ? body.rejections : [])
        .map((r) => records[Number(obj(r).index)]?.ts)
        .filter((ts) => ts !== undefined)
      assert(
        body.accepted === good.length && body.rejected === bad.length,
        `accepted ${short(body.accepted)}, rejected ${short(body.rejected)}: expected ${good.length} and ${bad.length} (records with a ts RFC 3339 refuses, e.g. ${NOT_RFC3339.slice(0, 3).join(', ')}, and one without id must be rejected; ${RFC3339_COMMON.join(', ')} are RFC 3339 and must be accepted)${rejectedTs.length > 0 ? `; rejected: ${short(rejectedTs)}` : ''}`,
      )
      // What was accepted must be what is stored: read it back where the deployment serves a read (an extension).
      const page = await ctx.http.get(`/v1/grid/connectors/${connector}/records?limit=50`)
      if (
        unservedPart(
          ctx,
          page,
          'GET /v1/grid/connectors/{connector_id}/records',
          'the "accepted counts what was stored" part',
        )
      )
        return
      expectStatus(page, 200, 'reading the connector’s records back')
      const ids = (pageItems(page.body) ?? []).map((r) => obj(r).id)
      assert(
        sameJson(
          ids,
          good.map((r) => r.id),
        ),
        `the connector holds ${short(ids)}, expected exactly the 2 accepted records ${short(good.map((r) => r.id))}`,
      )
    },
  },
  {
    id: 'ingest.rejections-explained',
    title: 'A record without ts is rejected with its index, id and reason; the valid ones are accepted',
    level: 'profile',
    clauses: ['S1.6', 'S2.10'],
    async run(ctx) {
      const { res, records } = await mixedBatch(ctx)
      const b = obj(res.body)
      assert(
        b.accepted === 3 && b.rejected === 1,
        `accepted ${short(b.accepted)}, rejected ${short(b.rejected)}`,
      )
      const r = obj((b.rejections as unknown[] | undefined)?.[0])
      assert(r.index === 3 && r.id === records[3]!.id, `rejection ${short(r)}`)
      assert(r.code === 'missing_field' || r.code === 'invalid_timestamp', `rejection code ${short(r.code)}`)
    },
  },
  {
    id: 'ingest.lineage-root-merkle',
    title: 'lineage_root is the RFC 6962 Merkle root over the JCS bytes of the accepted records',
    level: 'profile',
    clauses: ['S2.11'],
    async run(ctx) {
      const { res, records } = await mixedBatch(ctx)
      const accepted = records.slice(0, 3).map((r) =>
        Buffer.from(
          canonicalize({
            id: r.id,
            ts: r.ts,
            source: r.source,
            policy_class: r.policy_class,
            body: r.body,
          }),
        ),
      )
      const want = merkleRoot(accepted)
      assert(
        obj(res.body).lineage_root === want,
        `lineage_root ${short(obj(res.body).lineage_root)}, expected ${want}`,
      )
    },
  },
  {
    id: 'ingest.idempotent-replay',
    title:
      'Repeating a batch with the same Idempotency-Key returns the same answer and stores nothing twice; a new batch under a fresh key is stored',
    level: 'core',
    clauses: ['S4.2', 'S8.3'],
    async run(ctx) {
      const connector = ctx.name('conn-idem')
      const send = (records: Json[], key: string) =>
        ctx.http.post(
          `/v1/grid/connectors/${connector}/ingest`,
          { records },
          { headers: { 'idempotency-key': key } },
        )
      // Reading records back is the profile's extension endpoint: where a deployment does not serve it, the
      // stored-ids assertions are left out and the answers alone are judged (this check is core).
      const stored = async (what: string): Promise<unknown[] | undefined> => {
        const page = await ctx.http.get(`/v1/grid/connectors/${connector}/records?limit=50`)
        if (
          unservedPart(
            ctx,
            page,
            'GET /v1/grid/connectors/{connector_id}/records',
            'the "stores nothing twice" part (reading the records back)',
          )
        )
          return undefined
        expectStatus(page, 200, `GET records ${what}`)
        return ((pageItems(page.body) ?? []) as Json[]).map((r) => r.id)
      }
      const first = batch(ctx, 2)
      const key = `conf-${randomBytes(8).toString('hex')}`
      const a = await send(first, key)
      const b = await send(first, key)
      expectStatus(a, 202, 'first batch')
      expectStatus(b, 202, 'repeated batch')
      for (const f of ['accepted', 'rejected', 'lineage_root']) {
        assert(obj(a.body)[f] === obj(b.body)[f], `${f} differs between the batch and its replay`)
      }
      const want = first.map((r) => r.id)
      const afterReplay = await stored('after the replay')
      assert(
        afterReplay === undefined || sameJson(afterReplay, want),
        `after a batch and its replay the connector holds ${short(afterReplay)}, expected ${short(want)}`,
      )
      // Without this, a server that answers every batch alike (and stores nothing) would pass.
      const second = batch(ctx, 2)
      const c = await send(second, `conf-${randomBytes(8).toString('hex')}`)
      expectStatus(c, 202, 'a new batch under a fresh key')
      assert(
        obj(c.body).accepted === 2,
        `the new batch counted ${short(obj(c.body).accepted)} accepted, not 2`,
      )
      assert(
        typeof obj(c.body).lineage_root === 'string' && obj(c.body).lineage_root !== obj(a.body).lineage_root,
        'a new batch of other records answered the first batch’s lineage_root',
      )
      const afterSecond = await stored('after the new batch')
      const all = [...want, ...second.map((r) => r.id)]
      assert(
        afterSecond === undefined || sameJson(afterSecond, all),
        `after two batches the connector holds ${short(afterSecond)}, expected ${short(all)}`,
      )
    },
  },
  {
    id: 'ingest.records-read-back',
    title: 'Stored records read back in order, each with its lineage (leaf hash, batch root, index)',
    level: 'profile',
    clauses: ['S2.11'],
    async run(ctx) {
      const { res, connector } = await mixedBatch(ctx)
      const page = await ctx.http.get(`/v1/grid/connectors/${connector}/records?limit=50`)
      expectStatus(page, 200, 'GET records')
      const data = (pageItems(page.body) ?? []) as Json[]
      assert(data.length === 3, `${data.length} records stored, expected the 3 accepted`)
      data.forEach((r, i) => {
        const lineage = obj(r.lineage)
        assert(
          lineage.batch_root === obj(res.body).lineage_root,
          `record ${i} batch_root differs from lineage_root`,
        )
        assert(lineage.leaf_index === i, `record ${i} leaf_index ${short(lineage.leaf_index)}`)
      })
    },
  },
]
