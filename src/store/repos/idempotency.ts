import type { IdempotencyRepository } from '../../domain/idempotency/ports.js'
import type { ClaimResult, StoredAnswer, StoredResponse } from '../../domain/idempotency/types.js'
import type { Dialect } from '../../domain/ports.js'
import { commitTailOf, type Queryable } from '../db.js'

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

/** The row a claim found expired or abandoned, and only such a row: never an answer that is still live. */
const DELETE_STALE = `DELETE FROM idempotency_keys WHERE workspace_id = $1 AND idem_key = $2
  AND (expires_at <= $3 OR state <> 'done')`

/** No ON CONFLICT: a key answered by another unit meanwhile fails this one's commit instead of being overwritten. */
const INSERT_ANSWER = `INSERT INTO idempotency_keys (workspace_id, idem_key, fingerprint, state, status, headers, body,
    locked_until, created_at, expires_at)
  VALUES ($1, $2, $3, 'done', $4, $5, $6, $7, $7, $8)`

/**
 * The answer as the claim, in a deferred unit: the key's advisory lock (the one PG_CLAIM takes) is tried first, and a
 * lock held elsewhere makes the key NULL, which its NOT NULL refuses (23502), as an existing row refuses the insert
 * (23505): either failure rolls the whole unit back, and the caller claims the ordinary way to learn which it was.
 */
const INSERT_ANSWER_AS_CLAIM = `INSERT INTO idempotency_keys (workspace_id, idem_key, fingerprint, state, status,
    headers, body, locked_until, created_at, expires_at)
  VALUES ($1, CASE WHEN pg_try_advisory_xact_lock(${CLAIM_LOCK_CLASS}, hashtext($9)) THEN $2 END, $3, 'done', $4, $5,
    $6, $7, $7, $8)`

/** SQLSTATEs of `INSERT_ANSWER_AS_CLAIM`'s two refusals: the key's lock held elsewhere, the key's row present. */
const KEY_TAKEN_CODES = new Set(['23502', '23505'])

/** A refusal stored on its own: it takes the place of an expired or abandoned row, never of a live answer. */
const UPSERT_REFUSAL = `${INSERT_ANSWER}
  ON CONFLICT (workspace_id, idem_key) DO UPDATE SET fingerprint = $3, state = 'done', status = $4, headers = $5,
    body = $6, locked_until = $7, created_at = $7, expires_at = $8
  WHERE idempotency_keys.expires_at <= $9 OR idempotency_keys.state <> 'done'`

export class IdempotencyRepo implements IdempotencyRepository {
  constructor(
    /** Statements outside a unit of work: the refusal stored alone, reads after a failed commit, the purge. */
    private readonly db: Queryable,
    private readonly dialect: Dialect,
  ) {}

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
    if (row?.fingerprint != null && (await tx.run(DELETE_STALE, [workspaceId, key, now])) === 0) {
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

  async answer(tx: Queryable, entry: StoredAnswer): Promise<void> {
    const params = answerParams(entry)
    // On PostgreSQL it goes out with the COMMIT (no round trip of its own), after the unit's other statements.
    const tail = commitTailOf(tx)
    if (tail) tail.atCommit(INSERT_ANSWER, params)
    else await tx.run(INSERT_ANSWER, params)
  }

  answerAsClaim(tx: Queryable, entry: StoredAnswer): void {
    const tail = commitTailOf(tx)
    if (!tail?.atBegin) throw new Error('An answer is the claim only in a deferred unit of work')
    tail.atBegin(INSERT_ANSWER_AS_CLAIM, [...answerParams(entry), `${entry.workspaceId} ${entry.key}`])
  }

  keyTaken(cause: unknown): boolean {
    if (typeof cause !== 'object' || cause === null) return false
    const { code, table_name } = cause as { code?: unknown; table_name?: unknown }
    return typeof code === 'string' && KEY_TAKEN_CODES.has(code) && table_name === 'idempotency_keys'
  }

  async answerAlone(
    entry: StoredAnswer,
    now: number,
  ): Promise<{ fingerprint: string; response: StoredResponse }> {
    if ((await this.db.run(UPSERT_REFUSAL, [...answerParams(entry), now])) > 0) {
      return { fingerprint: entry.fingerprint, response: entry.response }
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

  async purgeExpired(now: number): Promise<number> {
    return this.db.run('DELETE FROM idempotency_keys WHERE expires_at <= $1', [now])
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
