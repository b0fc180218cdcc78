import type { AgentRepository } from '../agents/ports.js'
import type { Clock } from '../clock.js'
import { ApiError, notFound, policyDenied } from '../errors.js'
import { newId } from '../ids.js'
import type { Slice } from '../pagination.js'
import { findEnvelope } from '../policy/envelopes.js'
import type { ToolRepository } from '../tools/ports.js'
import type { ToolRecord } from '../tools/types.js'
import { planRun, wantedTools } from './planner.js'
import type { RunRepository, RunsPort, TaskRunRequest } from './ports.js'
import type { RunChange, RunRecorder } from './recorder.js'
import { isTerminal, transition } from './state-machine.js'
import type { FrameRecord, RunCaller, RunRecord, RunStatus } from './types.js'

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

/** Views of runs that cannot change: the embedded store's run cache hands out deeply frozen records. */
const frozenViews = new WeakMap<RunRecord, RunView>()

/**
 * A run with its plan counts. A frozen run's view is made once and frozen too, so a presenter can keep what it
 * derives from that view for as long as the run lives (src/surface/presenters.ts).
 */
export function viewOf(run: RunRecord): RunView {
  // Stryker disable next-line BooleanLiteral,ConditionalExpression: speed path (a frozen record never changes, and one that is not frozen is a fresh copy per read): a view made once or at every read gives the same counts
  if (!Object.isFrozen(run)) return { run, counts: countsOf(run) }
  let view = frozenViews.get(run)
  // Stryker disable next-line ConditionalExpression: speed path: making the frozen record's view again gives the same view
  if (!view) {
    view = Object.freeze({ run, counts: Object.freeze(countsOf(run)) })
    frozenViews.set(run, view)
  }
  return view
}

/** The view of a run that was found; 404 when none was. */
function viewOfFound(run: RunRecord | undefined): RunView {
  if (!run) throw notFound('Run')
  return viewOf(run)
}

function countsOf(run: RunRecord): PlanCounts {
  return {
    steps_total: run.plan.length,
    steps_completed: run.stepsCompleted,
    steps_pending: Math.max(0, run.plan.length - run.stepsCompleted),
    steps_escalated: run.stepsEscalated,
  }
}

export type ControlAction = 'pause' | 'resume' | 'cancel'

export interface TraceRead {
  /** The run's status when the frames were read. */
  status: RunStatus
  frames: FrameRecord[]
  /** More frames were already there past this page. */
  more: boolean
  /** The seq to read after next time; null when the run is terminal and every frame was read. */
  nextAfter: number | null
}

/** Runs: start, inspect, control, approve and read traces. Execution itself is the scheduler's. */
export class RunService implements RunsPort {
  constructor(
    private readonly repos: { agents: AgentRepository; tools: ToolRepository; runs: RunRepository },
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
    const agent = await this.repos.agents.get(workspaceId, agentId)
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
    const wanted = wantedTools(agent.capabilities, inputs)
    const active = new Map<string, ToolRecord>()
    for (const name of new Set(wanted.names)) {
      const tool = await this.repos.tools.activeByName(workspaceId, name)
      if (tool) active.set(name, tool)
    }
    const plan = planRun(wanted, active)
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
    const run = await this.repos.runs.insert({
      // Stryker disable next-line StringLiteral: run_id is opaque (§2 "run_id | string | Run identifier"): its prefix is no answer of the API
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
      // Stryker disable next-line ArrayDeclaration: equivalent, no plan step is named "Stryker was here" (steps are step_1 … step_n)
      approved: [],
      awaiting: [],
      results: [],
      outcome: null,
      frameCount: 0,
      stepsCompleted: 0,
      stepsEscalated: 0,
      createdAt: now,
      startedAt: null,
      finishedAt: null,
      updatedAt: now,
    })
    this.wake()
    return viewOf(run)
  }

  /** One promise layer over the repository's read (not `find`'s two async functions): the hottest read. */
  get(workspaceId: string, runId: string): Promise<RunView> {
    return this.repos.runs.get(workspaceId, runId).then(viewOfFound)
  }

  /**
   * `get`'s answer when the run is in memory (the embedded store's run cache), without a promise; undefined when
   * `get` must be asked (not cached, another workspace's, or a store other replicas write to). The cached GET by id
   * then costs no async layer (a promise and an await each) below its route.
   */
  // Stryker disable next-line BlockStatement: speed path: without it the route asks `get`, which answers the same run
  getNow(workspaceId: string, runId: string): RunView | undefined {
    // Stryker disable next-line OptionalChaining: equivalent, every run repository of the server has getNow
    const run = this.repos.runs.getNow?.(workspaceId, runId)
    return run && viewOf(run)
  }

  async find(workspaceId: string, runId: string): Promise<RunRecord> {
    const run = await this.repos.runs.get(workspaceId, runId)
    if (!run) throw notFound('Run')
    return run
  }

  async listByAgent(
    workspaceId: string,
    agentId: string,
    afterSeq: number,
    limit: number,
  ): Promise<Slice<RunView>> {
    const agent = await this.repos.agents.get(workspaceId, agentId)
    if (!agent) throw notFound('Agent')
    const { rows, more } = await this.repos.runs.listByAgent(workspaceId, agentId, afterSeq, limit)
    return { rows: rows.map((r) => viewOf(r)), more }
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
    // The scheduler drives a resumed run at once; after a pause or a cancel its pass finds nothing to start.
    this.wake()
    return viewOf(run)
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
      // Stryker disable next-line OptionalChaining: equivalent, the awaiting step is always a step of the run's plan
      const where = { stepId, tool: step?.tool ?? null, toolId: step?.tool_id ?? null }
      const detail = { decided_by: identity, queue: pending.queue, ...(comment ? { comment } : {}) }
      // Stryker disable next-line ArrowFunction,ConditionalExpression: equivalent, a run awaits one step at a time (the executor stops at the first escalated step), so dropping the decided one empties the list either way
      r.awaiting = r.awaiting.filter((a) => a.step_id !== stepId)
      if (decision === 'approve') {
        r.status = transition(r.status, 'approve')
        r.approved.push(stepId)
        c.frame({ kind: 'approval.granted', ...where, detail })
        c.event('run.resumed', { status: r.status, reason: 'approved', step_id: stepId })
        return
      }
      r.status = transition(r.status, 'reject')
      // Stryker disable next-line AssignmentOperator: equivalent, a rejected run is terminal and its nextStep is never read again nor shown
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
    // The scheduler drives an approved run on at once; after a rejection its pass finds nothing to start.
    this.wake()
    return viewOf(run)
  }

  /**
   * The trace's one read: frames after `afterSeq`, oldest first, and where the next read starts. A live run always
   * has a next read (more frames will come); a finished one has none once nothing follows. Paging and the SSE
   * stream both read through here, so both give the same frames in the same order.
   */
  async frames(workspaceId: string, runId: string, afterSeq: number, limit: number): Promise<TraceRead> {
    const run = await this.find(workspaceId, runId)
    const { rows, more } = await this.repos.runs.frames(runId, afterSeq, limit)
    const last = rows.at(-1)?.seq ?? afterSeq
    return {
      status: run.status,
      frames: rows,
      more,
      nextAfter: more || !isTerminal(run.status) ? last : null,
    }
  }

  onChange(listener: (runId: string) => void): () => void {
    return this.recorder.onChange(listener)
  }

  // --- RunsPort (agents and tasks call these) ---

  async terminateAgentRuns(workspaceId: string, agentId: string): Promise<void> {
    const ids = await this.repos.runs.activeIdsByAgent(workspaceId, agentId)
    for (const id of ids) {
      await this.recorder.change(id, (c) => {
        // Stryker disable next-line ConditionalExpression: the ids are of runs still active when read; only a run ending in the milliseconds before its change reaches this test, a race no request can time
        if (!isTerminal(c.run.status))
          applyControl(c, 'cancel', 'system', { code: 'agent_deleted', message: 'The agent was deleted' })
      })
    }
  }

  async startTaskRun(task: TaskRunRequest): Promise<{ runId: string; status: RunStatus }> {
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
      // Stryker disable next-line OptionalChaining: equivalent, an awaiting step is always a step of the run's plan
      tool: step?.tool ?? null,
      // Stryker disable next-line OptionalChaining: equivalent, an awaiting step is always a step of the run's plan
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
