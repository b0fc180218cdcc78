import type { Clock } from '../clock.js'
import type { Workspace } from '../identity.js'
import type { Queryable } from '../ports.js'
import type { QuotaTelemetry, QuotaUsageRepository } from './ports.js'
import { quotaExceeded, quotaLimit } from './quota.js'
import type { QuotaName, QuotaOverrides } from './types.js'

/** What a service that owns something a workspace grows uses of the quota service. */
export type QuotaGate = Pick<QuotaService, 'take' | 'release'>

/** How a service names the workspace a write grows: its record where the caller has it, else its id. */
export type WorkspaceRef = Workspace | string

/**
 * Where the quota service reads a workspace it knows only by id: in the write's transaction (SQLite's one connection
 * is that transaction's until it ends), or as committed where the unit reads nothing (a deferred unit).
 */
export interface WorkspaceSource {
  byIdIn(tx: Queryable, id: string): Promise<Workspace | undefined>
}

/** How long a workspace read by id is reused: a changed quota applies within this much (and at once for callers). */
const WORKSPACE_TTL_MS = 1_000
const WORKSPACE_CACHE_MAX = 10_000

/**
 * The one home of quotas (src/domain/quotas): every surface's write reaches the service that owns what it grows,
 * and that service counts it here in its own transaction; the stream counts its connections and topics here too.
 * A refusal is 403 quota_exceeded naming the quota, its limit and its use; a count is exact across replicas because
 * it is a row of the store taken in the write's transaction (QuotaUsageRepository).
 */
export class QuotaService {
  private readonly workspaces = new Map<string, { workspace: Workspace; readAt: number }>()

  constructor(
    private readonly usage: QuotaUsageRepository,
    private readonly source: WorkspaceSource,
    private readonly clock: Clock,
    /** Server-wide ceilings over every workspace's quota (AGENTOPS_STREAM_MAX_SUBSCRIPTIONS). */
    private readonly ceilings: QuotaOverrides = {},
    private readonly telemetry?: QuotaTelemetry,
  ) {}

  /** The workspace's quota (its setting, else its tier's), under the server's ceiling. */
  limitOf(workspace: Workspace, quota: QuotaName): number {
    return quotaLimit(workspace, quota, this.ceilings)
  }

  /**
   * In the write's transaction: counts `amount` more of the quota, or throws quota_exceeded naming it (the
   * transaction then rolls back with nothing counted), now or, where the store counts at the commit, from the
   * commit. `scope` names the thing a per-thing quota is of.
   */
  async take(tx: Queryable, ref: WorkspaceRef, quota: QuotaName, amount = 1, scope = ''): Promise<void> {
    const workspace = await this.workspace(tx, ref)
    const workspaceId = typeof ref === 'string' ? ref : ref.id
    const limit = workspace ? this.limitOf(workspace, quota) : 0
    const use = { workspaceId, quota, scope, amount }
    // A count that fits alone goes with the commit where the store can; its refusal then fails the commit.
    const atCommit =
      amount <= limit &&
      this.usage.takeAtCommit(tx, use, limit, {
        admitted: (used) => this.telemetry?.admitted(quota, used, limit),
        refused: (used) => this.refuse(quota, limit, used, amount),
      })
    if (atCommit) return
    const outcome =
      amount > limit
        ? { taken: false, used: await this.usage.usage(workspaceId, quota, scope, tx) }
        : await this.usage.take(tx, use, limit)
    if (!outcome.taken) throw this.refuse(quota, limit, outcome.used, amount)
    this.telemetry?.admitted(quota, outcome.used, limit)
  }

  /** In the transaction that removes what `take` counted. */
  release(tx: Queryable, workspaceId: string, quota: QuotaName, amount = 1, scope = ''): Promise<void> {
    if (amount <= 0) return Promise.resolve()
    return this.usage.release(tx, { workspaceId, quota, scope, amount })
  }

  /** What the workspace uses of the quota now (in `scope` for a per-thing quota). */
  usageOf(workspaceId: string, quota: QuotaName, scope = ''): Promise<number> {
    return this.usage.usage(workspaceId, quota, scope)
  }

  /** For counts one process holds whole (a connection's topics): refuses `used + amount` above the quota. */
  check(workspace: Workspace, quota: QuotaName, used: number, amount = 1): void {
    const limit = this.limitOf(workspace, quota)
    if (used + amount > limit) throw this.refuse(quota, limit, used, amount)
    this.telemetry?.admitted(quota, used + amount, limit)
  }

  /** An admission counted elsewhere (the stream's sockets), for the metrics. */
  admitted(quota: QuotaName, used: number, limit: number): void {
    this.telemetry?.admitted(quota, used, limit)
  }

  /** The refusal, counted in the metrics. */
  refuse(quota: QuotaName, limit: number, used: number, requested = 1) {
    this.telemetry?.refused(quota)
    return quotaExceeded(quota, limit, used, requested)
  }

  private async workspace(tx: Queryable, ref: WorkspaceRef): Promise<Workspace | undefined> {
    if (typeof ref !== 'string') return ref
    const now = this.clock.now()
    const cached = this.workspaces.get(ref)
    if (cached && now - cached.readAt < WORKSPACE_TTL_MS) return cached.workspace
    const workspace = await this.source.byIdIn(tx, ref)
    if (this.workspaces.size >= WORKSPACE_CACHE_MAX) this.workspaces.clear()
    if (workspace) this.workspaces.set(ref, { workspace, readAt: now })
    return workspace
  }
}
