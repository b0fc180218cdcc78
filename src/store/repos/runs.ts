import type { Slice } from '../../domain/pagination.js'
import type { LeaseClaim, RunRepository } from '../../domain/ports.js'
import type { FrameKind, FrameRecord, Outcome, RunRecord, RunStatus } from '../../domain/runs/types.js'
import { fromJson, type Queryable, toJson } from '../db.js'
import { lookAheadLimit, toSlice } from '../paging.js'

type RawRow = Record<string, unknown>
const num = (v: unknown): number => Number(v)
const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v))
const strOrNull = (v: unknown): string | null => (v === null || v === undefined ? null : String(v))

function toRun(r: RawRow): RunRecord {
  return {
    seq: num(r.seq),
    id: String(r.id),
    workspaceId: String(r.workspace_id),
    agentId: String(r.agent_id),
    taskId: strOrNull(r.task_id),
    status: r.status as RunStatus,
    pausedFrom: strOrNull(r.paused_from) as RunStatus | null,
    mode: r.mode as RunRecord['mode'],
    traceLevel: r.trace_level as RunRecord['traceLevel'],
    inputs: fromJson(r.inputs),
    envelope: fromJson(r.envelope),
    behavior: r.behavior as RunRecord['behavior'],
    caller: fromJson(r.caller),
    priority: num(r.priority),
    plan: fromJson(r.plan),
    nextStep: num(r.next_step),
    inFlightStep: numOrNull(r.in_flight_step),
    toolCalls: num(r.tool_calls),
    approved: fromJson(r.approved),
    awaiting: fromJson(r.awaiting),
    results: fromJson(r.results),
    outcome: r.outcome === null || r.outcome === undefined ? null : fromJson(r.outcome),
    frameCount: num(r.frame_count),
    stepsCompleted: num(r.steps_completed),
    stepsEscalated: num(r.steps_escalated),
    createdAt: num(r.created_at),
    startedAt: numOrNull(r.started_at),
    finishedAt: numOrNull(r.finished_at),
    updatedAt: num(r.updated_at),
  }
}

function toFrame(r: RawRow): FrameRecord {
  return {
    seq: num(r.seq),
    ts: num(r.ts),
    stepId: strOrNull(r.step_id),
    kind: r.kind as FrameKind,
    tool: strOrNull(r.tool),
    toolId: strOrNull(r.tool_id),
    policy: strOrNull(r.policy) as FrameRecord['policy'],
    latencyMs: numOrNull(r.latency_ms),
    result: strOrNull(r.result),
    detail: r.detail === null || r.detail === undefined ? null : fromJson(r.detail),
  }
}

/**
 * The scheduler's claim query. Its predicate and order are exactly those of the partial index `runs_claim`
 * (migration 009): both stores walk that index from its first entry and stop after the LIMIT, so a claim costs
 * the same whatever the backlog (test/store/run-claim-plan.test.ts checks both plans). Rows whose lease is live
 * elsewhere are skipped inside the index (lease_until is one of its columns); there are at most as many as runs
 * being driven. Change the text and the index together.
 */
export const RUNNABLE_SQL = `SELECT id FROM runs WHERE status IN ('queued', 'running') AND lease_until < $1
       ORDER BY priority DESC, seq ASC LIMIT $2`

export class RunRepo implements RunRepository {
  constructor(
    private readonly db: Queryable,
    /** Where a read by id goes outside a transaction: the store's pipeline on PostgreSQL (src/store/db.ts). */
    private readonly reads: Queryable = db,
  ) {}

  /** The same repository inside a transaction that spans several repositories. */
  in(tx: Queryable): RunRepo {
    return new RunRepo(tx)
  }

  async insert(r: Omit<RunRecord, 'seq'>): Promise<RunRecord> {
    const row = await this.db.one(
      `INSERT INTO runs (id, workspace_id, agent_id, task_id, status, paused_from, mode, trace_level, inputs, envelope,
         behavior, caller, priority, plan, next_step, in_flight_step, tool_calls, approved, awaiting, results, outcome,
         frame_count, lease_owner, lease_until, created_at, started_at, finished_at, updated_at, steps_completed,
         steps_escalated)
       VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,$22,NULL,0,$23,$24,$25,$26,$27,
         $28)
       RETURNING *`,
      [
        r.id,
        r.workspaceId,
        r.agentId,
        r.taskId,
        r.status,
        r.pausedFrom,
        r.mode,
        r.traceLevel,
        toJson(r.inputs),
        toJson(r.envelope),
        r.behavior,
        toJson(r.caller),
        r.priority,
        toJson(r.plan),
        r.nextStep,
        r.inFlightStep,
        r.toolCalls,
        toJson(r.approved),
        toJson(r.awaiting),
        toJson(r.results),
        r.outcome === null ? null : toJson(r.outcome),
        r.frameCount,
        r.createdAt,
        r.startedAt,
        r.finishedAt,
        r.updatedAt,
        r.stepsCompleted,
        r.stepsEscalated,
      ],
    )
    return toRun(row ?? {})
  }

  /** Writes every mutable field back; callers hold the row inside a transaction. */
  async save(r: RunRecord): Promise<void> {
    await this.db.run(
      `UPDATE runs SET status=$2, paused_from=$3, next_step=$4, in_flight_step=$5, tool_calls=$6, approved=$7,
         awaiting=$8, results=$9, outcome=$10, frame_count=$11, started_at=$12, finished_at=$13, updated_at=$14,
         steps_completed=$15, steps_escalated=$16
       WHERE id=$1`,
      [
        r.id,
        r.status,
        r.pausedFrom,
        r.nextStep,
        r.inFlightStep,
        r.toolCalls,
        toJson(r.approved),
        toJson(r.awaiting),
        toJson(r.results),
        r.outcome === null ? null : toJson(r.outcome),
        r.frameCount,
        r.startedAt,
        r.finishedAt,
        r.updatedAt,
        r.stepsCompleted,
        r.stepsEscalated,
      ],
    )
  }

  async get(workspaceId: string, id: string): Promise<RunRecord | undefined> {
    const row = await this.reads.one('SELECT * FROM runs WHERE id = $1 AND workspace_id = $2', [
      id,
      workspaceId,
    ])
    return row ? toRun(row) : undefined
  }

  /**
   * PostgreSQL only: the run with its row version, `xmin`, the id of the transaction that wrote the row as it is
   * now. Every UPDATE writes a new row version, so the same `xmin` means the same committed content (the
   * concurrency token Npgsql and Entity Framework use).
   */
  async getVersioned(
    workspaceId: string,
    id: string,
  ): Promise<{ run: RunRecord; version: string } | undefined> {
    const row = await this.reads.one(
      'SELECT xmin::text AS row_version, * FROM runs WHERE id = $1 AND workspace_id = $2',
      [id, workspaceId],
    )
    return row ? { run: toRun(row), version: String(row.row_version) } : undefined
  }

  /** PostgreSQL only: the run's current row version (see getVersioned); undefined when the workspace has no such run. */
  async versionOf(workspaceId: string, id: string): Promise<string | undefined> {
    const row = await this.reads.one(
      'SELECT xmin::text AS row_version FROM runs WHERE id = $1 AND workspace_id = $2',
      [id, workspaceId],
    )
    return row ? String(row.row_version) : undefined
  }

  /** Reads the row for update: on PostgreSQL the row lock serialises controls against the executor. */
  async lock(id: string, dialect: 'sqlite' | 'postgres'): Promise<RunRecord | undefined> {
    const row = await this.db.one(
      `SELECT * FROM runs WHERE id = $1${dialect === 'postgres' ? ' FOR UPDATE' : ''}`,
      [id],
    )
    return row ? toRun(row) : undefined
  }

  async listByAgent(
    workspaceId: string,
    agentId: string,
    afterSeq: number,
    limit: number,
  ): Promise<Slice<RunRecord>> {
    const rows = await this.db.query(
      'SELECT * FROM runs WHERE workspace_id = $1 AND agent_id = $2 AND seq > $3 ORDER BY seq LIMIT $4',
      [workspaceId, agentId, afterSeq, lookAheadLimit(limit)],
    )
    return toSlice(rows.map(toRun), limit)
  }

  async activeIdsByAgent(workspaceId: string, agentId: string): Promise<string[]> {
    const rows = await this.db.query<{ id: string }>(
      `SELECT id FROM runs WHERE workspace_id = $1 AND agent_id = $2
         AND status IN ('queued', 'running', 'awaiting_approval', 'paused') ORDER BY seq`,
      [workspaceId, agentId],
    )
    return rows.map((r) => r.id)
  }

  async countActiveByAgents(workspaceId: string, agentIds: readonly string[]): Promise<Map<string, number>> {
    if (agentIds.length === 0) return new Map()
    const placeholders = agentIds.map((_, i) => `$${i + 2}`).join(', ')
    const rows = await this.db.query<{ agent_id: string; n: number | string }>(
      `SELECT agent_id, COUNT(*) AS n FROM runs WHERE workspace_id = $1 AND agent_id IN (${placeholders})
         AND status IN ('queued', 'running', 'awaiting_approval', 'paused') GROUP BY agent_id`,
      [workspaceId, ...agentIds],
    )
    return new Map(rows.map((r) => [r.agent_id, Number(r.n)]))
  }

  /** Runs the scheduler may advance: higher priority first, then age; leases held elsewhere are skipped. */
  async runnable(now: number, limit: number, exclude: string[]): Promise<string[]> {
    const rows = await this.db.query<{ id: string }>(RUNNABLE_SQL, [now, limit + exclude.length])
    return rows
      .map((r) => r.id)
      .filter((id) => !exclude.includes(id))
      .slice(0, limit)
  }

  /**
   * Takes (or renews) the run's lease; undefined when another owner holds a live one. Two statements tell a
   * lapsed lease of another owner (`taken-over`) from a free one without reading the row first: the second runs
   * only when the first changed nothing, and together they take exactly the rows of
   * `lease_until < now OR lease_owner = owner`.
   */
  async claim(id: string, owner: string, now: number, until: number): Promise<LeaseClaim | undefined> {
    const free = await this.db.run(
      'UPDATE runs SET lease_owner = $2, lease_until = $4 WHERE id = $1 AND (lease_owner = $2 OR (lease_owner IS NULL AND lease_until < $3))',
      [id, owner, now, until],
    )
    if (free === 1) return 'claimed'
    const lapsed = await this.db.run(
      'UPDATE runs SET lease_owner = $2, lease_until = $4 WHERE id = $1 AND lease_owner <> $2 AND lease_until < $3',
      [id, owner, now, until],
    )
    return lapsed === 1 ? 'taken-over' : undefined
  }

  async release(id: string, owner: string): Promise<void> {
    await this.db.run(
      'UPDATE runs SET lease_owner = NULL, lease_until = 0 WHERE id = $1 AND lease_owner = $2',
      [id, owner],
    )
  }

  async appendFrame(runId: string, f: FrameRecord): Promise<void> {
    await this.db.run(
      `INSERT INTO run_frames (run_id, seq, ts, step_id, kind, tool, tool_id, policy, latency_ms, result, detail)
       VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11)`,
      [
        runId,
        f.seq,
        f.ts,
        f.stepId,
        f.kind,
        f.tool,
        f.toolId,
        f.policy,
        f.latencyMs,
        f.result,
        f.detail === null ? null : toJson(f.detail),
      ],
    )
  }

  async frames(runId: string, afterSeq: number, limit: number): Promise<Slice<FrameRecord>> {
    const rows = await this.db.query(
      'SELECT * FROM run_frames WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3',
      [runId, afterSeq, lookAheadLimit(limit)],
    )
    return toSlice(rows.map(toFrame), limit)
  }

  async followTask(runId: string, status: RunStatus, outcome: Outcome | null, at: number): Promise<void> {
    await this.db.run('UPDATE tasks SET status = $2, result = $3, updated_at = $4 WHERE run_id = $1', [
      runId,
      status,
      outcome === null ? null : toJson(outcome),
      at,
    ])
  }
}
