import type { Slice } from '../../domain/pagination.js'
import type { ToolRepository } from '../../domain/tools/ports.js'
import type { NewTool, PolicyBinding, ToolRecord } from '../../domain/tools/types.js'
import { fromJson, type Queryable, toJson } from '../db.js'
import { lookAheadLimit, toSlice } from '../paging.js'

interface ToolRow extends Record<string, unknown> {
  seq: number
  id: string
  workspace_id: string
  name: string
  provider: string
  input_schema: string
  output_schema: string
  policy_binding: string
  idempotent: number
  config: string
  status: string
  created_at: number
  retired_at: number | null
}

function toTool(row: ToolRow): ToolRecord {
  return {
    seq: Number(row.seq),
    id: row.id,
    workspaceId: row.workspace_id,
    name: row.name,
    provider: row.provider,
    inputSchema: fromJson<Record<string, unknown>>(row.input_schema),
    outputSchema: fromJson<Record<string, unknown>>(row.output_schema),
    policyBinding: fromJson<PolicyBinding>(row.policy_binding),
    idempotent: Number(row.idempotent) === 1,
    config: fromJson<Record<string, unknown>>(row.config),
    status: row.status === 'retired' ? 'retired' : 'active',
    createdAt: Number(row.created_at),
    retiredAt: row.retired_at === null ? null : Number(row.retired_at),
  }
}

export class ToolRepo implements ToolRepository {
  constructor(private readonly db: Queryable) {}

  /** The same repository inside a transaction that spans several repositories. */
  in(tx: Queryable): ToolRepo {
    return new ToolRepo(tx)
  }

  /** Returns undefined when an active tool of that name exists (the unique index on active names decides). */
  async insertIfNameFree(t: NewTool): Promise<ToolRecord | undefined> {
    const row = await this.db.one<ToolRow>(
      `INSERT INTO tools (id, workspace_id, name, provider, input_schema, output_schema, policy_binding, idempotent,
         config, status, active_name, created_at, retired_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'active', $3, $10, NULL)
       ON CONFLICT (workspace_id, active_name) DO NOTHING RETURNING *`,
      [
        t.id,
        t.workspaceId,
        t.name,
        t.provider,
        toJson(t.inputSchema),
        toJson(t.outputSchema),
        toJson(t.policyBinding),
        t.idempotent,
        toJson(t.config),
        t.createdAt,
      ],
    )
    return row ? toTool(row) : undefined
  }

  async get(workspaceId: string, id: string): Promise<ToolRecord | undefined> {
    const row = await this.db.one<ToolRow>('SELECT * FROM tools WHERE id = $1 AND workspace_id = $2', [
      id,
      workspaceId,
    ])
    return row ? toTool(row) : undefined
  }

  async activeByName(workspaceId: string, name: string): Promise<ToolRecord | undefined> {
    const row = await this.db.one<ToolRow>(
      'SELECT * FROM tools WHERE workspace_id = $1 AND active_name = $2',
      [workspaceId, name],
    )
    return row ? toTool(row) : undefined
  }

  async list(
    workspaceId: string,
    includeRetired: boolean,
    afterSeq: number,
    limit: number,
  ): Promise<Slice<ToolRecord>> {
    const rows = await this.db.query<ToolRow>(
      `SELECT * FROM tools WHERE workspace_id = $1 AND seq > $2 ${includeRetired ? '' : "AND status = 'active'"}
       ORDER BY seq LIMIT $3`,
      [workspaceId, afterSeq, lookAheadLimit(limit)],
    )
    return toSlice(rows.map(toTool), limit)
  }

  async retire(workspaceId: string, id: string, at: number): Promise<boolean> {
    const changed = await this.db.run(
      `UPDATE tools SET status = 'retired', active_name = NULL, retired_at = $3
       WHERE id = $1 AND workspace_id = $2 AND status = 'active'`,
      [id, workspaceId, at],
    )
    return changed > 0
  }
}
