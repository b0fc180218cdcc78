import type { LeaseClaim } from '../../domain/leases.js'
import type { Slice } from '../../domain/pagination.js'
import type { RunRepository } from '../../domain/runs/ports.js'
import { isTerminal } from '../../domain/runs/state-machine.js'
import type { FrameKind, FrameRecord, Outcome, RunRecord, RunStatus } from '../../domain/runs/types.js'
import { commitTailOf, type Dialect, fromJson, type Queryable, type SqlValue, toJson } from '../db.js'
import { childPage, lookAheadLimit, toSlice } from '../paging.js'
import type { RunKey } from './run-versions.js'

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

/** The claimable runs in claim order: exactly the predicate and order of the partial index `runs_claim`. */
const claimable = (columns: string, now: string, limit: string) =>
  `SELECT ${columns} FROM runs WHERE status IN ('queued', 'running') AND lease_until < ${now}
         ORDER BY priority DESC, seq ASC LIMIT ${limit}`

/** SQLite's look before it claims: the same walk, with each run's lease owner as it is before the claim. */
const CLAIMABLE_WITH_OWNERS = claimable('id, lease_owner', '$1', '$2')

/**
 * The scheduler's claim: the next runnable runs and their leases in one statement. The inner SELECT's predicate
 * and order are exactly those of the partial index `runs_claim` (migration 009): both stores walk that index from
 * its first entry and stop after the LIMIT, so a claim costs the same whatever the backlog
 * (test/store/hot-query-plans.test.ts checks both plans). Rows whose lease is live elsewhere are skipped inside the
 * index (lease_until is one of its columns).
 *
 * On PostgreSQL `FOR UPDATE SKIP LOCKED` makes replicas that claim at once take different runs instead of queueing
 * on each other's row locks; a row another replica claimed after this statement's snapshot is locked, re-read and
 * re-checked (`lease_until < now` then fails), so it is skipped: each run is claimed by one replica. The locked rows'
 * lease owners as they were come back with the claim (`was_owner`), so a lapsed lease of another owner is told from a
 * free one. On SQLite the statement runs under the one write lock (its RETURNING cannot name another table; the
 * owners come from the look before). Change the text and the index together.
 */
export function claimNextSql(dialect: Dialect): string {
  if (dialect === 'postgres') {
    return `UPDATE runs SET lease_owner = $1, lease_until = $2
       FROM (${claimable('id, lease_owner', '$3', '$4')} FOR UPDATE SKIP LOCKED) AS was
       WHERE runs.id = was.id
       RETURNING runs.id, runs.priority, runs.seq, was.lease_owner AS was_owner`
  }
  return `UPDATE runs SET lease_owner = $1, lease_until = $2
       WHERE id IN (${claimable('id', '$3', '$4')})
       RETURNING id, priority, seq`
}

/** The live statuses, as the predicate of the partial index runs_agent_active (migration 010) spells them. */
const LIVE = `status IN ('queued', 'running', 'awaiting_approval', 'paused')`

const SAVE_COLUMNS = `status=$2, paused_from=$3, next_step=$4, in_flight_step=$5, tool_calls=$6, approved=$7,
         awaiting=$8, results=$9, outcome=$10, frame_count=$11, started_at=$12, finished_at=$13, updated_at=$14,
         steps_completed=$15, steps_escalated=$16`
const SAVE_SQL = `UPDATE runs SET ${SAVE_COLUMNS} WHERE id=$1`
/** A finished run leaves the claim index; its lease goes in the same write, so the scheduler sends no release. */
const SAVE_FINISHED_SQL = `UPDATE runs SET ${SAVE_COLUMNS}, lease_owner = NULL, lease_until = 0 WHERE id=$1`

/** The row versions of many runs at once (versionsOf): `i` is the key's position, from 1. */
const VERSIONS_OF = `SELECT q.i, r.xmin::text AS row_version
  FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS q(id, workspace_id, i)
  JOIN runs r ON r.id = q.id AND r.workspace_id = q.workspace_id`

export class RunRepo implements RunRepository {
  constructor(
    private readonly db: Queryable,
    private readonly dialect: Dialect,
    /** Where a read by id goes outside a transaction: the store's pipeline on PostgreSQL (src/store/db.ts). */
    private readonly reads: Queryable = db,
    /** Whether save, appendFrame and followTask may be held back to the transaction's COMMIT (writingAtCommit). */
    private readonly writeBehind = false,
  ) {}

  /** The same repository inside a transaction that spans several repositories. */
  in(tx: Queryable): RunRepo {
    return new RunRepo(tx, this.dialect)
  }

  /**
   * The repository in a transaction that reads none of the rows it writes once it has written them (the recorder's
   * own change). Where the driver can hold statements back (PostgreSQL's commit tail, src/store/db.ts), the run's
   * update, its frames and its task's update then travel in one write with the COMMIT instead of a round trip
   * each; a failure among them rolls the whole transaction back, as it would have at its own turn.
   */
  writingAtCommit(tx: Queryable): RunRepo {
    return new RunRepo(tx, this.dialect, tx, true)
  }

  /** A write whose result no caller reads: held back to the COMMIT when this repository may, else sent now. */
  private async write(sql: string, params: readonly SqlValue[]): Promise<void> {
    const tail = this.writeBehind ? commitTailOf(this.db) : undefined
    if (tail) tail.atCommit(sql, params)
    else await this.db.run(sql, params)
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

  /**
   * Writes every mutable field back; callers hold the row inside a transaction. A run that reaches a terminal
   * status gives up its lease in the same statement.
   */
  async save(r: RunRecord): Promise<void> {
    await this.write(isTerminal(r.status) ? SAVE_FINISHED_SQL : SAVE_SQL, [
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
    ])
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

  /**
   * PostgreSQL only: the current row version (see getVersioned) of each run asked for, in ONE statement, by the
   * position of its key; none where the key's workspace has no such run (both columns are matched, so another
   * workspace's run is never confirmed). Each key is found through the id index (test/store/hot-query-plans.test.ts).
   */
  async versionsOf(keys: readonly RunKey[]): Promise<Map<number, string>> {
    const rows = await this.reads.query<{ i: number; row_version: string }>(VERSIONS_OF, [
      keys.map((k) => k.id),
      keys.map((k) => k.workspaceId),
    ])
    const versions = new Map<number, string>()
    for (const row of rows) versions.set(Number(row.i) - 1, String(row.row_version))
    return versions
  }

  /** Reads the row for update: on PostgreSQL the row lock serialises controls against the executor. */
  async lock(id: string): Promise<RunRecord | undefined> {
    const row = await this.db.one(
      `SELECT * FROM runs WHERE id = $1${this.dialect === 'postgres' ? ' FOR UPDATE' : ''}`,
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

  /** Through the partial index runs_agent_active (migration 010): its predicate is LIVE, word for word. */
  async activeIdsByAgent(workspaceId: string, agentId: string): Promise<string[]> {
    const rows = await this.db.query<{ id: string }>(
      `SELECT id FROM runs WHERE workspace_id = $1 AND agent_id = $2
         AND ${LIVE} ORDER BY seq`,
      [workspaceId, agentId],
    )
    return rows.map((r) => r.id)
  }

  async countActiveByAgents(workspaceId: string, agentIds: readonly string[]): Promise<Map<string, number>> {
    if (agentIds.length === 0) return new Map()
    const placeholders = agentIds.map((_, i) => `$${i + 2}`).join(', ')
    const rows = await this.db.query<{ agent_id: string; n: number | string }>(
      `SELECT agent_id, COUNT(*) AS n FROM runs WHERE workspace_id = $1 AND agent_id IN (${placeholders})
         AND ${LIVE} GROUP BY agent_id`,
      [workspaceId, ...agentIds],
    )
    return new Map(rows.map((r) => [r.agent_id, Number(r.n)]))
  }

  /**
   * Claims up to `limit` runnable runs for `owner` (higher priority first, then age; leases live elsewhere are
   * skipped) and answers their ids in claim order. A run `owner` already holds may come back: its lease is renewed.
   */
  async claimNext(
    owner: string,
    now: number,
    until: number,
    limit: number,
  ): Promise<{ ids: string[]; takenOver: number }> {
    // On SQLite any UPDATE opens a write transaction, even one that changes nothing; an idle scheduler polls, so it
    // looks first (a read, in process) and takes the write lock only when there is something to claim. This server
    // is the only writer of runs there, and one claim runs at a time, so the look sees the owners the claim replaces.
    let ownersBefore: Map<string, string | null> | undefined
    if (this.dialect === 'sqlite') {
      const looked = await this.db.query<{ id: string; lease_owner: string | null }>(CLAIMABLE_WITH_OWNERS, [
        now,
        limit,
      ])
      if (looked.length === 0) return { ids: [], takenOver: 0 }
      ownersBefore = new Map(looked.map((r) => [r.id, r.lease_owner]))
    }
    const rows = await this.db.query<{
      id: string
      priority: number | string
      seq: number | string
      was_owner?: string | null
    }>(claimNextSql(this.dialect), [owner, until, now, limit])
    // RETURNING answers in no particular order.
    rows.sort((a, b) => Number(b.priority) - Number(a.priority) || Number(a.seq) - Number(b.seq))
    let takenOver = 0
    for (const r of rows) {
      const was = ownersBefore ? ownersBefore.get(r.id) : r.was_owner
      if (was !== null && was !== undefined && was !== owner) takenOver++
    }
    return { ids: rows.map((r) => r.id), takenOver }
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
    await this.write(
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

  frames(runId: string, afterSeq: number, limit: number): Promise<Slice<FrameRecord>> {
    return childPage(this.db, 'run_frames', 'run_id', runId, afterSeq, limit, toFrame)
  }

  /**
   * By the task's id, attaching the run too: the run can change (even finish) before the task service attached it
   * (src/domain/tasks/service.ts), and a task found by `run_id` would then never follow its run.
   */
  async followTask(
    taskId: string,
    runId: string,
    status: RunStatus,
    outcome: Outcome | null,
    at: number,
  ): Promise<void> {
    await this.write(
      'UPDATE tasks SET run_id = $2, status = $3, result = $4, updated_at = $5 WHERE id = $1',
      [taskId, runId, status, outcome === null ? null : toJson(outcome), at],
    )
  }
}
