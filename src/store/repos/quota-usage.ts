import type { QuotaOutcome, QuotaUsageRepository, QuotaUse } from '../../domain/quotas/ports.js'
import type { QuotaName } from '../../domain/quotas/types.js'
import {
  commitTailOf,
  failedOn,
  type InOneStatement,
  type Queryable,
  readerIn,
  refusableAtCommitOf,
  usageLedgerOf,
} from '../db.js'
import { zeroAfter } from '../ordered-statement.js'

/**
 * The usage row grows only while it stays within the limit: one statement, so two replicas taking the last unit at
 * once cannot both have it (PostgreSQL locks the row for the upsert and re-reads it before the WHERE; SQLite has
 * one writer). No row is returned when the WHERE refuses.
 */
const TAKE = `INSERT INTO quota_usage (workspace_id, quota, scope, used) VALUES ($1, $2, $3, $4)
  ON CONFLICT (workspace_id, quota, scope) DO UPDATE SET used = quota_usage.used + excluded.used
  WHERE quota_usage.used + excluded.used <= $5
  RETURNING used`

/**
 * TAKE as a statement held back to the COMMIT (QuotaUsageRepo.takeAtCommit): past the limit the new usage is NULL,
 * which the column's NOT NULL refuses (23502), failing the transaction with nothing counted. A fresh row is
 * inserted as it is: the caller sends only an amount within the limit.
 */
const takeOrFail = (amount: string) => `INSERT INTO quota_usage (workspace_id, quota, scope, used)
  VALUES ($1, $2, $3, ${amount})
  ON CONFLICT (workspace_id, quota, scope) DO UPDATE SET used =
    CASE WHEN quota_usage.used + excluded.used <= $5 THEN quota_usage.used + excluded.used END
  RETURNING used`
const TAKE_OR_FAIL = takeOrFail('$4')

/** TAKE_OR_FAIL in a unit sent as one statement: after the count before it (src/store/ordered-statement.ts). */
const TAKE_OR_FAIL_IN_ORDER: InOneStatement = {
  after: (after) => (after === null ? TAKE_OR_FAIL : takeOrFail(`$4 + ${zeroAfter(after)}`)),
}

/** Whether a statement failed on quota_usage's NOT NULL: the refusal of TAKE_OR_FAIL and its kin. */
export function overQuota(err: unknown): boolean {
  return failedOn(err, 'quota_usage', ['23502'])
}

const RELEASE = `UPDATE quota_usage SET used = CASE WHEN used > $4 THEN used - $4 ELSE 0 END
  WHERE workspace_id = $1 AND quota = $2 AND scope = $3`

const USAGE = 'SELECT used FROM quota_usage WHERE workspace_id = $1 AND quota = $2 AND scope = $3'

export class QuotaUsageRepo implements QuotaUsageRepository {
  constructor(private readonly db: Queryable) {}

  async take(tx: Queryable, use: QuotaUse, limit: number): Promise<{ taken: boolean; used: number }> {
    // SQLite's batch counts in memory and writes the row at its COMMIT (src/store/sqlite/usage-ledger.ts).
    const ledger = usageLedgerOf(tx)
    if (ledger) {
      // Built field by field: a spread followed by more fields is one of V8's slow paths on Node 20.
      const count = {
        workspaceId: use.workspaceId,
        quota: use.quota,
        scope: use.scope,
        amount: use.amount,
        limit,
      }
      const { taken, used } = ledger.take([count])
      return { taken, used: used[0] ?? 0 }
    }
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

  takeAtCommit(tx: Queryable, use: QuotaUse, limit: number, outcome: QuotaOutcome): boolean {
    const atCommit = refusableAtCommitOf(tx)
    if (!atCommit) return false
    atCommit(
      TAKE_OR_FAIL,
      [use.workspaceId, use.quota, use.scope, use.amount, limit],
      {
        matches: overQuota,
        settle: async () => outcome.refused(await this.usage(use.workspaceId, use.quota, use.scope)),
      },
      (rows) => outcome.admitted(Number(rows[0]?.used ?? 0)),
      TAKE_OR_FAIL_IN_ORDER,
    )
    return true
  }

  async release(tx: Queryable, use: QuotaUse): Promise<void> {
    await tx.run(RELEASE, [use.workspaceId, use.quota, use.scope, use.amount])
  }

  /**
   * Gives `use` back with the transaction's counts at the COMMIT where the store holds them (COUNTS_FIRST: a usage
   * row is then locked for the commit alone, in the order every commit takes it), else now. Only for a transaction
   * whose later counts go at the commit too (they follow it there) and that reads no usage meanwhile.
   */
  async releaseAtCommit(tx: Queryable, use: QuotaUse): Promise<void> {
    const params = [use.workspaceId, use.quota, use.scope, use.amount]
    const tail = commitTailOf(tx)
    if (tail?.countAtCommit) tail.countAtCommit(RELEASE, params)
    else await tx.run(RELEASE, params)
  }

  async usage(workspaceId: string, quota: QuotaName, scope = '', tx?: Queryable): Promise<number> {
    const row = await (tx ? readerIn(tx, this.db) : this.db).one<{ used: number | string }>(USAGE, [
      workspaceId,
      quota,
      scope,
    ])
    return Number(row?.used ?? 0)
  }
}
