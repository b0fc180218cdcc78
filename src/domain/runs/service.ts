import type { Db } from '../../store/db.js'
import { AgentRepo } from '../../store/repos/agents.js'
import {
  type FrameRecord,
  type RunCaller,
  type RunRecord,
  RunRepo,
  type RunStatus,
} from '../../store/repos/runs.js'
import { type ToolRecord, ToolRepo } from '../../store/repos/tools.js'
import type { Clock } from '../clock.js'
import { ApiError, notFound, policyDenied } from '../errors.js'
import { newId } from '../ids.js'
import { findEnvelope } from '../policy/envelopes.js'
import type { RunsPort, TaskRunRequest } from '../ports.js'
import { planRun } from './planner.js'
import type { RunChange, RunRecorder } from './recorder.js'
import { isTerminal, transition } from './state-machine.js'

export interface StartRunInput {
  inputs?: Record<string, unknown> | undefined
  mode?: 'live' | 'dry_run' | undefined
  trace_level?: 'summary' | 'detailed' | undefined
  policy_envelope?: string | undefined
}

export interface PlanCounts {
  steps_total: number
  steps_completed: number
  steps_pending: number
  steps_escalated: number
}

export interface RunView {
  run: RunRecord
  counts: PlanCounts
}

export type ControlAction = 'pause' | 'resume' | 'cancel'

/** Runs: start, inspect, control, approve and read traces. Execution itself is the scheduler's. */
export class RunService implements RunsPort {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly recorder: RunRecorder,
    private readonly wake: () => void,
  ) {}

  async start(
    workspaceId: string,
    agentId: string,
    input: StartRunInput,
    caller: RunCaller,
    taskId: string | null = null,
    priority = 3,
  ): Promise<RunView> {
    const agent = await new AgentRepo(this.db).get(workspaceId, agentId)
    if (!agent) throw notFound('Agent')
    const envelopeName = input.policy_envelope ?? agent.policyEnvelope
    const envelope = findEnvelope(envelopeName)
    if (!envelope) {
      throw new ApiError('invalid_request', `Unknown policy envelope "${envelopeName}"`, {
        issues: [{ path: 'policy_envelope', message: 'unknown envelope' }],
        fields: ['policy_envelope'],
      })
    }
    const inputs = input.inputs ?? {}
    const tools = new ToolRepo(this.db)
    const wanted = Array.isArray(inputs.plan)
      ? inputs.plan.filter((n): n is string => typeof n === 'string')
      : agent.capabilities
    const active = new Map<string, ToolRecord>()
    for (const name of new Set(wanted)) {
      const tool = await tools.activeByName(workspaceId, name)
      if (tool) active.set(name, tool)
    }
    const plan = planRun(agent.capabilities, inputs, active)
    if (plan.length > envelope.max_steps) {
      throw policyDenied(`Envelope ${envelope.name} allows ${envelope.max_steps} steps per run`, {
        envelope: envelope.name,
        violation: 'max_steps',
        observed: plan.length,
        limit: envelope.max_steps,
        escalation_queue: envelope.escalation_queue,
      })
    }
    const now = this.clock.now()
    const run = await new RunRepo(this.db).insert({
      id: newId('run', now),
      workspaceId,
      agentId,
      taskId,
      status: 'queued',
      pausedFrom: null,
      mode: input.mode ?? 'live',
      traceLevel: input.trace_level ?? 'summary',
      inputs,
      envelope,
      behavior: agent.behavior,
      caller,
      priority,
      plan,
      nextStep: 0,
      inFlightStep: null,
      toolCalls: 0,
      approved: [],
      awaiting: [],
      results: [],
      outcome: null,
      frameCount: 0,
      createdAt: now,
      startedAt: null,
      finishedAt: null,
      updatedAt: now,
    })
    this.wake()
    return this.view(run)
  }

  async get(workspaceId: string, runId: string): Promise<RunView> {
    return this.view(await this.find(workspaceId, runId))
  }

  async find(workspaceId: string, runId: string): Promise<RunRecord> {
    const run = await new RunRepo(this.db).get(workspaceId, runId)
    if (!run) throw notFound('Run')
    return run
  }

  async listByAgent(
    workspaceId: string,
    agentId: string,
    afterSeq: number,
    limit: number,
  ): Promise<RunView[]> {
    const agent = await new AgentRepo(this.db).get(workspaceId, agentId)
    if (!agent) throw notFound('Agent')
    const repo = new RunRepo(this.db)
    const runs = await repo.listByAgent(workspaceId, agentId, afterSeq, limit)
    const counts = await repo.frameCountsMany(runs.map((r) => r.id))
    return runs.map((r) => viewOf(r, counts.get(r.id) ?? {}))
  }

  /** Pause, resume or cancel; 409 invalid_state (nothing changes) when the table has no such move. */
  async control(
    workspaceId: string,
    runId: string,
    action: ControlAction,
    identity: string,
  ): Promise<RunView> {
    await this.find(workspaceId, runId)
    const { run } = await this.recorder.change(runId, (c) => applyControl(c, action, identity))
    if (action === 'resume') this.wake()
    return this.view(run)
  }

  async decide(
    workspaceId: string,
    runId: string,
    stepId: string,
    decision: 'approve' | 'reject',
    identity: string,
    comment?: string,
  ): Promise<RunView> {
    await this.find(workspaceId, runId)
    const { run } = await this.recorder.change(runId, (c) => {
      const r = c.run
      const pending = r.awaiting.find((a) => a.step_id === stepId)
      if (r.status !== 'awaiting_approval' || !pending) {
        throw new ApiError('invalid_state', `Step ${stepId} is not awaiting approval`, {
          status: r.status,
          action: decision,
          step_id: stepId,
          awaiting: r.awaiting.map((a) => a.step_id),
        })
      }
      const step = r.plan.find((s) => s.step_id === stepId)
      const where = { stepId, tool: step?.tool ?? null, toolId: step?.tool_id ?? null }
      const detail = { decided_by: identity, queue: pending.queue, ...(comment ? { comment } : {}) }
      r.awaiting = r.awaiting.filter((a) => a.step_id !== stepId)
      if (decision === 'approve') {
        r.status = transition(r.status, 'approve')
        r.approved.push(stepId)
        c.frame({ kind: 'approval.granted', ...where, detail })
        c.event('run.resumed', { status: r.status, reason: 'approved', step_id: stepId })
        return
      }
      r.status = transition(r.status, 'reject')
      r.nextStep += 1
      r.finishedAt = c.now
      const error = {
        code: 'approval_rejected',
        message: `Step ${stepId} was rejected by ${identity}`,
        detail: { step_id: stepId, queue: pending.queue },
      }
      r.outcome = { status: 'failed', results: r.results, error }
      c.frame({ kind: 'approval.rejected', ...where, detail })
      c.frame({ kind: 'run.failed', detail: { error } })
      c.event('run.failed', { status: r.status, outcome: r.outcome })
    })
    if (decision === 'approve') this.wake()
    return this.view(run)
  }

  async frames(
    workspaceId: string,
    runId: string,
    afterSeq: number,
    limit: number,
  ): Promise<{ run: RunRecord; frames: FrameRecord[] }> {
    const run = await this.find(workspaceId, runId)
    const frames = await new RunRepo(this.db).frames(runId, afterSeq, limit)
    return { run, frames }
  }

  onChange(listener: (runId: string) => void): () => void {
    return this.recorder.onChange(listener)
  }

  // --- RunsPort (agents and tasks call these) ---

  async terminateAgentRuns(workspaceId: string, agentId: string): Promise<void> {
    const ids = await new RunRepo(this.db).activeIdsByAgent(workspaceId, agentId)
    for (const id of ids) {
      await this.recorder.change(id, (c) => {
        if (!isTerminal(c.run.status))
          applyControl(c, 'cancel', 'system', { code: 'agent_deleted', message: 'The agent was deleted' })
      })
    }
  }

  countActiveRuns(workspaceId: string, agentId: string): Promise<number> {
    return new RunRepo(this.db).countActive(workspaceId, agentId)
  }

  countActiveRunsMany(workspaceId: string, agentIds: readonly string[]): Promise<Map<string, number>> {
    return new RunRepo(this.db).countActiveMany(workspaceId, agentIds)
  }

  async startTaskRun(task: TaskRunRequest): Promise<{ runId: string; status: string }> {
    const inputs: Record<string, unknown> = { task: task.description }
    if (task.dataSource !== null) inputs.data_source = task.dataSource
    const { run } = await this.start(
      task.workspaceId,
      task.agentId,
      { inputs },
      task.caller,
      task.taskId,
      task.priority,
    )
    return { runId: run.id, status: run.status }
  }

  private async view(run: RunRecord): Promise<RunView> {
    return viewOf(run, await new RunRepo(this.db).frameCounts(run.id))
  }
}

/** Plan counts from the run's frame counts by kind. */
function viewOf(run: RunRecord, counts: Record<string, number>): RunView {
  const completed = (counts['tool.call'] ?? 0) + (counts['step.failed'] ?? 0)
  return {
    run,
    counts: {
      steps_total: run.plan.length,
      steps_completed: completed,
      steps_pending: Math.max(0, run.plan.length - completed),
      steps_escalated: counts['approval.requested'] ?? 0,
    },
  }
}

/** Pause, resume and cancel, with their frames and events; cancel flushes pending approvals. */
function applyControl(
  c: RunChange,
  action: ControlAction,
  identity: string,
  error: { code: string; message: string } | null = null,
): void {
  const r = c.run
  const from: RunStatus = r.status
  r.status = transition(r.status, action, r.pausedFrom)
  const detail = { by: identity, from }
  if (action === 'pause') {
    r.pausedFrom = from
    c.frame({ kind: 'control.paused', detail })
    c.event('run.paused', { status: r.status, paused_from: from })
    return
  }
  if (action === 'resume') {
    r.pausedFrom = null
    c.frame({ kind: 'control.resumed', detail: { ...detail, to: r.status } })
    c.event('run.resumed', { status: r.status, reason: 'resumed' })
    return
  }
  for (const a of r.awaiting) {
    const step = r.plan.find((s) => s.step_id === a.step_id)
    c.frame({
      kind: 'approval.flushed',
      stepId: a.step_id,
      tool: step?.tool ?? null,
      toolId: step?.tool_id ?? null,
      detail: { queue: a.queue },
    })
  }
  const flushed = r.awaiting.map((a) => a.step_id)
  r.awaiting = []
  r.pausedFrom = null
  r.inFlightStep = null
  r.finishedAt = c.now
  r.outcome = { status: 'cancelled', results: r.results, error }
  c.frame({
    kind: 'control.cancelled',
    detail: { ...detail, flushed_approvals: flushed, ...(error ? { reason: error.code } : {}) },
  })
  c.event('run.cancelled', { status: r.status, outcome: r.outcome, flushed_approvals: flushed })
}
