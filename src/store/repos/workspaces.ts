import type { Tier, Workspace } from '../../domain/identity.js'
import type { WorkspaceRepository } from '../../domain/keys/ports.js'
import type { QuotaOverrides } from '../../domain/quotas/types.js'
import { fromJson, type Queryable, readerIn, toJson } from '../db.js'

interface WorkspaceRow extends Record<string, unknown> {
  id: string
  name: string
  tier: string
  limit_per_hour: number
  burst_limit: number
  /** The burst window's length in seconds (migration 015; 10 for the workspaces stored before it). */
  burst_window_seconds: number
  policy_classes: string
  features: string
  /** The workspace's own quotas (JSON); absent before migration 013. */
  quotas?: string | null
  created_at: number
}

function toWorkspace(row: WorkspaceRow): Workspace {
  return {
    id: row.id,
    name: row.name,
    tier: row.tier as Tier,
    limitPerHour: Number(row.limit_per_hour),
    burstLimit: Number(row.burst_limit),
    burstWindowSeconds: Number(row.burst_window_seconds),
    policyClasses: fromJson<string[]>(row.policy_classes),
    features: fromJson<string[]>(row.features),
    quotas: row.quotas ? fromJson<QuotaOverrides>(row.quotas) : {},
    createdAt: Number(row.created_at),
  }
}

export class WorkspaceRepo implements WorkspaceRepository {
  constructor(private readonly db: Queryable) {}

  /** The same repository inside a transaction that spans several repositories. */
  in(tx: Queryable): WorkspaceRepo {
    return new WorkspaceRepo(tx)
  }

  /** The workspace as the transaction `tx` sees it (a deferred unit reads nothing: then as committed). */
  byIdIn(tx: Queryable, id: string): Promise<Workspace | undefined> {
    return new WorkspaceRepo(readerIn(tx, this.db)).byId(id)
  }

  async byId(id: string): Promise<Workspace | undefined> {
    const row = await this.db.one<WorkspaceRow>('SELECT * FROM workspaces WHERE id = $1', [id])
    return row ? toWorkspace(row) : undefined
  }

  async byName(name: string): Promise<Workspace | undefined> {
    const row = await this.db.one<WorkspaceRow>('SELECT * FROM workspaces WHERE name = $1', [name])
    return row ? toWorkspace(row) : undefined
  }

  /** Inserts unless the name exists (two CLI calls may race); returns the stored workspace either way. */
  async insertIfAbsent(ws: Workspace): Promise<Workspace> {
    await this.db.run(
      `INSERT INTO workspaces (id, name, tier, limit_per_hour, burst_limit, policy_classes, features, created_at, quotas,
         burst_window_seconds)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (name) DO NOTHING`,
      [
        ws.id,
        ws.name,
        ws.tier,
        ws.limitPerHour,
        ws.burstLimit,
        toJson(ws.policyClasses),
        toJson(ws.features),
        ws.createdAt,
        toJson(ws.quotas ?? {}),
        ws.burstWindowSeconds,
      ],
    )
    const stored = await this.byName(ws.name)
    if (!stored) throw new Error(`workspace ${ws.name} vanished after insert`)
    return stored
  }

  async update(ws: Workspace): Promise<void> {
    await this.db.run(
      `UPDATE workspaces SET tier = $2, limit_per_hour = $3, burst_limit = $4, policy_classes = $5, features = $6,
         quotas = $7, burst_window_seconds = $8
       WHERE id = $1`,
      [
        ws.id,
        ws.tier,
        ws.limitPerHour,
        ws.burstLimit,
        toJson(ws.policyClasses),
        toJson(ws.features),
        toJson(ws.quotas ?? {}),
        ws.burstWindowSeconds,
      ],
    )
  }
}
