import type { Slice } from '../../domain/pagination.js'
import type { Dialect, RunRepository } from '../../domain/ports.js'
import type { FrameRecord, Outcome, RunRecord, RunStatus } from '../../domain/runs/types.js'
import type { Queryable } from '../db.js'
import type { RunRepo } from './runs.js'

/** Runs kept at most; the oldest entry goes first. */
const CAPACITY = 5_000

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
  private readonly runs = new Map<string, RunRecord>()
  private readonly generations = new Map<string, number>()

  get(id: string): RunRecord | undefined {
    return this.runs.get(id)
  }

  generation(id: string): number {
    return this.generations.get(id) ?? 0
  }

  fill(id: string, run: RunRecord, generation: number): void {
    if (this.generation(id) !== generation) return
    if (this.runs.size >= CAPACITY) {
      const oldest = this.runs.keys().next().value
      if (oldest !== undefined) this.runs.delete(oldest)
    }
    this.runs.set(id, freeze(run))
  }

  forget(id: string): void {
    this.runs.delete(id)
    this.generations.set(id, this.generation(id) + 1)
  }
}

/**
 * The embedded store's run repository: this server is the only writer of runs (src/store/repos/index.ts), so a
 * `GET /v1/runs/{id}` can be answered from memory. The read and the row's conversion were most of what such a GET
 * cost over bare Hono (README Performance). Inside a transaction the cache is neither read nor filled: the
 * transaction may see its own uncommitted writes.
 */
export class CachedRunRepo implements RunRepository {
  constructor(
    private readonly inner: RunRepo,
    private readonly cache = new RunCache(),
    private readonly inTransaction = false,
  ) {}

  in(tx: Queryable): CachedRunRepo {
    return new CachedRunRepo(this.inner.in(tx), this.cache, true)
  }

  async get(workspaceId: string, id: string): Promise<RunRecord | undefined> {
    if (this.inTransaction) return this.inner.get(workspaceId, id)
    const hit = this.cache.get(id)
    if (hit) return hit.workspaceId === workspaceId ? hit : undefined
    const generation = this.cache.generation(id)
    const run = await this.inner.get(workspaceId, id)
    if (run) this.cache.fill(id, run, generation)
    return run
  }

  insert(r: Omit<RunRecord, 'seq'>): Promise<RunRecord> {
    this.cache.forget(r.id)
    return this.inner.insert(r)
  }

  save(r: RunRecord): Promise<void> {
    this.cache.forget(r.id)
    return this.inner.save(r)
  }

  lock(id: string, dialect: Dialect): Promise<RunRecord | undefined> {
    return this.inner.lock(id, dialect)
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
  runnable(now: number, limit: number, exclude: string[]): Promise<string[]> {
    return this.inner.runnable(now, limit, exclude)
  }
  claim(id: string, owner: string, now: number, until: number): Promise<boolean> {
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
  followTask(runId: string, status: RunStatus, outcome: Outcome | null, at: number): Promise<void> {
    return this.inner.followTask(runId, status, outcome, at)
  }
}
