import { performance } from 'node:perf_hooks'
import type { LeaseClaim } from '../../domain/leases.js'
import type { Slice } from '../../domain/pagination.js'
import type { RunRepository } from '../../domain/runs/ports.js'
import type { FrameRecord, Outcome, RunRecord, RunStatus } from '../../domain/runs/types.js'
import type { Queryable } from '../db.js'
import { RunVersionReads } from './run-versions.js'
import type { RunRepo } from './runs.js'

/** Runs kept at most; the oldest entry goes first. */
const CAPACITY = 5_000

/**
 * A row version (PostgreSQL's 32-bit `xmin`) is trusted for this long after its row was read; then the row is read
 * whole again. Transaction ids wrap around after 2^32 transactions, which no server runs in a minute, so an entry
 * can never be confirmed by a later row that happens to reuse its id.
 */
const VERSION_TRUST_MS = 60_000

interface Entry {
  run: RunRecord
  /** The row version the run was read at (PostgreSQL); absent on the embedded store. */
  version: string | undefined
  readAt: number
}

/** Deeply frozen: a cached run is shared by every reader, so a caller that tried to change one fails loudly. */
function freeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const item of Object.values(value)) freeze(item)
  }
  return value
}

/**
 * Runs read by id, shared by every request of this process. Invalidated by the repository's own writes and
 * filled only from a read that finished after its batch committed, with no write to the run since it began
 * (a generation per id): a reader never gets data that was not committed, nor a run older than a write it follows.
 */
class RunCache {
  private readonly runs = new Map<string, Entry>()
  private readonly generations = new Map<string, number>()

  get(id: string): Entry | undefined {
    return this.runs.get(id)
  }

  generation(id: string): number {
    return this.generations.get(id) ?? 0
  }

  fill(id: string, run: RunRecord, generation: number, version?: string): RunRecord {
    if (this.generation(id) !== generation) return run
    if (this.runs.size >= CAPACITY) {
      const oldest = this.runs.keys().next().value
      if (oldest !== undefined) this.runs.delete(oldest)
    }
    this.runs.set(id, { run: freeze(run), version, readAt: performance.now() })
    return run
  }

  forget(id: string): void {
    this.runs.delete(id)
    this.generations.set(id, this.generation(id) + 1)
  }
}

/**
 * A run's row version read with its workspace's next rate count, when one is waiting to be sent; undefined when
 * none is (src/store/repos/rate-count-batches.ts ride).
 */
export type RideWithCount = (workspaceId: string, runId: string) => Promise<string | undefined> | undefined

/**
 * How far a cached run is trusted:
 * - `sole-writer`, the embedded store: this server is the only writer of runs (src/store/repos/index.ts), and its
 *   own writes forget the entry, so a hit is answered from memory;
 * - `versioned`, PostgreSQL: other replicas write too, so every hit is checked against the row's current version
 *   (one single-column statement, shared by the reads waiting at the same moment: run-versions.ts), and a changed
 *   or unknown version reads the row whole.
 */
export type RunCacheTrust = 'sole-writer' | 'versioned'

/**
 * Runs read by id (`GET /v1/runs/{id}`), cached. The read and the row's conversion (a row of 31 columns, five of
 * them JSON) were most of what such a GET cost over bare Hono (README Performance), and a cached run is frozen, so
 * its view and body are made once too (src/domain/runs/service.ts viewOf). Inside a transaction the cache is
 * neither read nor filled: the transaction may see its own uncommitted writes.
 */
export class CachedRunRepo implements RunRepository {
  constructor(
    private readonly inner: RunRepo,
    private readonly trust: RunCacheTrust,
    /** Whether the caller runs in a unit of work (Db.inUnitOfWork): a transaction too, whatever it reads through. */
    private readonly inUnitOfWork: () => boolean = () => false,
    /** Where a confirmation goes first: with the workspace's waiting rate count (PostgreSQL). */
    private readonly ride?: RideWithCount,
    // Shared with the transaction-bound copies (inTransactionOver), which neither read nor fill the cache:
    private readonly cache = new RunCache(),
    private readonly inTransaction = false,
    /** The confirmations of concurrent reads, grouped (PostgreSQL); only ever used outside a transaction. */
    private readonly versions = new RunVersionReads((keys) => inner.versionsOf(keys)),
  ) {}

  in(tx: Queryable): CachedRunRepo {
    return this.inTransactionOver(this.inner.in(tx))
  }

  writingAtCommit(tx: Queryable): CachedRunRepo {
    return this.inTransactionOver(this.inner.writingAtCommit(tx))
  }

  /** The same cache and group read over a repository bound to a transaction, which neither reads nor fills it. */
  private inTransactionOver(inner: RunRepo): CachedRunRepo {
    return new CachedRunRepo(inner, this.trust, this.inUnitOfWork, this.ride, this.cache, true, this.versions)
  }

  getNow(workspaceId: string, id: string): RunRecord | undefined {
    if (this.trust !== 'sole-writer' || this.inTransaction || this.inUnitOfWork()) return undefined
    const hit = this.cache.get(id)
    return hit && hit.run.workspaceId === workspaceId ? hit.run : undefined
  }

  get(workspaceId: string, id: string): Promise<RunRecord | undefined> {
    if (this.inTransaction || this.inUnitOfWork()) return this.inner.get(workspaceId, id)
    const hit = this.cache.get(id)
    // A run never moves between workspaces: another workspace's run is not found, whatever its version.
    if (hit && hit.run.workspaceId !== workspaceId) return Promise.resolve(undefined)
    if (hit && this.trust === 'sole-writer') return Promise.resolve(hit.run)
    if (hit?.version !== undefined && performance.now() - hit.readAt < VERSION_TRUST_MS) {
      // Confirmed by a statement sent after this read arrived, which sees every write committed before it began, as
      // a statement of its own would: the workspace's next rate count, which this request waits for anyway, when one
      // is waiting; else the group read of the reads waiting now (run-versions.ts). One promise layer, not an async
      // function around it: every cached GET on PostgreSQL comes here.
      const { run, version } = hit
      return (this.ride?.(workspaceId, id) ?? this.versions.versionOf(workspaceId, id)).then((current) =>
        current === version ? run : current === undefined ? undefined : this.read(workspaceId, id),
      )
    }
    return this.read(workspaceId, id)
  }

  /** The run read whole, and cached if no write to it began meanwhile. */
  private async read(workspaceId: string, id: string): Promise<RunRecord | undefined> {
    const generation = this.cache.generation(id)
    if (this.trust === 'versioned') {
      const found = await this.inner.getVersioned(workspaceId, id)
      return found && this.cache.fill(id, found.run, generation, found.version)
    }
    const run = await this.inner.get(workspaceId, id)
    return run && this.cache.fill(id, run, generation)
  }

  insert(r: Omit<RunRecord, 'seq'>): Promise<RunRecord> {
    this.cache.forget(r.id)
    return this.inner.insert(r)
  }

  save(r: RunRecord): Promise<void> {
    this.cache.forget(r.id)
    return this.inner.save(r)
  }

  lock(id: string): Promise<RunRecord | undefined> {
    return this.inner.lock(id)
  }
  listByAgent(
    workspaceId: string,
    agentId: string,
    afterSeq: number,
    limit: number,
  ): Promise<Slice<RunRecord>> {
    return this.inner.listByAgent(workspaceId, agentId, afterSeq, limit)
  }
  activeIdsByAgent(workspaceId: string, agentId: string): Promise<string[]> {
    return this.inner.activeIdsByAgent(workspaceId, agentId)
  }
  countActiveByAgents(workspaceId: string, agentIds: readonly string[]): Promise<Map<string, number>> {
    return this.inner.countActiveByAgents(workspaceId, agentIds)
  }
  claimNext(
    owner: string,
    now: number,
    until: number,
    limit: number,
  ): Promise<{ ids: string[]; takenOver: number }> {
    return this.inner.claimNext(owner, now, until, limit)
  }
  claim(id: string, owner: string, now: number, until: number): Promise<LeaseClaim | undefined> {
    return this.inner.claim(id, owner, now, until)
  }
  release(id: string, owner: string): Promise<void> {
    return this.inner.release(id, owner)
  }
  appendFrame(runId: string, f: FrameRecord): Promise<void> {
    return this.inner.appendFrame(runId, f)
  }
  frames(runId: string, afterSeq: number, limit: number): Promise<Slice<FrameRecord>> {
    return this.inner.frames(runId, afterSeq, limit)
  }
  followTask(
    taskId: string,
    runId: string,
    status: RunStatus,
    outcome: Outcome | null,
    at: number,
  ): Promise<void> {
    return this.inner.followTask(taskId, runId, status, outcome, at)
  }
}
