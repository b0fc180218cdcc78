import type { LeaseClaim } from '../leases.js'
import type { Slice } from '../pagination.js'
import type { Queryable, TxBound } from '../ports.js'
import type { FrameRecord, Outcome, RunRecord, RunStatus } from './types.js'

export interface RunRepository extends TxBound<RunRepository> {
  /**
   * The repository in a transaction that reads none of the runs it writes once it has written them: save,
   * appendFrame and followTask may then be held back and sent with the COMMIT (one write instead of one each).
   */
  writingAtCommit(tx: Queryable): RunRepository
  insert(r: Omit<RunRecord, 'seq'>): Promise<RunRecord>
  /** Writes every mutable field back; callers hold the row inside a transaction. A finished run drops its lease. */
  save(r: RunRecord): Promise<void>
  get(workspaceId: string, id: string): Promise<RunRecord | undefined>
  /**
   * What `get` would answer, when it can be answered from memory without waiting (a cached run this process is
   * the sole writer of); undefined when `get` must be asked.
   */
  getNow?(workspaceId: string, id: string): RunRecord | undefined
  /** Reads the row for update: on PostgreSQL the row lock serialises controls against the executor. */
  lock(id: string): Promise<RunRecord | undefined>
  listByAgent(
    workspaceId: string,
    agentId: string,
    afterSeq: number,
    limit: number,
  ): Promise<Slice<RunRecord>>
  activeIdsByAgent(workspaceId: string, agentId: string): Promise<string[]>
  /** Non-terminal runs per agent; agents without one are absent from the map. */
  countActiveByAgents(workspaceId: string, agentIds: readonly string[]): Promise<Map<string, number>>
  /**
   * Claims up to `limit` runs the scheduler may advance (higher priority first, then age; leases live elsewhere
   * are skipped) with one statement, answering their ids in that order; each run goes to one owner. A run `owner`
   * already holds may be among them (its lease renewed). `takenOver`: how many of them another owner had held
   * and let lapse (a replica that died or stalled).
   */
  claimNext(
    owner: string,
    now: number,
    until: number,
    limit: number,
  ): Promise<{ ids: string[]; takenOver: number }>
  /**
   * Takes (or renews) the run's lease: `taken-over` when another owner's lease had lapsed (a dead or stalled
   * replica), undefined when another owner holds a live one.
   */
  claim(id: string, owner: string, now: number, until: number): Promise<LeaseClaim | undefined>
  release(id: string, owner: string): Promise<void>
  appendFrame(runId: string, f: FrameRecord): Promise<void>
  frames(runId: string, afterSeq: number, limit: number): Promise<Slice<FrameRecord>>
  /** The run's task takes the run's status (and the run's id, if the task service has not attached it yet). */
  followTask(
    taskId: string,
    runId: string,
    status: RunStatus,
    outcome: Outcome | null,
    at: number,
  ): Promise<void>
}

/** What agents and tasks need from runs; RunService implements it. */
export interface RunsPort {
  /** Cancels every run of the agent that is not terminal (agent deletion). */
  terminateAgentRuns(workspaceId: string, agentId: string): Promise<void>
  /** Starts the run that carries a newly assigned task; returns its id and status. */
  startTaskRun(task: TaskRunRequest): Promise<{ runId: string; status: RunStatus }>
}

export interface TaskRunRequest {
  workspaceId: string
  taskId: string
  agentId: string
  description: string
  dataSource: string | null
  priority: number
  /** The caller's key, whose scopes the policy gate checks tool bindings against. */
  caller: { keyId: string; identity: string; scopes: string[] }
}

/** What the runs feature reports to whoever watches the server (src/domain/telemetry.ts has the others). */
export interface RunTelemetry {
  /** A run's change committed: `before` is its status when the change began, `run` the stored result. */
  changed(before: RunStatus, run: RunRecord, frames: readonly FrameRecord[]): void
}

export const NO_RUN_TELEMETRY: RunTelemetry = { changed() {} }
