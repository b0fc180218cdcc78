import type { Queryable } from '../ports.js'
import type { QuotaName } from './types.js'

/** An amount of one quota: a workspace's, and within it a scope where the quota is per thing (a connector's id). */
export interface QuotaUse {
  workspaceId: string
  quota: QuotaName
  /** '' for quotas of the whole workspace. */
  scope: string
  amount: number
}

/**
 * What each workspace uses of each quota, as rows of the store every replica shares: counted in the transaction of
 * the write that grows or shrinks it, so a count is exact under concurrency (PostgreSQL's row lock, SQLite's one
 * writer) and a write that rolls back takes its count with it.
 */
export interface QuotaUsageRepository {
  /**
   * In the write's transaction: adds `amount` when the usage stays within `limit` and answers the usage then
   * (`taken`), or adds nothing and answers the usage as it is. The row stays locked until the transaction ends.
   */
  take(tx: Queryable, use: QuotaUse, limit: number): Promise<{ taken: boolean; used: number }>
  /** In the transaction that removes what was counted. */
  release(tx: Queryable, use: QuotaUse): Promise<void>
  /** The usage now (0 when nothing was ever counted); read in `tx` when the caller is in one. */
  usage(workspaceId: string, quota: QuotaName, scope?: string, tx?: Queryable): Promise<number>
}

/** What the server's metrics hear of quotas: each admission's usage against its limit, and each refusal. */
export interface QuotaTelemetry {
  admitted(quota: QuotaName, used: number, limit: number): void
  refused(quota: QuotaName): void
}
