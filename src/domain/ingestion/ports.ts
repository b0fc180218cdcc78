import type { Slice } from '../pagination.js'
import type { TxBound } from '../ports.js'
import type { BatchRow, StoredRecordRow } from './types.js'

export interface RecordRepository extends TxBound<RecordRepository> {
  /** Creates the connector on first use and locks it until the transaction ends; returns its last seq. */
  lockConnector(workspaceId: string, connectorId: string, now: number): Promise<number>
  /**
   * Stores a batch's records unless the connector already holds some of their ids, and answers those ids (usually
   * none). When it answers any, which of the records were stored is the store's choice: the caller removes them
   * (`deleteRecords`) and stores the batch again without the taken ids. Runs under the connector's lock.
   */
  insertNewRecords(records: readonly StoredRecordRow[]): Promise<Set<string>>
  /** Removes the connector's records with seq in [fromSeq, toSeq] (a batch stored in its own transaction). */
  deleteRecords(workspaceId: string, connectorId: string, fromSeq: number, toSeq: number): Promise<void>
  /**
   * The writes of a batch whose results nobody reads: a store may send them with the transaction's COMMIT, and a
   * failure then fails the transaction.
   */
  setLastSeq(workspaceId: string, connectorId: string, lastSeq: number, now: number): Promise<void>
  insertBatch(b: BatchRow): Promise<void>
  insertRecords(records: readonly StoredRecordRow[]): Promise<void>
  /** The connector's last seq, or undefined when the workspace has never ingested into it. */
  connectorLastSeq(workspaceId: string, connectorId: string): Promise<number | undefined>
  /** Records with seq > afterSeq, oldest first. */
  after(
    workspaceId: string,
    connectorId: string,
    afterSeq: number,
    limit: number,
  ): Promise<Slice<StoredRecordRow>>
  /** Every leaf hash of the given batches, in leaf order (to build inclusion proofs). */
  batchLeaves(batchIds: readonly string[]): Promise<Map<string, string[]>>
}
