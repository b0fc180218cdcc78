import type { QuotaUsageRepository, QuotaUse } from '../../domain/quotas/ports.js'
import type { QuotaName } from '../../domain/quotas/types.js'
import type { Queryable } from '../db.js'

/**
 * The usage row grows only while it stays within the limit: one statement, so two replicas taking the last unit at
 * once cannot both have it (PostgreSQL locks the row for the upsert and re-reads it before the WHERE; SQLite has
 * one writer). No row is returned when the WHERE refuses.
 */
const TAKE = `INSERT INTO quota_usage (workspace_id, quota, scope, used) VALUES ($1, $2, $3, $4)
  ON CONFLICT (workspace_id, quota, scope) DO UPDATE SET used = quota_usage.used + excluded.used
  WHERE quota_usage.used + excluded.used <= $5
  RETURNING used`

const RELEASE = `UPDATE quota_usage SET used = CASE WHEN used > $4 THEN used - $4 ELSE 0 END
  WHERE workspace_id = $1 AND quota = $2 AND scope = $3`

const USAGE = 'SELECT used FROM quota_usage WHERE workspace_id = $1 AND quota = $2 AND scope = $3'

export class QuotaUsageRepo implements QuotaUsageRepository {
  constructor(private readonly db: Queryable) {}

  async take(tx: Queryable, use: QuotaUse, limit: number): Promise<{ taken: boolean; used: number }> {
    const row = await tx.one<{ used: number | string }>(TAKE, [
      use.workspaceId,
      use.quota,
      use.scope,
      use.amount,
      limit,
    ])
    if (row) return { taken: true, used: Number(row.used) }
    const now = await tx.one<{ used: number | string }>(USAGE, [use.workspaceId, use.quota, use.scope])
    return { taken: false, used: Number(now?.used ?? 0) }
  }

  async release(tx: Queryable, use: QuotaUse): Promise<void> {
    await tx.run(RELEASE, [use.workspaceId, use.quota, use.scope, use.amount])
  }

  async usage(workspaceId: string, quota: QuotaName, scope = '', tx?: Queryable): Promise<number> {
    const row = await (tx ?? this.db).one<{ used: number | string }>(USAGE, [workspaceId, quota, scope])
    return Number(row?.used ?? 0)
  }
}
