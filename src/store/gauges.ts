/**
 * What a metrics scrape reads from the store: runs waiting or in progress, the webhook outbox's depth and lag, and
 * the connection pool. Counted across all workspaces (nothing tenant-specific leaves this module), so every
 * replica of one store reports the same figures: dashboards take their max, not their sum.
 */
import type { RunStatus } from '../domain/runs/types.js'
import type { StoreGauges } from '../domain/telemetry.js'
import type { Db } from './db.js'

/** The pool figures of a driver that has a pool (PostgreSQL); the embedded store is one connection. */
export interface PoolFigures {
  poolFigures(): { total: number; idle: number; waiting: number }
}

export function storeGauges(db: Db, now: () => number = Date.now): StoreGauges {
  return {
    async runsByStatus() {
      const rows = await db.query<{ status: RunStatus; n: number | string }>(
        `SELECT status, COUNT(*) AS n FROM runs WHERE status IN ('queued', 'running', 'awaiting_approval')
         GROUP BY status`,
      )
      return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]))
    },
    async outbox() {
      const row = await db.one<{ n: number | string; oldest: number | string | null }>(
        `SELECT COUNT(*) AS n, MIN(created_at) AS oldest FROM webhook_deliveries WHERE status = 'pending' AND channel = 'webhook'`,
      )
      const oldest = row?.oldest === null || row?.oldest === undefined ? undefined : Number(row.oldest)
      return {
        depth: Number(row?.n ?? 0),
        oldestAgeSeconds: oldest === undefined ? 0 : Math.max(0, now() - oldest) / 1000,
      }
    },
    pool() {
      return 'poolFigures' in db ? (db as Db & PoolFigures).poolFigures() : { total: 1, idle: 1, waiting: 0 }
    },
  }
}
