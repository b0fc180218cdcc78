import type { RecordRepository } from '../../domain/ingestion/ports.js'
import type { BatchRow, StoredRecordRow } from '../../domain/ingestion/types.js'
import type { Slice } from '../../domain/pagination.js'
import type { Dialect } from '../../domain/ports.js'
import { commitTailOf, failedOn, fromJson, type Queryable, type SqlValue, toJson } from '../db.js'
import { lookAheadLimit, toSlice } from '../paging.js'

interface RawRecord extends Record<string, unknown> {
  workspace_id: string
  connector_id: string
  seq: number | string
  record_id: string
  ts: string
  source: string
  policy_class: string
  body: string
  batch_id: string
  leaf_index: number | string
  batch_size: number | string
  batch_root: string
  leaf_hash: string
  ingested_at: number | string
}

function toRecord(r: RawRecord): StoredRecordRow {
  return {
    workspaceId: r.workspace_id,
    connectorId: r.connector_id,
    seq: Number(r.seq),
    id: r.record_id,
    ts: r.ts,
    source: r.source,
    policyClass: r.policy_class,
    body: fromJson<Record<string, unknown>>(r.body),
    batchId: r.batch_id,
    leafIndex: Number(r.leaf_index),
    batchSize: Number(r.batch_size),
    batchRoot: r.batch_root,
    leafHash: r.leaf_hash,
    ingestedAt: Number(r.ingested_at),
  }
}

const RECORD_COLUMNS = 14
// Keeps every multi-row INSERT far below SQLite's and PostgreSQL's bound-parameter limits.
const INSERT_CHUNK = 100
// The IN list of the duplicate check; a full batch is one query.
const ID_CHUNK = 500

/**
 * Statement texts per row count, built once: the drivers cache prepared statements by their text, and a text
 * rebuilt per batch costs its construction plus hashing 10 kB of SQL to find the cached statement.
 */
function textPerCount(build: (count: number) => string): (count: number) => string {
  const texts = new Map<number, string>()
  return (count) => {
    let text = texts.get(count)
    if (text === undefined) {
      text = build(count)
      texts.set(count, text)
    }
    return text
  }
}

const insertRecordsSql = textPerCount((rows) => {
  const values = Array.from({ length: rows }, (_, j) => {
    const base = j * RECORD_COLUMNS
    return `(${Array.from({ length: RECORD_COLUMNS }, (_, k) => `$${base + k + 1}`).join(', ')})`
  })
  return `INSERT INTO ingest_records (workspace_id, connector_id, seq, record_id, ts, source, policy_class, body,
       batch_id, leaf_index, batch_size, batch_root, leaf_hash, ingested_at)
     VALUES ${values.join(', ')}`
})

const existingIdsSql = textPerCount((ids) => {
  const placeholders = Array.from({ length: ids }, (_, j) => `$${j + 3}`).join(', ')
  return `SELECT record_id FROM ingest_records
       WHERE workspace_id = $1 AND connector_id = $2 AND record_id IN (${placeholders})`
})

/**
 * PostgreSQL's batch insert: one statement per batch whatever its size, the per-record columns bound as arrays and
 * turned back into rows by `unnest`, the columns a batch shares bound once. One parse, one plan and one round trip
 * for 500 records, where multi-row VALUES lists cost 14 bound parameters per record.
 */
const INSERT_RECORDS_BY_SET = `INSERT INTO ingest_records (workspace_id, connector_id, seq, record_id, ts, source,
    policy_class, body, batch_id, leaf_index, batch_size, batch_root, leaf_hash, ingested_at)
  SELECT $1, $2, r.seq, r.record_id, r.ts, r.source, r.policy_class, r.body, $3, r.leaf_index, $4, $5, r.leaf_hash, $6
  FROM unnest($7::bigint[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::integer[],
    $14::text[]) AS r(seq, record_id, ts, source, policy_class, body, leaf_index, leaf_hash)`

/** Where a PostgreSQL batch's plain insert returns to when one of its ids was taken (always inside a transaction). */
const SAVEPOINT = 'SAVEPOINT ingest_records_insert'

/**
 * A unique violation of ingest_records: one of the batch's ids the connector already holds (its seqs cannot collide,
 * being the connector's next ones, taken under its lock).
 */
function idTaken(err: unknown): boolean {
  return failedOn(err, 'ingest_records', ['23505'])
}

/**
 * PostgreSQL's batch insert that judges duplicate ids itself: each row is inserted unless the connector holds its id
 * (ON CONFLICT on the unique index of workspace, connector and id, whose arbiter probe is no planner's choice), and
 * the statement answers the ids it skipped. A separate `SELECT ... WHERE record_id = ANY($ids)` was planned from
 * statistics that lag behind a growing connector: taken while it was small, they made walking the connector's whole
 * key range and testing each row against the 500 ids look cheapest, a cost that grows with every batch
 * (test/store/ingest-duplicate-check.test.ts).
 */
const INSERT_NEW_RECORDS_BY_SET = `WITH stored AS (
  ${INSERT_RECORDS_BY_SET}
  ON CONFLICT (workspace_id, connector_id, record_id) DO NOTHING
  RETURNING record_id)
SELECT id AS record_id FROM unnest($8::text[]) AS batch(id) EXCEPT SELECT record_id FROM stored`

export class RecordRepo implements RecordRepository {
  constructor(
    private readonly db: Queryable,
    private readonly dialect: Dialect,
  ) {}

  /** The same repository inside a transaction that spans several repositories. */
  in(tx: Queryable): RecordRepo {
    return new RecordRepo(tx, this.dialect)
  }

  /**
   * Creates the connector on first use and, in the same statement, row-locks it until the transaction ends
   * (PostgreSQL's ON CONFLICT DO UPDATE), so concurrent batches on one connector take seq numbers and check
   * duplicate ids one after the other. Returns the connector's last seq.
   */
  async lockConnector(workspaceId: string, connectorId: string, now: number): Promise<number> {
    const row = await this.db.one<{ last_seq: number | string }>(
      `INSERT INTO connectors (workspace_id, id, last_seq, created_at, updated_at) VALUES ($1, $2, 0, $3, $3)
       ON CONFLICT (workspace_id, id) DO UPDATE SET updated_at = excluded.updated_at
       RETURNING last_seq`,
      [workspaceId, connectorId, now],
    )
    return Number(row?.last_seq ?? 0)
  }

  async setLastSeq(workspaceId: string, connectorId: string, lastSeq: number, now: number): Promise<void> {
    await this.write(
      'UPDATE connectors SET last_seq = $3, updated_at = $4 WHERE workspace_id = $1 AND id = $2',
      [workspaceId, connectorId, lastSeq, now],
    )
  }

  /** Which of `ids` the connector already holds (SQLite; PostgreSQL judges them in the insert). */
  private async existingIds(
    workspaceId: string,
    connectorId: string,
    ids: readonly string[],
  ): Promise<Set<string>> {
    const found = new Set<string>()
    for (let i = 0; i < ids.length; i += ID_CHUNK) {
      const chunk = ids.slice(i, i + ID_CHUNK)
      const params: string[] = [workspaceId, connectorId]
      for (const id of chunk) params.push(id)
      const rows = await this.db.query<{ record_id: string }>(existingIdsSql(chunk.length), params)
      for (const r of rows) found.add(r.record_id)
    }
    return found
  }

  async insertNewRecords(records: readonly StoredRecordRow[]): Promise<Set<string>> {
    const first = records[0]
    if (!first) return new Set()
    if (this.dialect === 'postgres') {
      const params = bySetParams(records)
      // The usual batch holds no id its connector has: a plain insert, whose unique index judges each id as it
      // goes in, behind a savepoint sent in the same socket write. ON CONFLICT's speculative insertion costs about
      // half as much again per row, so it runs only once an id was taken: back to the savepoint, and the insert
      // that skips the taken ids and answers them.
      const [saved, inserted] = await Promise.allSettled([
        this.db.run(SAVEPOINT),
        this.db.run(INSERT_RECORDS_BY_SET, params),
      ])
      if (saved.status === 'rejected') throw saved.reason
      if (inserted.status === 'fulfilled') return new Set()
      if (!idTaken(inserted.reason)) throw inserted.reason
      await this.db.run(`ROLLBACK TO ${SAVEPOINT}`)
      const rows = await this.db.query<{ record_id: string }>(INSERT_NEW_RECORDS_BY_SET, params)
      return new Set(rows.map((r) => r.record_id))
    }
    // SQLite: looked up first (one writer, no planner surprise); nothing is stored when any id is taken.
    const taken = await this.existingIds(
      first.workspaceId,
      first.connectorId,
      records.map((r) => r.id),
    )
    if (taken.size === 0) await this.insertRecords(records)
    return taken
  }

  async deleteRecords(
    workspaceId: string,
    connectorId: string,
    fromSeq: number,
    toSeq: number,
  ): Promise<void> {
    await this.write(
      'DELETE FROM ingest_records WHERE workspace_id = $1 AND connector_id = $2 AND seq >= $3 AND seq <= $4',
      [workspaceId, connectorId, fromSeq, toSeq],
    )
  }

  /**
   * A write whose result nobody reads: on PostgreSQL held back and sent with the COMMIT (`CommitTail`), so a batch's
   * rows, its batch row and the connector's new last seq cost no round trip of their own; at once elsewhere.
   */
  private async write(sql: string, params: readonly SqlValue[]): Promise<void> {
    const tail = this.dialect === 'postgres' ? commitTailOf(this.db) : undefined
    if (tail) tail.atCommit(sql, params)
    else await this.db.run(sql, params)
  }

  async insertBatch(b: BatchRow): Promise<void> {
    await this.write(
      `INSERT INTO ingest_batches (id, workspace_id, connector_id, lineage_root, accepted, rejected, first_seq, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [b.id, b.workspaceId, b.connectorId, b.lineageRoot, b.accepted, b.rejected, b.firstSeq, b.createdAt],
    )
  }

  async insertRecords(records: readonly StoredRecordRow[]): Promise<void> {
    if (this.dialect === 'postgres') return this.insertRecordsBySet(records)
    for (let i = 0; i < records.length; i += INSERT_CHUNK) {
      const end = Math.min(records.length, i + INSERT_CHUNK)
      const params: (string | number)[] = new Array((end - i) * RECORD_COLUMNS)
      let p = 0
      for (let j = i; j < end; j++) {
        const r = records[j] as StoredRecordRow
        params[p++] = r.workspaceId
        params[p++] = r.connectorId
        params[p++] = r.seq
        params[p++] = r.id
        params[p++] = r.ts
        params[p++] = r.source
        params[p++] = r.policyClass
        params[p++] = toJson(r.body)
        params[p++] = r.batchId
        params[p++] = r.leafIndex
        params[p++] = r.batchSize
        params[p++] = r.batchRoot
        params[p++] = r.leafHash
        params[p++] = r.ingestedAt
      }
      await this.db.run(insertRecordsSql(end - i), params)
    }
  }

  /** The batch in one statement (INSERT_RECORDS_BY_SET). */
  private async insertRecordsBySet(records: readonly StoredRecordRow[]): Promise<void> {
    if (records.length === 0) return
    await this.write(INSERT_RECORDS_BY_SET, bySetParams(records))
  }

  /** The connector's last seq, or undefined when the workspace has never ingested into it. */
  async connectorLastSeq(workspaceId: string, connectorId: string): Promise<number | undefined> {
    const row = await this.db.one<{ last_seq: number | string }>(
      'SELECT last_seq FROM connectors WHERE workspace_id = $1 AND id = $2',
      [workspaceId, connectorId],
    )
    return row ? Number(row.last_seq) : undefined
  }

  /** Records with seq > afterSeq, oldest first. */
  async after(
    workspaceId: string,
    connectorId: string,
    afterSeq: number,
    limit: number,
  ): Promise<Slice<StoredRecordRow>> {
    const rows = await this.db.query<RawRecord>(
      `SELECT * FROM ingest_records WHERE workspace_id = $1 AND connector_id = $2 AND seq > $3
       ORDER BY seq LIMIT $4`,
      [workspaceId, connectorId, afterSeq, lookAheadLimit(limit)],
    )
    return toSlice(rows.map(toRecord), limit)
  }

  /**
   * Every leaf hash of the given batches, in leaf order (to build inclusion proofs). A batch's records are the seq
   * range its row names, read through the primary key, so no index on batch_id is kept up to date per record.
   */
  async batchLeaves(batchIds: readonly string[]): Promise<Map<string, string[]>> {
    const leaves = new Map<string, string[]>()
    if (batchIds.length === 0) return leaves
    const placeholders = batchIds.map((_, i) => `$${i + 1}`).join(', ')
    const rows = await this.db.query<{ batch_id: string; leaf_hash: string }>(
      `SELECT r.batch_id, r.leaf_hash FROM ingest_batches b
       JOIN ingest_records r ON r.workspace_id = b.workspace_id AND r.connector_id = b.connector_id
         AND r.seq >= b.first_seq AND r.seq < b.first_seq + b.accepted
       WHERE b.id IN (${placeholders})
       ORDER BY r.batch_id, r.leaf_index`,
      [...batchIds],
    )
    for (const r of rows) {
      const list = leaves.get(r.batch_id) ?? []
      list.push(r.leaf_hash)
      leaves.set(r.batch_id, list)
    }
    return leaves
  }
}

/**
 * The parameters of INSERT_RECORDS_BY_SET. The shared columns are the first record's: the ingestion service stores
 * one batch of one connector per call, so they are the same for every record.
 */
function bySetParams(records: readonly StoredRecordRow[]): SqlValue[] {
  const first = records[0]
  if (!first) throw new Error('bySetParams takes at least one record')
  const n = records.length
  const seqs: number[] = new Array(n)
  const ids: string[] = new Array(n)
  const tss: string[] = new Array(n)
  const sources: string[] = new Array(n)
  const classes: string[] = new Array(n)
  const bodies: string[] = new Array(n)
  const leafIndexes: number[] = new Array(n)
  const leafHashes: string[] = new Array(n)
  for (let i = 0; i < n; i++) {
    const r = records[i] as StoredRecordRow
    if (
      r.workspaceId !== first.workspaceId ||
      r.connectorId !== first.connectorId ||
      r.batchId !== first.batchId
    ) {
      throw new Error('insertRecords takes the records of one batch of one connector')
    }
    seqs[i] = r.seq
    ids[i] = r.id
    tss[i] = r.ts
    sources[i] = r.source
    classes[i] = r.policyClass
    bodies[i] = toJson(r.body)
    leafIndexes[i] = r.leafIndex
    leafHashes[i] = r.leafHash
  }
  return [
    first.workspaceId,
    first.connectorId,
    first.batchId,
    first.batchSize,
    first.batchRoot,
    first.ingestedAt,
    seqs,
    ids,
    tss,
    sources,
    classes,
    bodies,
    leafIndexes,
    leafHashes,
  ]
}
