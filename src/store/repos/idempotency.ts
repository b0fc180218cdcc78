import type { ClaimResult, StoredResponse } from '../../domain/limits/types.js'
import type { IdempotencyRepository } from '../../domain/ports.js'
import type { Queryable } from '../db.js'

interface Row extends Record<string, unknown> {
  fingerprint: string
  state: string
  status: number | null
  headers: string | null
  body: string | null
  locked_until: number
  expires_at: number
}

export class IdempotencyRepo implements IdempotencyRepository {
  constructor(
    private readonly purgeDb: Queryable,
    /**
     * Claims, answers and releases: single statements on rows no transaction writes, so on PostgreSQL they go
     * through the store's pipeline (src/store/db.ts); the bulk purge stays off it.
     */
    private readonly db: Queryable = purgeDb,
  ) {}

  /**
   * Atomically claims (workspace, key). The primary key decides between racing requests on any number of
   * replicas; an expired record, or an in-progress claim whose lease ran out (a crashed server), is taken over.
   */
  async claim(
    workspaceId: string,
    key: string,
    fingerprint: string,
    now: number,
    windowMs: number,
    leaseMs: number,
  ): Promise<ClaimResult> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const inserted = await this.db.run(
        `INSERT INTO idempotency_keys (workspace_id, idem_key, fingerprint, state, locked_until, created_at, expires_at)
         VALUES ($1, $2, $3, 'in_progress', $4, $5, $6) ON CONFLICT (workspace_id, idem_key) DO NOTHING`,
        [workspaceId, key, fingerprint, now + leaseMs, now, now + windowMs],
      )
      if (inserted > 0) return { kind: 'claimed' }
      const row = await this.db.one<Row>(
        'SELECT * FROM idempotency_keys WHERE workspace_id = $1 AND idem_key = $2',
        [workspaceId, key],
      )
      if (!row) continue // released between our insert and read: try again
      const stale =
        Number(row.expires_at) <= now || (row.state === 'in_progress' && Number(row.locked_until) <= now)
      if (stale) {
        await this.db.run(
          `DELETE FROM idempotency_keys WHERE workspace_id = $1 AND idem_key = $2
             AND (expires_at <= $3 OR (state = 'in_progress' AND locked_until <= $3))`,
          [workspaceId, key, now],
        )
        continue
      }
      if (row.state === 'in_progress') return { kind: 'in_progress', fingerprint: row.fingerprint }
      return {
        kind: 'replay',
        fingerprint: row.fingerprint,
        response: storedResponse(row),
      }
    }
    return { kind: 'in_progress', fingerprint }
  }

  async complete(workspaceId: string, key: string, response: StoredResponse): Promise<void> {
    await this.db.run(
      `UPDATE idempotency_keys SET state = 'done', status = $3, headers = $4, body = $5
       WHERE workspace_id = $1 AND idem_key = $2`,
      [workspaceId, key, response.status, JSON.stringify(response.headers), response.body],
    )
  }

  async release(workspaceId: string, key: string): Promise<void> {
    await this.db.run(
      "DELETE FROM idempotency_keys WHERE workspace_id = $1 AND idem_key = $2 AND state = 'in_progress'",
      [workspaceId, key],
    )
  }

  async purgeExpired(now: number): Promise<number> {
    return this.purgeDb.run('DELETE FROM idempotency_keys WHERE expires_at <= $1', [now])
  }
}

/**
 * The embedded store's variant, where this server is the only writer: a claim in progress lives in memory (no
 * write, no commit), and only the finished answer is written, once. The claim is taken synchronously before the
 * first await, so two concurrent requests with one key can never both win it. A crash loses only claims whose
 * requests never answered, which the stored variant would also hand over once their lease ran out.
 */
export class LocalIdempotencyRepo implements IdempotencyRepository {
  private readonly stored: IdempotencyRepo
  private readonly inFlight = new Map<string, { fingerprint: string; createdAt: number; expiresAt: number }>()

  constructor(private readonly db: Queryable) {
    this.stored = new IdempotencyRepo(db)
  }

  async claim(
    workspaceId: string,
    key: string,
    fingerprint: string,
    now: number,
    windowMs: number,
  ): Promise<ClaimResult> {
    const id = `${workspaceId}\u0000${key}`
    const running = this.inFlight.get(id)
    if (running) return { kind: 'in_progress', fingerprint: running.fingerprint }
    this.inFlight.set(id, { fingerprint, createdAt: now, expiresAt: now + windowMs })
    try {
      const row = await this.db.one<Row>(
        'SELECT * FROM idempotency_keys WHERE workspace_id = $1 AND idem_key = $2',
        [workspaceId, key],
      )
      // A row left in progress belongs to a server that died before answering: it is taken over.
      if (!row || Number(row.expires_at) <= now || row.state !== 'done') return { kind: 'claimed' }
      this.inFlight.delete(id)
      return {
        kind: 'replay',
        fingerprint: row.fingerprint,
        response: storedResponse(row),
      }
    } catch (err) {
      this.inFlight.delete(id)
      throw err
    }
  }

  async complete(workspaceId: string, key: string, response: StoredResponse): Promise<void> {
    const id = `${workspaceId}\u0000${key}`
    const claim = this.inFlight.get(id)
    if (!claim) return
    try {
      await this.db.run(
        `INSERT INTO idempotency_keys (workspace_id, idem_key, fingerprint, state, status, headers, body, locked_until,
           created_at, expires_at)
         VALUES ($1, $2, $3, 'done', $4, $5, $6, $7, $7, $8)
         ON CONFLICT (workspace_id, idem_key) DO UPDATE SET fingerprint = $3, state = 'done', status = $4,
           headers = $5, body = $6, locked_until = $7, created_at = $7, expires_at = $8`,
        [
          workspaceId,
          key,
          claim.fingerprint,
          response.status,
          JSON.stringify(response.headers),
          response.body,
          claim.createdAt,
          claim.expiresAt,
        ],
      )
    } finally {
      this.inFlight.delete(id)
    }
  }

  async release(workspaceId: string, key: string): Promise<void> {
    this.inFlight.delete(`${workspaceId}\u0000${key}`)
    await this.stored.release(workspaceId, key)
  }

  purgeExpired(now: number): Promise<number> {
    return this.stored.purgeExpired(now)
  }
}

/** The finished answer a row holds, as a replay returns it. */
function storedResponse(row: Row): StoredResponse {
  return {
    status: Number(row.status),
    headers: JSON.parse(row.headers ?? '{}') as Record<string, string>,
    body: row.body ?? '',
  }
}
