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
  /**
   * `take` sent with the write's COMMIT where the store can (PostgreSQL: the row is locked for the commit alone, not
   * across the transaction's round trips, so one workspace's writes do not queue on it): past `limit` the commit
   * fails with the error `outcome.refused` words from the usage then (the transaction rolled back, nothing counted);
   * `outcome.admitted` hears the usage once the write committed. False, with nothing done, where the store counts
   * only as it goes (SQLite, whose one writer holds no lock across round trips): the caller then uses `take`.
   */
  takeAtCommit(tx: Queryable, use: QuotaUse, limit: number, outcome: QuotaOutcome): boolean
  /** In the transaction that removes what was counted. */
  release(tx: Queryable, use: QuotaUse): Promise<void>
  /** The usage now (0 when nothing was ever counted); read in `tx` when the caller is in one. */
  usage(workspaceId: string, quota: QuotaName, scope?: string, tx?: Queryable): Promise<number>
}

/** What a count taken at the commit reports (QuotaUsageRepository.takeAtCommit). */
export interface QuotaOutcome {
  admitted(used: number): void
  refused(used: number): Error
}

/** What the server's metrics hear of quotas: each admission's usage against its limit, and each refusal. */
export interface QuotaTelemetry {
  admitted(quota: QuotaName, used: number, limit: number): void
  refused(quota: QuotaName): void
}

/** One open stream connection as the store keeps it: a row its replica's lease keeps counting while it lives. */
export interface LiveSocket {
  id: string
  workspaceId: string
  keyId: string
  /** The server process holding it, which renews its lease. */
  replicaId: string
}

/** What a key holds now across every replica: its live connections and their topics. */
export interface KeyStreamUse {
  sockets: number
  subscriptions: number
}

/**
 * The live stream connections of every replica sharing the store, one row per socket with a lease (expiry) its
 * replica renews: what `stream_sockets_per_key` and `stream_subscriptions_per_key` count. Each decision for a key
 * is serialised with every other for that key (a per-key lock on PostgreSQL, the one writer on SQLite), so counts
 * are exact across replicas; a row whose lease lapsed (its replica crashed) no longer counts and is purged.
 */
export interface StreamSocketRepository {
  /**
   * Adds the socket's row, leased until `expiresAt`, when the key's live sockets at `now` are fewer than `limit`;
   * answers the key's live sockets then (the new one included when opened).
   */
  open(
    socket: LiveSocket,
    limit: number,
    now: number,
    expiresAt: number,
  ): Promise<{ opened: boolean; used: number }>
  /**
   * Counts up to `wanted` more topics on the socket's row, as many as keep the key's live topics within `limit`
   * (none when the row is gone); answers how many were granted and the key's topics before them.
   */
  subscribe(
    socket: Pick<LiveSocket, 'id' | 'keyId'>,
    wanted: number,
    limit: number,
    now: number,
  ): Promise<{ granted: number; used: number }>
  /** Counts `count` topics fewer on the socket's row. */
  unsubscribe(socketId: string, count: number): Promise<void>
  /** Removes the socket's row: its connection and topics stop counting at once. */
  close(socketId: string): Promise<void>
  /**
   * Extends the leases of the replica's rows still live at `now` to `expiresAt`; answers their ids (a row missing
   * from them lapsed and may have been purged, so its socket no longer counts).
   */
  renew(replicaId: string, now: number, expiresAt: number): Promise<string[]>
  /** Removes every row of the replica (it shuts down). */
  closeReplica(replicaId: string): Promise<void>
  /** The key's live connections and topics at `now`. */
  usage(keyId: string, now: number): Promise<KeyStreamUse>
}
