import { type ChangeFeed, LocalChangeFeed } from '../changes.js'
import type { Clock } from '../clock.js'
import { toRfc3339 } from '../clock.js'
import { ApiError, notFound } from '../errors.js'
import type { EventsPort } from '../events/ports.js'
import { newId } from '../ids.js'
import type { Slice } from '../pagination.js'
import type { Db } from '../ports.js'
import type { QuotaGate } from '../quotas/service.js'
import { batchLineage, proofsFromLeafHashes } from './lineage.js'
import type { RecordRepository } from './ports.js'
import type { StoredRecordRow } from './types.js'
import { type IngestRecord, type Rejection, rejectionId, validateRecord } from './validation.js'

export const MAX_BATCH_RECORDS = 500

/** A batch over the record limit is 413 payload_too_large, like an oversized body (spec §8). */
export function checkBatchSize(count: number): void {
  if (count > MAX_BATCH_RECORDS) {
    throw new ApiError('payload_too_large', `A batch holds at most ${MAX_BATCH_RECORDS} records`, {
      limit_records: MAX_BATCH_RECORDS,
      observed_records: count,
    })
  }
}
/** Batches whose proofs stay computed; batches never change, so a cached proof never goes stale. */
const PROOF_CACHE_BATCHES = 64

export interface IngestResult {
  accepted: number
  rejected: number
  lineage_root: string
  batch_id: string
  rejections: Rejection[]
}

/** The contract's StoredRecord: the five fields as sent plus where and when the record landed, with lineage. */
export interface RecordView {
  id: string
  ts: string
  source: string
  policy_class: string
  body: Record<string, unknown>
  connector_id: string
  seq: number
  ingested_at: string
  lineage: {
    leaf_hash: string
    batch_root: string
    batch_id: string
    leaf_index: number
    batch_size: number
    proof: string[]
  }
}

export interface IngestWorkspace {
  id: string
  policyClasses: readonly string[]
}

export class IngestionService {
  private readonly proofCache = new Map<string, string[][]>()

  constructor(
    private readonly db: Db,
    private readonly repo: RecordRepository,
    private readonly clock: Clock,
    private readonly events: EventsPort,
    /**
     * The `records_per_connector` quota, counted under the connector's lock in the batch's transaction: a batch
     * that would pass it is refused whole (nothing stored).
     */
    private readonly quotas: QuotaGate,
    private readonly changes: ChangeFeed = new LocalChangeFeed(),
  ) {}

  /**
   * Validates every record on its own, then stores the accepted ones, their batch and the event in one
   * transaction. Duplicate ids are judged inside the transaction, after the connector row is locked, so two
   * concurrent batches can never both accept one id.
   */
  async ingest(
    workspace: IngestWorkspace,
    connectorId: string,
    records: readonly unknown[],
  ): Promise<IngestResult> {
    checkBatchSize(records.length)
    const rejections: Rejection[] = []
    const candidates: { index: number; record: IngestRecord }[] = []
    records.forEach((raw, index) => {
      const verdict = validateRecord(raw, workspace.policyClasses)
      if (verdict.ok) candidates.push({ index, record: verdict.record })
      else rejections.push({ index, id: rejectionId(raw), code: verdict.code, message: verdict.message })
    })
    const now = this.clock.now()
    // Stryker disable next-line StringLiteral: the id's prefix; batch_id is opaque (the contract types it a string)
    const batchId = newId('batch', now)
    const duplicate = (c: { index: number; record: IngestRecord }) =>
      rejections.push({
        index: c.index,
        id: c.record.id,
        code: 'duplicate_id',
        message: `A record with id "${c.record.id}" was already ingested by this connector`,
      })
    // An id repeated within the batch is a duplicate of its first occurrence.
    const seen = new Set<string>()
    let unique: { index: number; record: IngestRecord }[] = []
    for (const c of candidates) {
      if (seen.has(c.record.id)) duplicate(c)
      else {
        seen.add(c.record.id)
        unique.push(c)
      }
    }
    // Hashed before the transaction, as if no id were taken (the usual case): the connector's lock and the store's
    // connection are held for the statements only.
    let accepted = unique.map((c) => c.record)
    let lineage = batchLineage(accepted)

    const outcome = await this.db.transaction(async (tx) => {
      const repo = this.repo.in(tx)
      // The connector exists from its first batch on, even one with nothing to accept.
      const lastSeq = await repo.lockConnector(workspace.id, connectorId, now)
      if (accepted.length === 0) return { lineage, lastSeq: undefined }
      const rowsOf = (records: IngestRecord[], lin: typeof lineage): StoredRecordRow[] =>
        records.map((r, i) => ({
          workspaceId: workspace.id,
          connectorId,
          seq: lastSeq + i + 1,
          id: r.id,
          ts: r.ts,
          source: r.source,
          policyClass: r.policy_class,
          body: r.body,
          batchId,
          leafIndex: i,
          batchSize: records.length,
          batchRoot: lin.root,
          leafHash: lin.leafHashes[i] as string,
          ingestedAt: now,
        }))
      // Stored as if no id were taken (the usual case: one statement, the unique index judges each id); ids the
      // connector held already are judged under its lock, so two concurrent batches never both accept one id.
      const taken = await repo.insertNewRecords(rowsOf(accepted, lineage))
      // Stryker disable next-line ConditionalExpression,EqualityOperator: with no id taken, storing again stores the same
      if (taken.size > 0) {
        // Numbered and hashed without the taken ids: what was stored goes, the rest is stored again.
        // Stryker disable next-line ArithmeticOperator: SQLite (the mutation run's store) stores none of a batch with a taken id, so there is nothing to remove; PostgreSQL's partial insert is the store tests' (test/ingest)
        const lastStored = lastSeq + accepted.length
        await repo.deleteRecords(workspace.id, connectorId, lastSeq + 1, lastStored)
        for (const c of unique) if (taken.has(c.record.id)) duplicate(c)
        unique = unique.filter((c) => !taken.has(c.record.id))
        accepted = unique.map((c) => c.record)
        lineage = batchLineage(accepted)
        if (accepted.length === 0) return { lineage, lastSeq: undefined }
        await repo.insertRecords(rowsOf(accepted, lineage))
      }
      await this.quotas.take(tx, workspace.id, 'records_per_connector', accepted.length, connectorId)
      await repo.insertBatch({
        id: batchId,
        workspaceId: workspace.id,
        connectorId,
        lineageRoot: lineage.root,
        accepted: accepted.length,
        // Stryker disable next-line ArithmeticOperator: the batch row's count of rejections is kept, never read back
        rejected: records.length - accepted.length,
        firstSeq: lastSeq + 1,
        createdAt: now,
      })
      const newLast = lastSeq + accepted.length
      await repo.setLastSeq(workspace.id, connectorId, newLast, now)
      await this.events.append(tx, {
        workspaceId: workspace.id,
        kind: 'ingest.batch_accepted',
        subjectId: connectorId,
        data: {
          connector_id: connectorId,
          batch_id: batchId,
          accepted: accepted.length,
          rejected: records.length - accepted.length,
          lineage_root: lineage.root,
        },
      })
      return { lineage, lastSeq: newLast }
    })

    // Wake-ups after the commit: the stream pushes the records to their subscribers "as they land" (§4), and the
    // event outbox sends the batch's event. The polls behind them (the stream's fallback poll, the outbox's) find
    // the batch all the same, later: they are the net for a wake-up lost.
    if (outcome.lastSeq !== undefined) {
      this.events.notify()
      this.changes.publish({
        kind: 'records',
        workspaceId: workspace.id,
        connectorId,
        lastSeq: outcome.lastSeq,
      })
    }
    rejections.sort((a, b) => a.index - b.index)
    return {
      accepted: records.length - rejections.length,
      rejected: rejections.length,
      lineage_root: outcome.lineage.root,
      batch_id: batchId,
      rejections,
    }
  }

  /** A page of the connector's records (seq > afterSeq); 404 for a connector the workspace never fed. */
  async list(
    workspaceId: string,
    connectorId: string,
    afterSeq: number,
    limit: number,
  ): Promise<Slice<RecordView>> {
    if ((await this.repo.connectorLastSeq(workspaceId, connectorId)) === undefined) {
      throw notFound('Connector')
    }
    return this.recordsAfter(workspaceId, connectorId, afterSeq, limit)
  }

  /** Records with seq > afterSeq, oldest first, with inclusion proofs. */
  async recordsAfter(
    workspaceId: string,
    connectorId: string,
    afterSeq: number,
    limit: number,
  ): Promise<Slice<RecordView>> {
    const { rows, more } = await this.repo.after(workspaceId, connectorId, afterSeq, limit)
    const proofs = await this.batchProofs([...new Set(rows.map((r) => r.batchId))])
    return {
      // Stryker disable next-line ArrayDeclaration,OptionalChaining: every stored record's batch has its paths (batchLeaves reads them)
      rows: rows.map((r) => toRecordView(r, proofs.get(r.batchId)?.[r.leafIndex] ?? [])),
      more,
    }
  }

  /**
   * Audit paths of whole batches, computed once per batch and kept in a small LRU (every subscriber reuses them).
   * Which batches stay cached decides only when a path is computed again, never what it is: the eviction and the
   * choice to compute again are speed paths.
   */
  private async batchProofs(batchIds: string[]): Promise<Map<string, string[][]>> {
    const found = new Map<string, string[][]>()
    // Stryker disable next-line ArrayDeclaration: an id no batch has reads no leaves (the store answers the batches it has)
    const missing: string[] = []
    for (const id of batchIds) {
      const cached = this.proofCache.get(id)
      // Stryker disable next-line ConditionalExpression: computing a cached batch's paths again gives the same paths
      if (cached === undefined) missing.push(id)
      else {
        found.set(id, cached)
        this.proofCache.delete(id)
        this.proofCache.set(id, cached)
      }
    }
    // The store answers no batch at once for an empty list.
    for (const [id, leaves] of await this.repo.batchLeaves(missing)) {
      const proofs = proofsFromLeafHashes(leaves)
      found.set(id, proofs)
      this.proofCache.set(id, proofs)
    }
    // Stryker disable all: the eviction (a speed path, see above)
    for (const oldest of this.proofCache.keys()) {
      if (this.proofCache.size <= PROOF_CACHE_BATCHES) break
      this.proofCache.delete(oldest)
    }
    // Stryker restore all
    return found
  }

  /** The connector's last seq (0 when it has no records yet). */
  async lastSeq(workspaceId: string, connectorId: string): Promise<number> {
    return (await this.repo.connectorLastSeq(workspaceId, connectorId)) ?? 0
  }
}

export function toRecordView(r: StoredRecordRow, proof: string[]): RecordView {
  return {
    id: r.id,
    ts: r.ts,
    source: r.source,
    policy_class: r.policyClass,
    body: r.body,
    connector_id: r.connectorId,
    seq: r.seq,
    ingested_at: toRfc3339(r.ingestedAt),
    lineage: {
      leaf_hash: r.leafHash,
      batch_root: r.batchRoot,
      batch_id: r.batchId,
      leaf_index: r.leafIndex,
      batch_size: r.batchSize,
      proof,
    },
  }
}
