import type { IdempotencyRepository } from '../../domain/idempotency/ports.js'
import type { ClaimResult, StoredAnswer, StoredResponse } from '../../domain/idempotency/types.js'
import type { Db, Dialect } from '../../domain/ports.js'
import {
  type StoredAnswerLimits,
  type StoredAnswerRefusal,
  storedAnswerBytes,
} from '../../domain/quotas/idempotency.js'
import {
  commitTailOf,
  failedOn,
  type InOneStatement,
  type Queryable,
  refusableAtCommitOf,
  usageLedgerOf,
} from '../db.js'
import { zeroAfter } from '../ordered-statement.js'
import { overQuota, QuotaUsageRepo } from './quota-usage.js'

interface Row extends Record<string, unknown> {
  /** PostgreSQL's claim only: whether this transaction took the key's advisory lock. */
  locked?: boolean
  fingerprint: string | null
  state: string | null
  status: number | null
  headers: string | null
  body: string | null
  locked_until: number | null
  expires_at: number | null
}

/**
 * The first of the two numbers of the claim's advisory lock (the second is a hash of workspace and key): the
 * two-number form never meets the one-number locks of the event log (src/store/repos/events.ts).
 */
const CLAIM_LOCK_CLASS = 25_001

/**
 * PostgreSQL's claim, sent with the unit's BEGIN: the key's transaction-scoped advisory lock, tried without waiting,
 * and the key's row. The lock ends with the transaction, whether it commits, rolls back, or its server dies (the
 * connection closes): a dead owner's claim is gone as soon as PostgreSQL notices the connection is. The row is
 * read on the statement's snapshot, which may predate a commit of the lock's previous holder; the answer's plain
 * INSERT then fails the unit's commit on the primary key, and the unit replays the stored answer instead.
 */
const PG_CLAIM = `SELECT l.locked, k.fingerprint, k.state, k.status, k.headers, k.body, k.locked_until, k.expires_at
  FROM (SELECT pg_try_advisory_xact_lock(${CLAIM_LOCK_CLASS}, hashtext($3)) AS locked) l
  LEFT JOIN idempotency_keys k ON k.workspace_id = $1 AND k.idem_key = $2`

const READ = 'SELECT * FROM idempotency_keys WHERE workspace_id = $1 AND idem_key = $2'

/**
 * The row a claim found expired or abandoned, and only such a row: never an answer that is still live. Its bytes
 * come back so the workspace's quotas give them back in the same transaction.
 */
const DELETE_STALE = `DELETE FROM idempotency_keys WHERE workspace_id = $1 AND idem_key = $2
  AND (expires_at <= $3 OR state <> 'done') RETURNING answer_bytes`

/** No ON CONFLICT: a key answered by another unit meanwhile fails this one's commit instead of being overwritten. */
const INSERT_ANSWER = `INSERT INTO idempotency_keys (workspace_id, idem_key, fingerprint, state, status, headers, body,
    locked_until, created_at, expires_at, answer_bytes)
  VALUES ($1, $2, $3, 'done', $4, $5, $6, $7, $7, $8, $9)`

/**
 * The answer as the claim, in a deferred unit: the key's advisory lock (the one PG_CLAIM takes) is tried first, and a
 * lock held elsewhere makes the key NULL, which its NOT NULL refuses (23502), as an existing row refuses the insert
 * (23505): either failure rolls the whole unit back, and the caller claims the ordinary way to learn which it was.
 */
const INSERT_ANSWER_AS_CLAIM = `INSERT INTO idempotency_keys (workspace_id, idem_key, fingerprint, state, status,
    headers, body, locked_until, created_at, expires_at, answer_bytes)
  VALUES ($1, CASE WHEN pg_try_advisory_xact_lock(${CLAIM_LOCK_CLASS}, hashtext($10)) THEN $2 END, $3, 'done', $4, $5,
    $6, $7, $7, $8, $9)`

/**
 * What an answer stored without bounds adds to its workspace's usage, sent with the COMMIT where the store can (a
 * deferred unit, or no quota given): the counts stay exact, and cost no round trip.
 */
const COUNT_ANSWER = `INSERT INTO quota_usage (workspace_id, quota, scope, used) VALUES ($1, $2, '', $3)
  ON CONFLICT (workspace_id, quota, scope) DO UPDATE SET used = quota_usage.used + excluded.used`

/**
 * Both counts of an answer in one statement, each row only while it stays within its limit ($3 answers, $4 bytes):
 * the rows it returns are the ones taken (PostgreSQL locks each for the upsert and re-reads it; SQLite has one
 * writer).
 */
const TAKE_ANSWER = `INSERT INTO quota_usage (workspace_id, quota, scope, used)
  VALUES ($1, 'idempotency_keys', '', 1), ($1, 'idempotency_bytes', '', CAST($2 AS BIGINT))
  ON CONFLICT (workspace_id, quota, scope) DO UPDATE SET used = quota_usage.used + excluded.used
  WHERE quota_usage.used + excluded.used <=
    CASE quota_usage.quota WHEN 'idempotency_keys' THEN CAST($3 AS BIGINT) ELSE CAST($4 AS BIGINT) END
  RETURNING quota`

/**
 * TAKE_ANSWER held back to the COMMIT (IdempotencyRepo.answer given `refused`): a count past its limit makes the new
 * usage NULL, which the column's NOT NULL refuses (23502), so both counts are taken or the transaction fails.
 */
const takeAnswerOrFail = (oneKey: string) => `INSERT INTO quota_usage (workspace_id, quota, scope, used)
  VALUES ($1, 'idempotency_keys', '', ${oneKey}), ($1, 'idempotency_bytes', '', CAST($2 AS BIGINT))
  ON CONFLICT (workspace_id, quota, scope) DO UPDATE SET used = CASE WHEN quota_usage.used + excluded.used <=
    CASE quota_usage.quota WHEN 'idempotency_keys' THEN CAST($3 AS BIGINT) ELSE CAST($4 AS BIGINT) END
    THEN quota_usage.used + excluded.used END`
const TAKE_ANSWER_OR_FAIL = takeAnswerOrFail('1')

/**
 * TAKE_ANSWER_OR_FAIL in a unit sent as one statement (src/store/ordered-statement.ts): after the count before it,
 * the keys' row then the bytes' (VALUES in order), returning what it took for the count after it to wait on.
 */
const TAKE_ANSWER_OR_FAIL_IN_ORDER: InOneStatement = {
  after: (after) => `${takeAnswerOrFail(after === null ? '1' : `1 + ${zeroAfter(after)}`)} RETURNING quota`,
}

/** The expired answers, with what each gives back to its workspace's quotas. */
const PURGE = 'DELETE FROM idempotency_keys WHERE expires_at <= $1 RETURNING workspace_id, answer_bytes'

/** The two quotas a stored answer counts in. */
type AnswerQuota = Extract<StoredAnswerRefusal['quota'], 'idempotency_keys' | 'idempotency_bytes'>

/** A stored refusal that found the key answered meanwhile: nothing is written, the transaction rolls back. */
class KeyAnswered extends Error {}
/** A stored refusal over the workspace's quota: not kept, the transaction rolls back. */
class OverQuota extends Error {
  constructor(readonly refusal: StoredAnswerRefusal) {
    super(refusal.quota)
  }
}

/** No bound: what `answer` is given when no quota applies (the counts are still kept). */
const UNBOUNDED: StoredAnswerLimits = { keys: Number.MAX_SAFE_INTEGER, bytes: Number.MAX_SAFE_INTEGER }

/** SQLSTATEs of `INSERT_ANSWER_AS_CLAIM`'s two refusals: the key's lock held elsewhere, the key's row present. */
const KEY_TAKEN_CODES = ['23502', '23505']

/** A refusal stored on its own, once DELETE_STALE removed an expired or abandoned row: never over a live answer. */
const INSERT_REFUSAL = `${INSERT_ANSWER} ON CONFLICT (workspace_id, idem_key) DO NOTHING`

export class IdempotencyRepo implements IdempotencyRepository {
  /** Every stored answer is counted in its workspace's `idempotency_keys` and `idempotency_bytes` usage. */
  private readonly usage: QuotaUsageRepo

  constructor(
    /** Statements outside a unit of work: the refusal stored alone, reads after a failed commit, the purge. */
    private readonly db: Queryable | Db,
    private readonly dialect: Dialect,
  ) {
    this.usage = new QuotaUsageRepo(db)
  }

  /** One transaction on the store (a Queryable that is one already runs `fn` as it is). */
  private transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    return 'transaction' in this.db ? this.db.transaction(fn) : fn(this.db)
  }

  async claim(
    tx: Queryable,
    workspaceId: string,
    key: string,
    fingerprint: string,
    now: number,
  ): Promise<ClaimResult> {
    const row =
      this.dialect === 'postgres'
        ? await tx.one<Row>(PG_CLAIM, [workspaceId, key, `${workspaceId} ${key}`])
        : await tx.one<Row>(READ, [workspaceId, key])
    const held = row?.fingerprint != null && Number(row.expires_at) > now ? row : undefined
    if (held?.state === 'done') {
      return { kind: 'replay', fingerprint: held.fingerprint as string, response: storedResponse(held) }
    }
    // A claim of the earlier, leased design (a replica of the previous version, during a rolling upgrade): in
    // progress until its lease ends. On SQLite such a row belongs to a previous run of this, the only, server.
    if (held && this.dialect === 'postgres' && Number(held.locked_until) > now) {
      return { kind: 'in_progress', fingerprint: held.fingerprint as string }
    }
    if (row?.locked === false) return { kind: 'in_progress', fingerprint }
    if (row?.fingerprint != null && !(await this.dropStale(tx, workspaceId, key, now, true))) {
      // The row read was stale: another holder of the lock answered the key after this statement's snapshot was
      // taken (PostgreSQL reads the row before the lock is tried). What the key holds now decides.
      const fresh = await tx.one<Row>(READ, [workspaceId, key])
      if (fresh?.state === 'done' && Number(fresh.expires_at) > now) {
        return { kind: 'replay', fingerprint: fresh.fingerprint as string, response: storedResponse(fresh) }
      }
      if (fresh?.fingerprint != null) return { kind: 'in_progress', fingerprint: fresh.fingerprint }
    }
    return { kind: 'claimed' }
  }

  async answer(
    tx: Queryable,
    entry: StoredAnswer,
    limits: StoredAnswerLimits = UNBOUNDED,
    refused?: (refusal: StoredAnswerRefusal) => Error,
  ): Promise<StoredAnswerRefusal | undefined> {
    const params = answerParams(entry)
    if (!(refused && this.countAtCommit(tx, entry, limits, refused))) {
      const refusal = await this.count(tx, entry, limits)
      if (refusal) return refusal
    }
    // On PostgreSQL it goes out with the COMMIT (no round trip of its own), after the unit's other statements.
    const tail = commitTailOf(tx)
    if (tail) tail.atCommit(INSERT_ANSWER, params)
    else await tx.run(INSERT_ANSWER, params)
    return undefined
  }

  async answerAsClaim(
    tx: Queryable,
    entry: StoredAnswer,
    limits: StoredAnswerLimits = UNBOUNDED,
    refused?: (refusal: StoredAnswerRefusal) => Error,
  ): Promise<StoredAnswerRefusal | undefined> {
    const tail = commitTailOf(tx)
    if (!tail?.atBegin) throw new Error('An answer is the claim only in a deferred unit of work')
    const params = answerParams(entry)
    if (refused && limits !== UNBOUNDED) {
      // An answer that cannot fit even alone is refused now (the usage read as committed: the unit reads nothing).
      const alone = this.wontFit(entry, limits)
      if (alone) return this.refusalOf(entry.workspaceId, alone, limits, tx)
      if (!this.countAtCommit(tx, entry, limits, refused))
        throw new Error('A deferred unit of work counts its answer at the commit')
    } else {
      tail.atCommit(COUNT_ANSWER, [entry.workspaceId, 'idempotency_keys', 1])
      tail.atCommit(COUNT_ANSWER, [entry.workspaceId, 'idempotency_bytes', params[8] as number])
    }
    // A fresh key's row, its lock only tried: it waits for no other transaction.
    tail.atBegin(
      INSERT_ANSWER_AS_CLAIM,
      [...params, `${entry.workspaceId} ${entry.key}`],
      'waits-for-nothing',
    )
    return undefined
  }

  /** The quota an answer passes on its own, whatever is stored already (no count can take it). */
  private wontFit(entry: StoredAnswer, limits: StoredAnswerLimits): AnswerQuota | undefined {
    if (limits.keys < 1) return 'idempotency_keys'
    return storedAnswerBytes(entry) > limits.bytes ? 'idempotency_bytes' : undefined
  }

  /** The refusal naming `quota`: its limit and the workspace's use of it (read in `tx`, else as committed). */
  private async refusalOf(
    workspaceId: string,
    quota: AnswerQuota,
    limits: StoredAnswerLimits,
    tx?: Queryable,
  ): Promise<StoredAnswerRefusal> {
    const limit = quota === 'idempotency_keys' ? limits.keys : limits.bytes
    return { quota, limit, used: await this.usage.usage(workspaceId, quota, '', tx) }
  }

  /**
   * Counts the answer in its workspace's usage within `limits`, both or neither: the quota it would pass, or
   * undefined once both are counted (in `tx`, so a rollback takes the counts with it).
   */
  private async count(
    tx: Queryable,
    entry: StoredAnswer,
    limits: StoredAnswerLimits,
  ): Promise<StoredAnswerRefusal | undefined> {
    const workspaceId = entry.workspaceId
    const bytes = storedAnswerBytes(entry)
    const tail = commitTailOf(tx)
    if (limits === UNBOUNDED && tail) {
      tail.atCommit(COUNT_ANSWER, [workspaceId, 'idempotency_keys', 1])
      tail.atCommit(COUNT_ANSWER, [workspaceId, 'idempotency_bytes', bytes])
      return undefined
    }
    // A row inserted fresh ignores the upsert's WHERE: an answer that could not fit even alone is refused first.
    const alone = this.wontFit(entry, limits)
    // SQLite's batch counts in memory, both or neither, and writes the rows at its COMMIT (usage-ledger.ts).
    const ledger = alone ? undefined : usageLedgerOf(tx)
    if (ledger) {
      const counts = [
        { workspaceId, quota: 'idempotency_keys', scope: '', amount: 1, limit: limits.keys },
        { workspaceId, quota: 'idempotency_bytes', scope: '', amount: bytes, limit: limits.bytes },
      ]
      const { taken, used } = ledger.take(counts)
      if (taken) return undefined
      const keysUsed = used[0] ?? 0
      return keysUsed + 1 > limits.keys
        ? { quota: 'idempotency_keys', limit: limits.keys, used: keysUsed }
        : { quota: 'idempotency_bytes', limit: limits.bytes, used: used[1] ?? 0 }
    }
    const taken = !alone
      ? new Set(
          (
            await tx.query<{ quota: string }>(TAKE_ANSWER, [workspaceId, bytes, limits.keys, limits.bytes])
          ).map((r) => r.quota),
        )
      : new Set<string>()
    const keysFit = taken.has('idempotency_keys')
    const bytesFit = taken.has('idempotency_bytes')
    if (keysFit && bytesFit) return undefined
    // Both or neither: what one row took is given back.
    if (keysFit)
      await this.usage.release(tx, { workspaceId, quota: 'idempotency_keys', scope: '', amount: 1 })
    if (bytesFit)
      await this.usage.release(tx, { workspaceId, quota: 'idempotency_bytes', scope: '', amount: bytes })
    return this.refusalOf(
      workspaceId,
      alone ?? (keysFit ? 'idempotency_bytes' : 'idempotency_keys'),
      limits,
      tx,
    )
  }

  /**
   * `count` held back to the COMMIT where the store can (see TAKE_ANSWER_OR_FAIL): whether it was. An answer that
   * could not fit even alone is left to `count`, which refuses it at once.
   */
  private countAtCommit(
    tx: Queryable,
    entry: StoredAnswer,
    limits: StoredAnswerLimits,
    refused: (refusal: StoredAnswerRefusal) => Error,
  ): boolean {
    const atCommit = refusableAtCommitOf(tx)
    if (!atCommit || limits === UNBOUNDED || this.wontFit(entry, limits)) return false
    const workspaceId = entry.workspaceId
    atCommit(
      TAKE_ANSWER_OR_FAIL,
      [workspaceId, storedAnswerBytes(entry), limits.keys, limits.bytes],
      {
        matches: overQuota,
        settle: async () => {
          // Which count failed, told by the usage once the transaction ended: the keys' when one more does not fit.
          const keys = await this.refusalOf(workspaceId, 'idempotency_keys', limits)
          if (keys.used + 1 > limits.keys) return refused(keys)
          return refused(await this.refusalOf(workspaceId, 'idempotency_bytes', limits))
        },
      },
      undefined,
      TAKE_ANSWER_OR_FAIL_IN_ORDER,
    )
    return true
  }

  /**
   * Deletes the key's expired or abandoned row and gives its counts back (`atCommit`: with the transaction's counts
   * at the COMMIT, where the store holds them); whether there was one.
   */
  private async dropStale(
    tx: Queryable,
    workspaceId: string,
    key: string,
    now: number,
    atCommit = false,
  ): Promise<boolean> {
    const gone = await tx.query<{ answer_bytes: number | string }>(DELETE_STALE, [workspaceId, key, now])
    const row = gone[0]
    if (!row) return false
    const giveBack = (quota: AnswerQuota, amount: number) => {
      const use = { workspaceId, quota, scope: '', amount }
      return atCommit ? this.usage.releaseAtCommit(tx, use) : this.usage.release(tx, use)
    }
    await giveBack('idempotency_keys', 1)
    await giveBack('idempotency_bytes', Number(row.answer_bytes))
    return true
  }

  keyTaken(cause: unknown): boolean {
    return failedOn(cause, 'idempotency_keys', KEY_TAKEN_CODES)
  }

  async answerAlone(
    entry: StoredAnswer,
    now: number,
    limits: StoredAnswerLimits = UNBOUNDED,
  ): Promise<{ fingerprint: string; response: StoredResponse } | StoredAnswerRefusal> {
    try {
      await this.transaction(async (tx) => {
        await this.dropStale(tx, entry.workspaceId, entry.key, now)
        const refused = await this.count(tx, entry, limits)
        if (refused) throw new OverQuota(refused)
        if ((await tx.run(INSERT_REFUSAL, answerParams(entry))) === 0) throw new KeyAnswered()
      })
      return { fingerprint: entry.fingerprint, response: entry.response }
    } catch (err) {
      if (err instanceof OverQuota) return err.refusal
      if (!(err instanceof KeyAnswered)) throw err
    }
    const kept = await this.stored(entry.workspaceId, entry.key, now)
    if (!kept) throw new Error('An idempotency key refused the answer but holds none')
    return kept
  }

  async stored(
    workspaceId: string,
    key: string,
    now: number,
  ): Promise<{ fingerprint: string; response: StoredResponse } | undefined> {
    const row = await this.db.one<Row>(READ, [workspaceId, key])
    if (row?.state !== 'done' || Number(row.expires_at) <= now) return undefined
    return { fingerprint: row.fingerprint as string, response: storedResponse(row) }
  }

  /** Deletes the expired answers and gives their counts back to their workspaces, in one transaction. */
  async purgeExpired(now: number): Promise<number> {
    return this.transaction(async (tx) => {
      const gone = await tx.query<{ workspace_id: string; answer_bytes: number | string }>(PURGE, [now])
      const byWorkspace = new Map<string, { keys: number; bytes: number }>()
      for (const row of gone) {
        const sum = byWorkspace.get(row.workspace_id) ?? { keys: 0, bytes: 0 }
        sum.keys += 1
        sum.bytes += Number(row.answer_bytes)
        byWorkspace.set(row.workspace_id, sum)
      }
      for (const [workspaceId, sum] of byWorkspace) {
        await this.usage.release(tx, { workspaceId, quota: 'idempotency_keys', scope: '', amount: sum.keys })
        await this.usage.release(tx, {
          workspaceId,
          quota: 'idempotency_bytes',
          scope: '',
          amount: sum.bytes,
        })
      }
      return gone.length
    })
  }
}

function answerParams(e: StoredAnswer): (string | number)[] {
  return [
    e.workspaceId,
    e.key,
    e.fingerprint,
    e.response.status,
    JSON.stringify(e.response.headers),
    e.response.body,
    e.createdAt,
    e.expiresAt,
    storedAnswerBytes(e),
  ]
}

/** The finished answer a row holds, as a replay returns it. */
function storedResponse(row: Row): StoredResponse {
  return {
    status: Number(row.status),
    headers: JSON.parse(row.headers ?? '{}') as Record<string, string>,
    body: row.body ?? '',
  }
}
