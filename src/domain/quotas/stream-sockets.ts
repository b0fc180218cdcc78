import { randomUUID } from 'node:crypto'
import type { Clock } from '../clock.js'
import type { ApiError } from '../errors.js'
import type { FailureLog } from '../failure-log.js'
import type { Workspace } from '../identity.js'
import type { StreamSocketRepository } from './ports.js'
import type { QuotaService } from './service.js'

/**
 * How long a socket's row counts without its replica renewing it: a crashed replica's sockets stop counting
 * against their key this long after its last renewal at most.
 */
export const SOCKET_LEASE_MS = 30_000
/** How often a replica renews its sockets' leases: three chances inside one lease. */
export const SOCKET_RENEW_MS = 10_000

export interface StreamSocketQuotaOptions {
  leaseMs?: number
  renewMs?: number
}

/**
 * One open connection counted against its key's quotas: its topics are counted against
 * `stream_subscriptions_per_key` through it, and `close` frees its slot and topics at once.
 */
export interface SocketLease {
  readonly id: string
  /** Takes room for up to `wanted` more topics: how many were granted, and the refusal of the rest. */
  take(wanted: number): Promise<{ granted: number; refusal?: ApiError }>
  /**
   * Gives back room for `count` topics; resolves once counted. Never rejects: a failure is logged (the room comes
   * back when the socket's row goes).
   */
  release(count: number): Promise<void>
  /** The socket closed: its row goes (a failure is logged: the row's lease then lapses). */
  close(): void
}

interface Held {
  /** Called when the socket's row lapsed while it lived: it no longer counts, so it must close. */
  lost(): void
}

/**
 * Open stream connections and their topics per key, counted across replicas (`stream_sockets_per_key`,
 * `stream_subscriptions_per_key`): each socket is a row of the store leased by this replica, renewed every
 * SOCKET_RENEW_MS while the socket lives and removed when it closes. A replica that crashes stops counting once
 * its leases lapse; a socket whose lease lapsed while it lived (the store unreachable for a whole lease) is closed,
 * since another replica may already have given its slot away.
 */
export class StreamSocketQuotas {
  private readonly replicaId = `replica-${randomUUID()}`
  private readonly held = new Map<string, Held>()
  private readonly leaseMs: number
  private readonly renewMs: number
  private timer: NodeJS.Timeout | undefined

  constructor(
    private readonly sockets: StreamSocketRepository,
    private readonly quotas: Pick<QuotaService, 'limitOf' | 'refuse' | 'admitted'>,
    private readonly clock: Clock,
    private readonly log: FailureLog,
    options: StreamSocketQuotaOptions = {},
  ) {
    this.leaseMs = options.leaseMs ?? SOCKET_LEASE_MS
    this.renewMs = options.renewMs ?? SOCKET_RENEW_MS
  }

  /** Starts renewing this replica's leases. */
  start(): void {
    if (this.timer) return
    this.timer = setInterval(() => void this.renew(), this.renewMs)
    this.timer.unref()
  }

  /** Stops renewing and removes this replica's rows (the server shuts down: its sockets close). */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    this.timer = undefined
    this.held.clear()
    await this.sockets.closeReplica(this.replicaId)
  }

  /**
   * Counts one more open connection of the key, or throws quota_exceeded (`stream_sockets_per_key`) naming its
   * limit and the key's live connections. `lost` is called if the lease lapses while the socket lives.
   */
  async open(workspace: Workspace, keyId: string, lost: () => void): Promise<SocketLease> {
    const limit = this.quotas.limitOf(workspace, 'stream_sockets_per_key')
    const now = this.clock.now()
    const socket = { id: randomUUID(), workspaceId: workspace.id, keyId, replicaId: this.replicaId }
    const outcome = await this.sockets.open(socket, limit, now, now + this.leaseMs)
    if (!outcome.opened) throw this.quotas.refuse('stream_sockets_per_key', limit, outcome.used)
    this.quotas.admitted('stream_sockets_per_key', outcome.used, limit)
    this.held.set(socket.id, { lost })
    let closed = false
    return {
      id: socket.id,
      take: async (wanted) => {
        const topicLimit = this.quotas.limitOf(workspace, 'stream_subscriptions_per_key')
        if (closed || wanted <= 0) return { granted: 0 }
        const got = await this.sockets.subscribe(socket, wanted, topicLimit, this.clock.now())
        if (got.granted > 0)
          this.quotas.admitted('stream_subscriptions_per_key', got.used + got.granted, topicLimit)
        if (got.granted === wanted) return { granted: wanted }
        const used = got.used + got.granted
        return {
          granted: got.granted,
          refusal: this.quotas.refuse('stream_subscriptions_per_key', topicLimit, used),
        }
      },
      release: async (count) => {
        if (closed || count <= 0) return
        await this.sockets
          .unsubscribe(socket.id, count)
          .catch((err: unknown) => this.log.error({ err }, 'stream unsubscribe count failed'))
      },
      close: () => {
        if (closed) return
        closed = true
        this.held.delete(socket.id)
        this.sockets
          .close(socket.id)
          .catch((err: unknown) => this.log.error({ err }, 'stream socket row removal failed'))
      },
    }
  }

  /** The key's live connections and topics across replicas. */
  usage(keyId: string) {
    return this.sockets.usage(keyId, this.clock.now())
  }

  /** Extends every lease this replica holds; closes the sockets whose lease lapsed meanwhile. */
  async renew(): Promise<void> {
    if (this.held.size === 0) return
    // Only sockets whose rows existed before the renewal are judged by it (one opened meanwhile may be missing).
    const before = [...this.held.keys()]
    const now = this.clock.now()
    let live: string[]
    try {
      live = await this.sockets.renew(this.replicaId, now, now + this.leaseMs)
    } catch (err) {
      this.log.error({ err }, 'stream socket lease renewal failed')
      return
    }
    const renewed = new Set(live)
    for (const id of before) {
      const socket = this.held.get(id)
      if (!socket || renewed.has(id)) continue
      this.held.delete(id)
      socket.lost()
    }
  }
}
