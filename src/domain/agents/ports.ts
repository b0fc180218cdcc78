import type { Slice } from '../pagination.js'
import type { TxBound } from '../ports.js'
import type { AgentRecord } from './types.js'

export interface AgentRepository extends TxBound<AgentRepository> {
  /**
   * Stores a new agent. Nothing is read back (its `seq` is the store's, for paging): on PostgreSQL, inside a
   * transaction, the insert goes out with the COMMIT and costs no round trip of its own.
   */
  insert(a: Omit<AgentRecord, 'seq'>): Promise<void>
  /** Only live agents of the workspace: a deleted or foreign agent is indistinguishable from a missing one. */
  get(workspaceId: string, id: string): Promise<AgentRecord | undefined>
  /** Live agents of the workspace among `ids`, in one query (batched loading); missing ids are absent. */
  getMany(workspaceId: string, ids: readonly string[]): Promise<AgentRecord[]>
  list(workspaceId: string, afterSeq: number, limit: number): Promise<Slice<AgentRecord>>
  markDeleted(workspaceId: string, id: string, at: number): Promise<boolean>
}
