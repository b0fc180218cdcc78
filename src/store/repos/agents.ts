import type { AgentRepository } from '../../domain/agents/ports.js'
import type { AgentRecord, Behavior } from '../../domain/agents/types.js'
import type { Slice } from '../../domain/pagination.js'
import { commitTailOf, fromJson, type Queryable, toJson } from '../db.js'
import { lookAheadLimit, toSlice } from '../paging.js'

interface AgentRow extends Record<string, unknown> {
  seq: number
  id: string
  workspace_id: string
  name: string
  behavior: string
  capabilities: string
  policy_envelope: string
  created_at: number
  updated_at: number
}

function toAgent(row: AgentRow): AgentRecord {
  return {
    seq: Number(row.seq),
    id: row.id,
    workspaceId: row.workspace_id,
    name: row.name,
    behavior: row.behavior as Behavior,
    capabilities: fromJson<string[]>(row.capabilities),
    policyEnvelope: row.policy_envelope,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  }
}

const INSERT = `INSERT INTO agents (id, workspace_id, name, behavior, capabilities, policy_envelope, created_at,
    updated_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`

export class AgentRepo implements AgentRepository {
  constructor(private readonly db: Queryable) {}

  /** The same repository inside a transaction that spans several repositories. */
  in(tx: Queryable): AgentRepo {
    return new AgentRepo(tx)
  }

  async insert(a: Omit<AgentRecord, 'seq'>): Promise<void> {
    const params = [
      a.id,
      a.workspaceId,
      a.name,
      a.behavior,
      toJson(a.capabilities),
      a.policyEnvelope,
      a.createdAt,
      a.updatedAt,
    ]
    // On PostgreSQL it goes out with the COMMIT, with the event that announces it (no round trip of its own).
    const tail = commitTailOf(this.db)
    // A fresh id's row (no foreign keys): it waits for no other transaction.
    if (tail) tail.atCommit(INSERT, params, 'waits-for-nothing')
    else await this.db.run(INSERT, params)
  }

  /** Only live agents of the workspace: a deleted or foreign agent is indistinguishable from a missing one. */
  async get(workspaceId: string, id: string): Promise<AgentRecord | undefined> {
    const row = await this.db.one<AgentRow>(
      'SELECT * FROM agents WHERE id = $1 AND workspace_id = $2 AND deleted_at IS NULL',
      [id, workspaceId],
    )
    return row ? toAgent(row) : undefined
  }

  /** Live agents of the workspace among `ids`, in one query (batched loading); missing ids are simply absent. */
  async getMany(workspaceId: string, ids: readonly string[]): Promise<AgentRecord[]> {
    if (ids.length === 0) return []
    const marks = ids.map((_, i) => `$${i + 2}`).join(', ')
    const rows = await this.db.query<AgentRow>(
      `SELECT * FROM agents WHERE workspace_id = $1 AND deleted_at IS NULL AND id IN (${marks})`,
      [workspaceId, ...ids],
    )
    return rows.map(toAgent)
  }

  async list(workspaceId: string, afterSeq: number, limit: number): Promise<Slice<AgentRecord>> {
    const rows = await this.db.query<AgentRow>(
      `SELECT * FROM agents WHERE workspace_id = $1 AND deleted_at IS NULL AND seq > $2 ORDER BY seq LIMIT $3`,
      [workspaceId, afterSeq, lookAheadLimit(limit)],
    )
    return toSlice(rows.map(toAgent), limit)
  }

  async markDeleted(workspaceId: string, id: string, at: number): Promise<boolean> {
    const changed = await this.db.run(
      'UPDATE agents SET deleted_at = $3, updated_at = $3 WHERE id = $1 AND workspace_id = $2 AND deleted_at IS NULL',
      [id, workspaceId, at],
    )
    return changed > 0
  }
}
