import type { KeyStreamUse, LiveSocket, StreamSocketRepository } from '../../domain/quotas/ports.js'
import type { Db, Queryable } from '../db.js'

/**
 * The first of the two numbers of a key's stream-socket advisory lock (the second is a hash of the key id): apart
 * from the event log's one-number lock and the Idempotency-Key claims' class (src/store/repos/idempotency.ts).
 */
const KEY_LOCK_CLASS = 25_002

const LOCK_KEY = `SELECT pg_advisory_xact_lock(${KEY_LOCK_CLASS}, hashtext($1))`

/** Rows whose lease lapsed count no more; they are removed when their key is next decided on. */
const PURGE_LAPSED = 'DELETE FROM stream_sockets WHERE key_id = $1 AND expires_at <= $2'

const KEY_USE = `SELECT COUNT(*) AS sockets, COALESCE(SUM(subscriptions), 0) AS subscriptions,
  COALESCE(MAX(CASE WHEN id = $3 THEN 1 ELSE 0 END), 0) AS mine
  FROM stream_sockets WHERE key_id = $1 AND expires_at > $2`

const INSERT = `INSERT INTO stream_sockets (id, workspace_id, key_id, replica_id, subscriptions, expires_at)
  VALUES ($1, $2, $3, $4, 0, $5)`

const ADD_TOPICS = 'UPDATE stream_sockets SET subscriptions = subscriptions + $2 WHERE id = $1'

const REMOVE_TOPICS = `UPDATE stream_sockets SET subscriptions = CASE WHEN subscriptions > $2 THEN subscriptions - $2 ELSE 0 END
  WHERE id = $1`

const RENEW =
  'UPDATE stream_sockets SET expires_at = $3 WHERE replica_id = $1 AND expires_at > $2 RETURNING id'

type UseRow = {
  sockets: number | string
  subscriptions: number | string
  mine: number | string
}

/**
 * `stream_sockets` rows (StreamSocketRepository). Every decision that grows a key's count runs in one transaction
 * that first serialises on the key: PostgreSQL's transaction-scoped advisory lock on it (each replica's open or
 * subscribe for the key waits for the one before to commit, then reads its row), SQLite's one writer. Shrinking
 * (unsubscribe, close) needs no lock: it can only leave room.
 */
export class StreamSocketRepo implements StreamSocketRepository {
  constructor(private readonly db: Db) {}

  open(
    socket: LiveSocket,
    limit: number,
    now: number,
    expiresAt: number,
  ): Promise<{ opened: boolean; used: number }> {
    return this.db.transaction(async (tx) => {
      const use = await this.keyUse(tx, socket.keyId, now, socket.id)
      if (use.sockets >= limit) return { opened: false, used: use.sockets }
      await tx.run(INSERT, [socket.id, socket.workspaceId, socket.keyId, socket.replicaId, expiresAt])
      return { opened: true, used: use.sockets + 1 }
    })
  }

  subscribe(
    socket: Pick<LiveSocket, 'id' | 'keyId'>,
    wanted: number,
    limit: number,
    now: number,
  ): Promise<{ granted: number; used: number }> {
    return this.db.transaction(async (tx) => {
      const use = await this.keyUse(tx, socket.keyId, now, socket.id)
      const granted = use.mine ? Math.max(0, Math.min(wanted, limit - use.subscriptions)) : 0
      if (granted > 0) await tx.run(ADD_TOPICS, [socket.id, granted])
      return { granted, used: use.subscriptions }
    })
  }

  async unsubscribe(socketId: string, count: number): Promise<void> {
    await this.db.run(REMOVE_TOPICS, [socketId, count])
  }

  async close(socketId: string): Promise<void> {
    await this.db.run('DELETE FROM stream_sockets WHERE id = $1', [socketId])
  }

  async renew(replicaId: string, now: number, expiresAt: number): Promise<string[]> {
    const rows = await this.db.query<{ id: string }>(RENEW, [replicaId, now, expiresAt])
    return rows.map((r) => r.id)
  }

  async closeReplica(replicaId: string): Promise<void> {
    await this.db.run('DELETE FROM stream_sockets WHERE replica_id = $1', [replicaId])
  }

  async usage(keyId: string, now: number): Promise<KeyStreamUse> {
    const { sockets, subscriptions } = await this.read(this.db, keyId, now, '')
    return { sockets, subscriptions }
  }

  /** In `tx`, holding the key: purges its lapsed rows and reads what its live ones hold (and whether `socketId` is one). */
  private async keyUse(
    tx: Queryable,
    keyId: string,
    now: number,
    socketId: string,
  ): Promise<KeyStreamUse & { mine: boolean }> {
    if (this.db.dialect === 'postgres') await tx.query(LOCK_KEY, [keyId])
    await tx.run(PURGE_LAPSED, [keyId, now])
    return this.read(tx, keyId, now, socketId)
  }

  private async read(
    q: Queryable,
    keyId: string,
    now: number,
    socketId: string,
  ): Promise<KeyStreamUse & { mine: boolean }> {
    const row = await q.one<UseRow>(KEY_USE, [keyId, now, socketId])
    return {
      sockets: Number(row?.sockets ?? 0),
      subscriptions: Number(row?.subscriptions ?? 0),
      mine: Number(row?.mine ?? 0) === 1,
    }
  }
}
