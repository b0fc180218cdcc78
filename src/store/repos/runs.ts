import { fromJson, type Queryable, toJson } from '../db.js'

export type RunStatus =
  | 'queued'
  | 'running'
  | 'awaiting_approval'
  | 'paused'
  | 'succeeded'
  | 'failed'
  | 'cancelled'

export interface Envelope {
  name: string
  max_steps: number
  max_tool_calls: number
  /** Tool names the envelope allows; null allows every tool. */
  allowed_tools: string[] | null
  /** Ingest policy classes the envelope's runs may touch. */
  allowed_policy_classes: string[]
  /** Every tool call under this envelope waits for a human. */
  requires_approval: boolean
  escalation_queue: string
}

export interface PlanStep {
  step_id: string
  tool: string
  tool_id: string
}

export interface Awaiting {
  step_id: string
  queue: string
  reason: string
  requested_at: number
}

export interface StepResult {
  step_id: string
  tool: string
  tool_id: string
  result: string
}

export interface Outcome {
  status: 'succeeded' | 'failed' | 'cancelled'
  results: StepResult[]
  error: { code: string; message: string; detail?: Record<string, unknown> } | null
}

export interface RunCaller {
  keyId: string
  identity: string
  scopes: string[]
}

export interface RunRecord {
  seq: number
  id: string
  workspaceId: string
  agentId: string
  taskId: string | null
  status: RunStatus
  pausedFrom: RunStatus | null
  mode: 'live' | 'dry_run'
  traceLevel: 'summary' | 'detailed'
  inputs: Record<string, unknown>
  envelope: Envelope
  behavior: 'autonomous' | 'supervised' | 'hybrid'
  caller: RunCaller
  priority: number
  plan: PlanStep[]
  nextStep: number
  /** The step whose policy decision is recorded but whose call has not been (crash recovery). */
  inFlightStep: number | null
  toolCalls: number
  approved: string[]
  awaiting: Awaiting[]
  results: StepResult[]
  outcome: Outcome | null
  frameCount: number
  createdAt: number
  startedAt: number | null
  finishedAt: number | null
  updatedAt: number
}

export interface FrameRecord {
  seq: number
  ts: number
  stepId: string | null
  kind: string
  tool: string | null
  toolId: string | null
  policy: 'allow' | 'escalate' | 'deny' | null
  latencyMs: number | null
  result: string | null
  detail: Record<string, unknown> | null
}

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
    kind: String(r.kind),
    tool: strOrNull(r.tool),
    toolId: strOrNull(r.tool_id),
    policy: strOrNull(r.policy) as FrameRecord['policy'],
    latencyMs: numOrNull(r.latency_ms),
    result: strOrNull(r.result),
    detail: r.detail === null || r.detail === undefined ? null : fromJson(r.detail),
  }
}

export const NON_TERMINAL: RunStatus[] = ['queued', 'running', 'awaiting_approval', 'paused']

export class RunRepo {
  constructor(private readonly db: Queryable) {}

  async insert(r: Omit<RunRecord, 'seq'>): Promise<RunRecord> {
    const row = await this.db.one(
      `INSERT INTO runs (id, workspace_id, agent_id, task_id, status, paused_from, mode, trace_level, inputs, envelope,
         behavior, caller, priority, plan, next_step, in_flight_step, tool_calls, approved, awaiting, results, outcome,
         frame_count, lease_owner, lease_until, created_at, started_at, finished_at, updated_at)
       VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,$22,NULL,0,$23,$24,$25,$26)
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
      ],
    )
    return toRun(row ?? {})
  }

  /** Writes every mutable field back; callers hold the row inside a transaction. */
  async save(r: RunRecord): Promise<void> {
    await this.db.run(
      `UPDATE runs SET status=$2, paused_from=$3, next_step=$4, in_flight_step=$5, tool_calls=$6, approved=$7,
         awaiting=$8, results=$9, outcome=$10, frame_count=$11, started_at=$12, finished_at=$13, updated_at=$14
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
      ],
    )
  }

  async get(workspaceId: string, id: string): Promise<RunRecord | undefined> {
    const row = await this.db.one('SELECT * FROM runs WHERE id = $1 AND workspace_id = $2', [id, workspaceId])
    return row ? toRun(row) : undefined
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
  ): Promise<RunRecord[]> {
    const rows = await this.db.query(
      'SELECT * FROM runs WHERE workspace_id = $1 AND agent_id = $2 AND seq > $3 ORDER BY seq LIMIT $4',
      [workspaceId, agentId, afterSeq, limit],
    )
    return rows.map(toRun)
  }

  async activeIdsByAgent(workspaceId: string, agentId: string): Promise<string[]> {
    const rows = await this.db.query<{ id: string }>(
      `SELECT id FROM runs WHERE workspace_id = $1 AND agent_id = $2
         AND status IN ('queued', 'running', 'awaiting_approval', 'paused') ORDER BY seq`,
      [workspaceId, agentId],
    )
    return rows.map((r) => r.id)
  }

  async countActive(workspaceId: string, agentId: string): Promise<number> {
    const row = await this.db.one<{ n: number | string }>(
      `SELECT COUNT(*) AS n FROM runs WHERE workspace_id = $1 AND agent_id = $2
         AND status IN ('queued', 'running', 'awaiting_approval', 'paused')`,
      [workspaceId, agentId],
    )
    return Number(row?.n ?? 0)
  }

  /** Runs the scheduler may advance: higher priority first, then age; leases held elsewhere are skipped. */
  /** countActive for many agents in one query; agents without active runs are absent from the map. */
  async countActiveMany(workspaceId: string, agentIds: readonly string[]): Promise<Map<string, number>> {
    if (agentIds.length === 0) return new Map()
    const marks = agentIds.map((_, i) => `$${i + 2}`).join(', ')
    const rows = await this.db.query<{ agent_id: string; n: number | string }>(
      `SELECT agent_id, COUNT(*) AS n FROM runs WHERE workspace_id = $1 AND agent_id IN (${marks})
         AND status IN ('queued', 'running', 'awaiting_approval', 'paused') GROUP BY agent_id`,
      [workspaceId, ...agentIds],
    )
    return new Map(rows.map((r) => [r.agent_id, Number(r.n)]))
  }

  async runnable(now: number, limit: number, exclude: string[]): Promise<string[]> {
    const rows = await this.db.query<{ id: string }>(
      `SELECT id FROM runs WHERE status IN ('queued', 'running') AND lease_until < $1
       ORDER BY priority DESC, seq ASC LIMIT $2`,
      [now, limit + exclude.length],
    )
    return rows
      .map((r) => r.id)
      .filter((id) => !exclude.includes(id))
      .slice(0, limit)
  }

  /** Takes (or renews) the run's lease; false when another owner holds a live one. */
  async claim(id: string, owner: string, now: number, until: number): Promise<boolean> {
    const changed = await this.db.run(
      'UPDATE runs SET lease_owner = $2, lease_until = $4 WHERE id = $1 AND (lease_until < $3 OR lease_owner = $2)',
      [id, owner, now, until],
    )
    return changed === 1
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

  async frames(runId: string, afterSeq: number, limit: number): Promise<FrameRecord[]> {
    const rows = await this.db.query(
      'SELECT * FROM run_frames WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3',
      [runId, afterSeq, limit],
    )
    return rows.map(toFrame)
  }

  /** Plan counts straight from the trace, so they can never disagree with it. */
  async frameCounts(runId: string): Promise<Record<string, number>> {
    const rows = await this.db.query<{ kind: string; n: number | string }>(
      'SELECT kind, COUNT(*) AS n FROM run_frames WHERE run_id = $1 GROUP BY kind',
      [runId],
    )
    return Object.fromEntries(rows.map((r) => [r.kind, Number(r.n)]))
  }

  /** frameCounts for many runs in one query (a page of runs costs one query, not one per run). */
  async frameCountsMany(runIds: readonly string[]): Promise<Map<string, Record<string, number>>> {
    const counts = new Map<string, Record<string, number>>(runIds.map((id) => [id, {}]))
    if (runIds.length === 0) return counts
    const marks = runIds.map((_, i) => `$${i + 1}`).join(', ')
    const rows = await this.db.query<{ run_id: string; kind: string; n: number | string }>(
      `SELECT run_id, kind, COUNT(*) AS n FROM run_frames WHERE run_id IN (${marks}) GROUP BY run_id, kind`,
      [...runIds],
    )
    for (const r of rows) {
      const forRun = counts.get(r.run_id)
      if (forRun) forRun[r.kind] = Number(r.n)
    }
    return counts
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
