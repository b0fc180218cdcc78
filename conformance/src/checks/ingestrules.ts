/**
 * The types spec §2 gives an ingest record's fields (core), then the reference profile's per-record rules, duplicate
 * ids, batch limit and stored lineage (docs/ingestion.md): spec §7 "Reasons for rejected ingest records: not shown"
 * and §8 "Maximum records per ingest batch and maximum body size: not shown" leave each of those open, so their
 * checks are profile.
 */
import { createHash, randomBytes } from 'node:crypto'
import { canonicalize, sameJson } from '../canonical.js'
import type { Check, CheckContext } from '../check.js'
import { expectStatus, pageItems, unservedPart } from '../fixtures.js'
import { type HttpResponse, obj } from '../http.js'
import { assert, fail } from '../types.js'
import { short } from '../wait.js'
import { expectEnvelope, expectError } from './assertions.js'
import { batch, merkleRoot } from './ingest.js'
import { openStream } from './stream.js'
import { ownHook } from './webhooks.js'

type Json = Record<string, unknown>

/** One record the reference rejects, with its rejection code and a word its message must name. */
interface Refused {
  record: unknown
  code: string
  names: string
  /** A word the message must not hold (a field that is present and right). */
  absent?: string
}

/** The reference's documented rules (docs/ingestion.md "Per-record rules"), one refused record for each. */
function refusedRecords(ctx: CheckContext): Refused[] {
  const base = () => batch(ctx, 1)[0]!
  const without = (field: string): Json => {
    const { [field]: _gone, ...rest } = base()
    return rest
  }
  const long = 'x'.repeat(257)
  return [
    // The message names the fields missing, and only those.
    { record: without('id'), code: 'missing_field', names: 'id', absent: 'source' },
    { record: without('source'), code: 'missing_field', names: 'source', absent: 'policy_class' },
    { record: without('policy_class'), code: 'missing_field', names: 'policy_class', absent: 'source' },
    { record: without('body'), code: 'missing_field', names: 'body', absent: 'source' },
    { record: { ...without('body'), source: null }, code: 'missing_field', names: 'source, body' },
    { record: { ...base(), ts: null }, code: 'missing_field', names: 'ts', absent: 'source' },
    // A missing field is judged before an unknown one and before a bad value.
    { record: { ...without('source'), extra: 1, ts: 'yesterday' }, code: 'missing_field', names: 'source' },
    { record: { ...base(), extra: 1 }, code: 'invalid_field', names: 'extra', absent: 'source' },
    { record: { ...base(), id: '' }, code: 'invalid_field', names: 'id' },
    { record: { ...base(), id: 7 }, code: 'invalid_field', names: 'id' },
    { record: { ...base(), id: long }, code: 'invalid_field', names: 'id' },
    {
      record: { ...base(), id: `line\nbreak-${randomBytes(3).toString('hex')}` },
      code: 'invalid_field',
      names: 'id',
    },
    {
      record: { ...base(), id: `unit\u001fsep-${randomBytes(3).toString('hex')}` },
      code: 'invalid_field',
      names: 'id',
    },
    {
      record: { ...base(), id: `del\u007f-${randomBytes(3).toString('hex')}` },
      code: 'invalid_field',
      names: 'id',
    },
    { record: { ...base(), source: '' }, code: 'invalid_field', names: 'source' },
    { record: { ...base(), source: long }, code: 'invalid_field', names: 'source' },
    { record: { ...base(), source: 'tab\there' }, code: 'invalid_field', names: 'source' },
    { record: { ...base(), policy_class: '' }, code: 'invalid_field', names: 'policy_class' },
    { record: { ...base(), policy_class: long }, code: 'invalid_field', names: 'policy_class' },
    { record: { ...base(), policy_class: 'soh\u0001' }, code: 'invalid_field', names: 'policy_class' },
    { record: { ...base(), body: 'text' }, code: 'invalid_field', names: 'body' },
    { record: { ...base(), body: [1, 2] }, code: 'invalid_field', names: 'body' },
    // A bad value of an earlier field is judged before the timestamp and the policy class.
    { record: { ...base(), body: 'text', ts: 'yesterday' }, code: 'invalid_field', names: 'body' },
    { record: { ...base(), ts: 1_764_000_000 }, code: 'invalid_timestamp', names: 'RFC 3339' },
    {
      record: { ...base(), ts: 'yesterday', policy_class: 'no-such-class' },
      code: 'invalid_timestamp',
      names: 'RFC 3339',
    },
    {
      record: { ...base(), policy_class: 'no-such-class' },
      code: 'policy_class_not_allowed',
      names: 'no-such-class',
    },
    // RFC 3339 §5.7: a leap second ends a UTC day, so 23:59:60 once the offset is taken off, and nowhere else.
    { record: { ...base(), ts: '2026-11-23T10:00:60Z' }, code: 'invalid_timestamp', names: 'RFC 3339' },
    { record: { ...base(), ts: '2016-12-31T23:59:60+01:00' }, code: 'invalid_timestamp', names: 'RFC 3339' },
  ]
}

/** Records at the reference's documented bounds, each to be accepted. */
function boundaryRecords(ctx: CheckContext): Json[] {
  const b = () => batch(ctx, 1)[0]!
  const tag = randomBytes(3).toString('hex')
  return [
    { ...b(), id: `${tag}-${'i'.repeat(256 - tag.length - 1)}` },
    { ...b(), id: `with space ~ ${tag}` },
    { ...b(), source: 's'.repeat(256) },
    { ...b(), body: {} },
    // RFC 3339 allows these; the reference takes them (docs/ingestion.md): leap seconds that end a UTC day, lower
    // case t and z, the year 0000.
    { ...b(), ts: '2016-12-31T23:59:60Z' },
    { ...b(), ts: '2016-12-31T15:59:60-08:00' },
    { ...b(), ts: '2017-01-01T05:29:60+05:30' },
    { ...b(), ts: '2026-11-23t10:00:00z' },
    { ...b(), ts: '0000-01-01T00:00:00Z' },
  ]
}

const ingestPath = (connector: string) => `/v1/grid/connectors/${connector}/ingest`
/** The reference profile's read of a connector's stored records (an extension: a deployment may not serve it). */
const RECORDS = 'GET /v1/grid/connectors/{connector_id}/records'

function rejectionsOf(res: HttpResponse): Json[] {
  const list = obj(res.body).rejections
  return Array.isArray(list) ? (list as Json[]) : []
}

/** RFC 9162 §2.1.3.2: does `proof` (hex) take `leaf` at `index` of a `size`-leaf tree up to `root` (all hex)? */
export function verifyInclusion(
  leaf: string,
  index: number,
  size: number,
  proof: string[],
  root: string,
): boolean {
  const node = (l: Buffer, r: Buffer) =>
    createHash('sha256')
      .update(Buffer.concat([Buffer.from([1]), l, r]))
      .digest()
  if (index < 0 || index >= size) return false
  let fn = index
  let sn = size - 1
  let r = Buffer.from(leaf, 'hex')
  for (const hex of proof) {
    const p = Buffer.from(hex, 'hex')
    if (sn === 0) return false
    if (fn % 2 === 1 || fn === sn) {
      r = node(p, r)
      while (fn % 2 === 0 && fn !== 0) {
        fn >>= 1
        sn >>= 1
      }
    } else r = node(r, p)
    fn >>= 1
    sn >>= 1
  }
  return sn === 0 && r.toString('hex') === root
}

const leafHash = (record: Json) =>
  createHash('sha256')
    .update(Buffer.concat([Buffer.from([0]), Buffer.from(canonicalize(record))]))
    .digest('hex')

/** The five spec fields of a record as sent. */
const five = (r: Json): Json => ({
  id: r.id,
  ts: r.ts,
  source: r.source,
  policy_class: r.policy_class,
  body: r.body,
})

/**
 * Records §2 does not allow, in two batches: objects with a field missing, null or of another type; items that are
 * no object at all.
 */
function mistyped(ctx: CheckContext): unknown[][] {
  const base = () => batch(ctx, 1)[0]!
  const without = (field: string): Json => {
    const { [field]: _gone, ...rest } = base()
    return rest
  }
  return [
    [
      without('source'),
      without('policy_class'),
      without('body'),
      { ...base(), id: null },
      { ...base(), ts: null },
      { ...base(), id: 7 },
      { ...base(), source: 7 },
      { ...base(), source: ['conformance'] },
      { ...base(), policy_class: true },
      { ...base(), body: 'text' },
      { ...base(), body: [1, 2] },
      { ...base(), ts: 1_764_000_000 },
    ],
    ['a string', 5, null, [base()]],
  ]
}

/**
 * Sends two valid records around `bad` and judges the answer: 202 with exactly the valid ones accepted, or a 400 in
 * the error envelope; then, where the deployment serves a read of the connector, that it holds exactly what was
 * accepted (nothing after a 400).
 */
async function neverAccepted(ctx: CheckContext, bad: unknown[], what: string): Promise<void> {
  const connector = ctx.name('conn-typed')
  const good = batch(ctx, 2)
  const records = [good[0], ...bad, good[1]]
  const res = await ctx.http.post(ingestPath(connector), { records })
  const sent = `a batch of 2 valid records and ${bad.length} ${what}`
  expectStatus(res, [202, 400], sent)
  let stored: unknown[] = []
  if (res.status === 400) expectEnvelope(res, sent)
  else {
    const body = obj(res.body)
    assert(
      body.accepted === good.length && body.rejected === bad.length,
      `${sent}: accepted ${short(body.accepted)}, rejected ${short(body.rejected)}, expected ${good.length} and ${bad.length}`,
    )
    stored = good.map((r) => r.id)
  }
  const page = await ctx.http.get(`/v1/grid/connectors/${connector}/records?limit=50`)
  // After a 400 the connector may not exist at all.
  if (res.status === 400 && page.status === 404) return
  const part = `the "what was accepted is what is stored" part (${what})`
  if (unservedPart(ctx, page, RECORDS, part)) return
  expectStatus(page, 200, 'reading the connector’s records back')
  const ids = (pageItems(page.body) ?? []).map((r) => obj(r).id)
  if (!sameJson(ids, stored))
    fail(`after ${sent} answered ${res.status}, the connector holds ${short(ids)}, expected ${short(stored)}`)
}

export const ingestRuleChecks: Check[] = [
  {
    id: 'ingest.typed-fields-enforced',
    title:
      'A record lacking one of the five §2 fields, or carrying one of another type, or no object at all, is never accepted: rejected in a 202, or the batch refused whole with a 400',
    level: 'core',
    clauses: ['S2.10', 'S2.11', 'S7.3'],
    async run(ctx) {
      // §2 Ingest record: id, ts, source, policy_class are strings (ts RFC 3339), body an object; §7 "400 | Schema
      // mismatch or malformed body". Whether such a record is rejected on its own (counted in `rejected`) or makes
      // the whole batch a 400 is the deployment's choice; counting it accepted, or storing its neighbours under a
      // 400, is neither.
      const [fields, items] = mistyped(ctx) as [unknown[], unknown[]]
      await neverAccepted(ctx, fields, 'records with a field missing, null or of another type')
      await neverAccepted(ctx, items, 'items that are no object')
    },
  },
  {
    id: 'ingest.rejection-codes',
    title:
      'Each record the profile refuses gets its documented code and a message naming the fault, judged rule by rule in order; records at the documented bounds are accepted',
    level: 'profile',
    clauses: ['S2.10'],
    async run(ctx) {
      const connector = ctx.name('conn-rules')
      const refused = refusedRecords(ctx)
      const good = boundaryRecords(ctx)
      const records = [...refused.map((r) => r.record), ...good]
      const res = await ctx.http.post(ingestPath(connector), { records })
      expectStatus(res, 202, `a batch of ${refused.length} refused and ${good.length} acceptable records`)
      const body = obj(res.body)
      const rejections = rejectionsOf(res)
      const problems: string[] = []
      for (const [index, want] of refused.entries()) {
        const got = rejections.find((r) => r.index === index)
        if (!got) {
          problems.push(`record ${index} (${short(want.record, 80)}) was not rejected`)
          continue
        }
        if (got.code !== want.code)
          problems.push(`record ${index}: code ${short(got.code)}, expected ${want.code}`)
        if (typeof got.message !== 'string' || !got.message.includes(want.names))
          problems.push(`record ${index}: message ${short(got.message)} does not name "${want.names}"`)
        else if (want.absent !== undefined && got.message.includes(want.absent))
          problems.push(
            `record ${index}: message ${short(got.message)} names "${want.absent}", which is right`,
          )
        const id = obj(want.record).id
        const wantId = typeof id === 'string' ? id : null
        if (got.id !== wantId)
          problems.push(`record ${index}: id ${short(got.id)}, expected ${short(wantId)}`)
      }
      const wrongly = rejections.filter((r) => Number(r.index) >= refused.length).map((r) => short(r, 120))
      if (wrongly.length > 0)
        problems.push(`records at the documented bounds were rejected: ${wrongly.join('; ')}`)
      const indexes = rejections.map((r) => Number(r.index))
      if (indexes.some((x, i) => i > 0 && x <= indexes[i - 1]!))
        problems.push(`rejections are not ordered by index: ${indexes.join(',')}`)
      if (body.accepted !== good.length || body.rejected !== refused.length)
        problems.push(
          `accepted ${short(body.accepted)}, rejected ${short(body.rejected)}: expected ${good.length} and ${refused.length}`,
        )
      // Items that are no object make a REST batch a 400 (the contract's schema); over the socket each is a record
      // rejected as invalid_field, its neighbours accepted.
      const s = await openStream(ctx, ctx.config.tokens.primary)
      if (!s) fail('the stream refused the primary token')
      try {
        const ref = ctx.name('ingest-items')
        const items = ['a string', [batch(ctx, 1)[0]], null, batch(ctx, 1)[0]]
        s.ws.send(JSON.stringify({ type: 'ingest', ref, connector_id: connector, records: items }))
        const m = await s.next((x) => x.ref === ref, ctx.config.waitMs)
        const codes = (Array.isArray(m?.rejections) ? (m.rejections as Json[]) : []).map((r) =>
          [r.index, r.id, r.code, typeof r.message === 'string' && r.message.includes('object')].join(' '),
        )
        const want = [0, 1, 2].map((i) => `${i}  invalid_field true`)
        if (m?.accepted !== 1 || !sameJson(codes, want))
          problems.push(
            `an ingest message of three items that are no object and one record answered ${short(m)}`,
          )
      } finally {
        s.close()
      }
      assert(problems.length === 0, problems.join('\n'))
    },
  },
  {
    id: 'ingest.duplicate-ids',
    title:
      'A record id the connector holds, or an earlier record of the batch carries, is rejected as duplicate_id; the rest are stored, numbered and hashed without it',
    level: 'profile',
    clauses: ['S2.10', 'S2.11'],
    async run(ctx) {
      const connector = ctx.name('conn-dup')
      const [a, b, c, d] = batch(ctx, 4) as [Json, Json, Json, Json]
      // The first batch ends with a record without ts: its rejection (index 3) is judged before the duplicate's
      // (index 2), and the answer still lists them by index.
      const noTs = { id: `no-ts-${randomBytes(3).toString('hex')}` }
      const first = await ctx.http.post(ingestPath(connector), {
        records: [a, b, { ...a, body: { again: 1 } }, noTs],
      })
      expectStatus(first, 202, 'a batch repeating its first id')
      const second = await ctx.http.post(ingestPath(connector), {
        records: [c, { ...b, source: 'resent' }, d],
      })
      expectStatus(second, 202, 'a batch resending a stored id')
      // A batch of nothing but stored ids: all rejected, nothing stored.
      const third = await ctx.http.post(ingestPath(connector), { records: [a, d] })
      expectStatus(third, 202, 'a batch of stored ids only')
      assert(
        obj(third.body).accepted === 0 &&
          sameJson(
            rejectionsOf(third).map((r) => [r.index, r.code]),
            [
              [0, 'duplicate_id'],
              [1, 'duplicate_id'],
            ],
          ),
        `a batch of two stored ids answered ${short(third.body)}, expected both rejected as duplicate_id`,
      )
      for (const [res, what, index, id, others] of [
        [first, 'the repeat within a batch', 2, a.id, [{ index: 3, id: noTs.id, code: 'missing_field' }]],
        [second, 'the id stored by the batch before', 1, b.id, []],
      ] as const) {
        const body = obj(res.body)
        assert(
          body.accepted === 2 && body.rejected === 1 + others.length,
          `${what}: accepted ${short(body.accepted)}, rejected ${short(body.rejected)}, expected 2 and ${1 + others.length}`,
        )
        const [rejection, ...more] = rejectionsOf(res)
        assert(
          sameJson(
            more.map((r) => ({ index: r.index, id: r.id, code: r.code })),
            others,
          ) &&
            rejection?.index === index &&
            rejection.id === id &&
            rejection.code === 'duplicate_id',
          `${what}: rejections ${short(rejectionsOf(res))}, expected index ${index}, id ${String(id)}, duplicate_id${others.length > 0 ? `, then ${short(others)}` : ''} (ordered by index)`,
        )
        assert(
          typeof rejection.message === 'string' && rejection.message.includes(String(id)),
          `${what}: the message ${short(rejection.message)} does not name the id`,
        )
      }
      assert(
        obj(first.body).lineage_root === merkleRoot([a, b].map((r) => Buffer.from(canonicalize(five(r))))),
        `the first batch's lineage_root ${short(obj(first.body).lineage_root)} is not the root over its two accepted records`,
      )
      assert(
        obj(second.body).lineage_root === merkleRoot([c, d].map((r) => Buffer.from(canonicalize(five(r))))),
        `the second batch's lineage_root ${short(obj(second.body).lineage_root)} is not the root over its two accepted records`,
      )
      const page = await ctx.http.get(`/v1/grid/connectors/${connector}/records?limit=50`)
      if (unservedPart(ctx, page, RECORDS, 'the stored-records part (reading the connector back)')) return
      expectStatus(page, 200, 'reading the records back')
      const stored = (pageItems(page.body) ?? []) as Json[]
      const want = [a, b, c, d]
      assert(
        sameJson(stored.map(five), want.map(five)),
        `the connector holds ${short(stored.map((r) => r.id))}, expected ${short(want.map((r) => r.id))} as first sent`,
      )
      stored.forEach((r, i) => {
        const lineage = obj(r.lineage)
        const batchOf = i < 2 ? first : second
        assert(
          r.seq === i + 1 &&
            lineage.leaf_index === i % 2 &&
            lineage.batch_size === 2 &&
            lineage.batch_root === obj(batchOf.body).lineage_root,
          `stored record ${i}: seq ${short(r.seq)}, lineage ${short(lineage)}; expected seq ${i + 1}, leaf_index ${i % 2} of 2 under its batch's root`,
        )
      })
    },
  },
  {
    id: 'ingest.batch-limit',
    title:
      'A batch of 500 records is taken whole; 501 records are refused whole with 413 payload_too_large naming the limit',
    level: 'profile',
    clauses: ['S4.9'],
    async run(ctx) {
      const connector = ctx.name('conn-limit')
      const full = batch(ctx, 500)
      const res = await ctx.http.post(ingestPath(connector), { records: full })
      expectStatus(res, 202, 'a batch of 500 records (the documented limit)')
      assert(
        obj(res.body).accepted === 500,
        `a batch of 500 counted ${short(obj(res.body).accepted)} accepted`,
      )
      const over = await ctx.http.post(ingestPath(ctx.name('conn-limit')), { records: batch(ctx, 501) })
      const error = expectError(over, 413, 'a batch of 501 records')
      assert(
        error.code === 'payload_too_large',
        `a batch of 501 answered ${short(error.code)}, not payload_too_large`,
      )
      const detail = obj(error.detail)
      assert(
        detail.limit_records === 500 && detail.observed_records === 501,
        `the 413's detail ${short(detail)} does not give limit_records 500 and observed_records 501`,
      )
      assert(
        String(error.message).includes('500'),
        `the 413's message ${short(error.message)} does not name the limit`,
      )
    },
  },
  {
    id: 'ingest.stored-lineage-verifies',
    title:
      'Every stored record carries its leaf hash, index, batch size and id, and an audit path that takes it to its batch root; an empty batch answers the empty tree and creates the connector',
    level: 'profile',
    clauses: ['S2.11'],
    async run(ctx) {
      const connector = ctx.name('conn-proof')
      const sizes = [7, 1, 4]
      const batches = sizes.map((n) => batch(ctx, n))
      const answers: Json[] = []
      for (const records of batches) {
        const res = await ctx.http.post(ingestPath(connector), { records })
        expectStatus(res, 202, `a batch of ${records.length}`)
        answers.push(obj(res.body))
      }
      const page = await ctx.http.get(`/v1/grid/connectors/${connector}/records?limit=50`)
      // What this check judges is the records as stored, read through the profile's extension.
      if (unservedPart(ctx, page, RECORDS, 'the whole check (reading the stored records)')) return
      expectStatus(page, 200, 'reading the records back')
      // Read twice: the second read must present the same lineage as the first (proofs are kept between reads).
      const again = await ctx.http.get(`/v1/grid/connectors/${connector}/records?limit=50`)
      expectStatus(again, 200, 'reading the records back again')
      assert(sameJson(again.body, page.body), 'reading the same records twice answered different lineage')
      const stored = (pageItems(page.body) ?? []) as Json[]
      const sent = batches.flat()
      assert(stored.length === sent.length, `${stored.length} records stored, expected ${sent.length}`)
      let seq = 0
      batches.forEach((records, b) => {
        records.forEach((rec, i) => {
          const r = stored[seq]!
          seq++
          const lineage = obj(r.lineage)
          const proof = Array.isArray(lineage.proof) ? (lineage.proof as string[]) : []
          const where = `record ${i} of batch ${b} (${String(rec.id)})`
          assert(
            r.id === rec.id && r.seq === seq && r.connector_id === connector,
            `${where}: read back as ${short(r)}`,
          )
          assert(
            lineage.leaf_hash === leafHash(five(rec)),
            `${where}: leaf_hash ${short(lineage.leaf_hash)} is not SHA-256(0x00 || JCS of its five fields)`,
          )
          assert(
            lineage.leaf_index === i &&
              lineage.batch_size === records.length &&
              lineage.batch_id === answers[b]!.batch_id &&
              lineage.batch_root === answers[b]!.lineage_root,
            `${where}: lineage ${short({ ...lineage, proof: undefined })} does not place it at ${i} of ${records.length} in batch ${short(answers[b]!.batch_id)}`,
          )
          assert(
            verifyInclusion(String(lineage.leaf_hash), i, records.length, proof, String(lineage.batch_root)),
            `${where}: the audit path ${short(proof)} does not take its leaf hash to the batch root`,
          )
        })
      })
      // A batch with nothing to accept: the empty tree's root, and the connector exists from it on.
      const empty = ctx.name('conn-empty')
      const none = await ctx.http.post(ingestPath(empty), { records: [{ id: 'no-ts' }] })
      expectStatus(none, 202, 'a batch whose one record is rejected')
      const emptyRoot = createHash('sha256').digest('hex')
      assert(
        obj(none.body).lineage_root === emptyRoot && obj(none.body).accepted === 0,
        `a batch with nothing accepted answered ${short(none.body)}, expected lineage_root ${emptyRoot}`,
      )
      const read = await ctx.http.get(`/v1/grid/connectors/${empty}/records`)
      expectStatus(read, 200, 'reading a connector whose only batch accepted nothing')
      assert((pageItems(read.body) ?? [undefined]).length === 0, `it holds ${short(read.body)}`)
      expectError(
        await ctx.http.get(`/v1/grid/connectors/${ctx.name('conn-never')}/records`),
        404,
        'reading a connector never fed',
      )
    },
  },
  {
    id: 'ingest.connector-id-pattern',
    title:
      'A connector id is 1 to 128 characters of [A-Za-z0-9_.:-] on every surface: the REST path answers others 400, the stream refuses them in a subscribe and in an ingest message',
    level: 'profile',
    clauses: ['S1.6', 'S4.10'],
    async run(ctx) {
      const tag = randomBytes(3).toString('hex')
      const longest = `${tag}-${'c'.repeat(128 - tag.length - 1)}`
      const good = [`ok.id:_-${tag}`, longest]
      const bad = [`bad id-${tag}`, `${longest}c`, `-${tag} x`]
      for (const id of bad.slice(0, 2)) {
        const res = await ctx.http.post(ingestPath(encodeURIComponent(id)), { records: batch(ctx, 1) })
        expectError(res, 400, `ingesting under the connector id ${short(id, 40)}`)
      }
      const s = await openStream(ctx, ctx.config.tokens.primary)
      if (!s) fail('the stream refused the primary token')
      try {
        const topics = [...good, ...bad].map((id) => `connector:${id}`)
        s.ws.send(JSON.stringify({ type: 'subscribe', topics }))
        const problems: string[] = []
        // One message, one wait: every topic's answer is due within --wait-ms of the subscribe (a deployment that
        // answers none then costs one wait, not one per topic).
        const deadline = Date.now() + ctx.config.waitMs
        for (const [i, topic] of topics.entries()) {
          const m = await s.next(
            (x) => (x.type === 'subscribed' || x.type === 'error') && x.topic === topic,
            Math.max(0, deadline - Date.now()),
          )
          const want = i < good.length ? 'subscribed' : 'error'
          if (m?.type !== want)
            problems.push(`subscribing to ${short(topic, 60)} answered ${short(m)}, not ${want}`)
        }
        const ref = `bad-connector-${tag}`
        s.ws.send(JSON.stringify({ type: 'ingest', ref, connector_id: bad[0], records: batch(ctx, 1) }))
        const answer = await s.next((x) => x.ref === ref, ctx.config.waitMs)
        if (answer?.type !== 'error' || obj(answer.error).code !== 'invalid_request')
          problems.push(`an ingest message for the connector id ${short(bad[0])} answered ${short(answer)}`)
        assert(problems.length === 0, problems.join('\n'))
      } finally {
        s.close()
      }
    },
  },
  {
    id: 'ingest.batch-event',
    title:
      'A batch that stored records emits one ingest.batch_accepted with its connector, batch id, counts and root; a batch that stored none emits nothing',
    level: 'profile',
    clauses: ['S1.8'],
    async run(ctx) {
      const { mine } = await ownHook(ctx, 'ingest-event', ['ingest.batch_accepted'])
      const empty = ctx.name('conn-event-empty')
      const none = await ctx.http.post(ingestPath(empty), { records: [{ id: 'no-ts' }] })
      expectStatus(none, 202, 'a batch that stores nothing')
      const connector = ctx.name('conn-event')
      const sentRecords = [...batch(ctx, 2), { id: 'no-ts' }]
      const res = await ctx.http.post(ingestPath(connector), { records: sentRecords })
      expectStatus(res, 202, 'a batch of two good records and one without ts')
      const delivery = await ctx.receiver!.waitFor(
        (d) => mine(d) && d.body?.connector_id === connector,
        ctx.config.waitMs,
      )
      // The same records again (every one a duplicate: nothing stored, no event), then one new record, whose event
      // comes after any the duplicates would have caused.
      const resent = await ctx.http.post(ingestPath(connector), { records: sentRecords })
      expectStatus(resent, 202, 'the same batch again')
      const last = await ctx.http.post(ingestPath(connector), { records: batch(ctx, 1) })
      expectStatus(last, 202, 'one more record')
      const lastEvent = await ctx.receiver!.waitFor(
        (d) => mine(d) && d.body?.batch_id === obj(last.body).batch_id,
        ctx.config.waitMs,
      )
      assert(lastEvent, `no ingest.batch_accepted for the batch ${short(obj(last.body).batch_id)}`)
      assert(delivery, `no ingest.batch_accepted for ${connector} within ${ctx.config.waitMs} ms`)
      const b = obj(res.body)
      const want = {
        connector_id: connector,
        batch_id: b.batch_id,
        accepted: 2,
        rejected: 1,
        lineage_root: b.lineage_root,
      }
      const got = Object.fromEntries(Object.keys(want).map((k) => [k, delivery.body?.[k]]))
      assert(
        delivery.body?.event === 'ingest.batch_accepted' && sameJson(got, want),
        `the delivery ${short(delivery.body)} does not carry ${short(want)}`,
      )
      const all = ctx.receiver!.deliveries.filter(mine)
      const forEmpty = all.filter((d) => d.body?.connector_id === empty || d.body?.accepted === 0)
      assert(
        forEmpty.length === 0,
        `a batch that stored nothing emitted ${short(forEmpty.map((d) => d.body))}`,
      )
      // Events, not deliveries: a delivery whose answer came late may be sent again under its event's id (or, with
      // no id, its batch's).
      const ours = new Set(
        all.filter((d) => d.body?.connector_id === connector).map((d) => d.body?.id ?? d.body?.batch_id),
      ).size
      assert(ours === 2, `${connector} took two batches that stored records and got ${ours} events`)
    },
  },
]
