/**
 * SQLite's quota counts in its group commit (src/store/sqlite/usage-ledger.ts): counted in memory in the open batch
 * and written at its COMMIT, they must stay what one upsert per count would have made them: exact against the
 * limit, given back with a logical transaction that fails (also when its counts were written before it failed),
 * seen by every statement that reads the usage, and on disk once the batch is acknowledged.
 */
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, describe, expect, it } from 'vitest'
import { migrate } from '../../src/store/migrations/index.js'
import { QuotaUsageRepo } from '../../src/store/repos/quota-usage.js'
import { SqliteDb } from '../../src/store/sqlite/db.js'
import { testTempDir } from '../support/temp.js'

let db: SqliteDb | undefined
let observer: Database.Database | undefined
afterEach(async () => {
  observer?.close()
  observer = undefined
  await db?.close()
  db = undefined
})

const WS = 'ws_ledger'
const use = (amount = 1) => ({ workspaceId: WS, quota: 'agents' as const, scope: '', amount })

/** The store, its usage repository, and the usage as another connection sees it (committed only). */
async function open() {
  const path = join(testTempDir('ledger-'), 'l.db')
  db = SqliteDb.open(`sqlite:${path}`)
  await migrate(db)
  observer = new Database(path, { readonly: true })
  const o = observer
  const committed = () =>
    Number(
      o.prepare("SELECT used FROM quota_usage WHERE workspace_id = ? AND quota = 'agents'").pluck().get(WS) ??
        0,
    )
  return { d: db, usage: new QuotaUsageRepo(db), committed, path }
}

class Refused extends Error {}

describe('SQLite quota counts held to the COMMIT', () => {
  it('counts many transactions of one batch exactly against the limit, on disk when they are acknowledged', async () => {
    const { d, usage, committed } = await open()
    const outcomes = await Promise.all(
      Array.from({ length: 12 }, () =>
        d
          .transaction(async (tx) => {
            const taken = await usage.take(tx, use(), 5)
            if (!taken.taken) throw new Refused(String(taken.used))
            return taken.used
          })
          .then(
            (used) => ({ used, committed: committed() }),
            (err: unknown) => (err instanceof Refused ? 'refused' : err),
          ),
      ),
    )
    const admitted = outcomes.filter((o) => o !== 'refused')
    expect(admitted.map((o) => (typeof o === 'object' && o !== null && 'used' in o ? o.used : o))).toEqual([
      1, 2, 3, 4, 5,
    ])
    // Each caller hears back only after the COMMIT, which wrote the row.
    for (const o of admitted) expect(o).toMatchObject({ committed: 5 })
    expect(outcomes.filter((o) => o === 'refused')).toHaveLength(7)
    expect(await usage.usage(WS, 'agents')).toBe(5)
  })

  it('gives back the count of a transaction that fails, keeping those of the batch before it', async () => {
    const { d, usage, committed } = await open()
    const first = d.transaction((tx) => usage.take(tx, use(2), 10))
    const failed = d.transaction(async (tx) => {
      await usage.take(tx, use(3), 10)
      throw new Refused('after counting')
    })
    const failedRefused = expect(failed).rejects.toBeInstanceOf(Refused)
    const third = d.transaction((tx) => usage.take(tx, use(1), 10))
    expect(await first).toEqual({ taken: true, used: 2 })
    await failedRefused
    expect(await third).toEqual({ taken: true, used: 3 })
    expect(committed()).toBe(3)
  })

  it('rolls back counts written inside a failing transaction (a usage read wrote them) and keeps the earlier ones', async () => {
    const { d, usage, committed } = await open()
    const first = d.transaction((tx) => usage.take(tx, use(2), 10))
    const failed = d.transaction(async (tx) => {
      await usage.take(tx, use(3), 10)
      // A statement naming the usage rows writes the pending counts first, inside this savepoint.
      expect(await usage.usage(WS, 'agents', '', tx)).toBe(5)
      throw new Refused('after the counts were written')
    })
    const failedRefused = expect(failed).rejects.toBeInstanceOf(Refused)
    const after = d.transaction(async (tx) => usage.usage(WS, 'agents', '', tx))
    expect(await first).toEqual({ taken: true, used: 2 })
    await failedRefused
    expect(await after).toBe(2)
    expect(committed()).toBe(2)
  })

  it('shows the batch’s pending counts to a read of the usage outside any transaction, and a give-back applies to them', async () => {
    const { d, usage, committed } = await open()
    const taken = d.transaction((tx) => usage.take(tx, use(4), 10))
    const read = usage.usage(WS, 'agents')
    const released = d.transaction((tx) => usage.release(tx, use(1)))
    expect(await taken).toEqual({ taken: true, used: 4 })
    expect(await read).toBe(4)
    await released
    expect(committed()).toBe(3)
    expect(await d.transaction((tx) => usage.take(tx, use(7), 10))).toEqual({ taken: true, used: 10 })
    expect(await d.transaction((tx) => usage.take(tx, use(1), 10))).toEqual({ taken: false, used: 10 })
  })

  it('starts each batch from the row, so a count another connection wrote between batches is not lost', async () => {
    const { d, usage, committed, path } = await open()
    expect(await d.transaction((tx) => usage.take(tx, use(2), 10))).toEqual({ taken: true, used: 2 })
    const operator = new Database(path)
    try {
      operator.pragma('busy_timeout = 5000')
      operator
        .prepare("UPDATE quota_usage SET used = used + 5 WHERE workspace_id = ? AND quota = 'agents'")
        .run(WS)
    } finally {
      operator.close()
    }
    expect(await d.transaction((tx) => usage.take(tx, use(1), 10))).toEqual({ taken: true, used: 8 })
    expect(committed()).toBe(8)
  })
})
