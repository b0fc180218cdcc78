import { performance } from 'node:perf_hooks'
import type { Outcome, RunRecord } from '../../store/repos/runs.js'
import { ToolRepo } from '../../store/repos/tools.js'
import { newId } from '../ids.js'
import { decide } from '../policy/gate.js'
import { callTool, type ToolOutcome } from '../tools/providers.js'
import type { RunChange, RunRecorder } from './recorder.js'
import { isTerminal, transition } from './state-machine.js'

export type Progress = 'continue' | 'idle'

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
    private readonly allowPrivate: () => boolean,
  ) {}

  async advance(runId: string): Promise<Progress> {
    const { run, value: pending } = await this.recorder.change(runId, async (c) => {
      const { run } = c
      if (run.status === 'queued') {
        run.status = transition(run.status, 'start')
        run.startedAt ??= c.now
        c.frame({ kind: 'run.started', detail: { plan: run.plan, envelope: run.envelope.name } })
        c.event('run.started', { status: run.status, plan: run.plan.map((s) => s.step_id) })
        return 'continue' as const
      }
      if (run.status !== 'running') return 'idle' as const
      const step = run.plan[run.nextStep]
      if (!step) {
        finish(c, 'complete', null)
        return 'idle' as const
      }
      const tool = await new ToolRepo(c.tx).get(run.workspaceId, step.tool_id)
      if (run.inFlightStep === run.nextStep && tool) return { step, tool }
      if (!tool || tool.status === 'retired') {
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
        run.nextStep += 1
        finish(c, 'fail', error)
        return 'idle' as const
      }
      const decision = run.approved.includes(step.step_id) ? ({ kind: 'allow' } as const) : decide(run, tool)
      const where = { stepId: step.step_id, tool: tool.name, toolId: tool.id }
      if (decision.kind === 'deny') {
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
        run.nextStep += 1
        finish(c, 'fail', { code: 'policy_denied', message: decision.message, detail: decision.detail })
        return 'idle' as const
      }
      if (decision.kind === 'escalate') {
        run.status = transition(run.status, 'escalate')
        run.awaiting.push({
          step_id: step.step_id,
          queue: decision.queue,
          reason: decision.reason,
          requested_at: c.now,
        })
        c.frame({
          kind: 'policy.decision',
          ...where,
          policy: 'escalate',
          detail: { queue: decision.queue, reason: decision.reason },
        })
        c.frame({
          kind: 'approval.requested',
          ...where,
          detail: { queue: decision.queue, reason: decision.reason },
        })
        c.event('run.awaiting_approval', {
          step_id: step.step_id,
          queue: decision.queue,
          reason: decision.reason,
          payload_preview: payloadPreview(tool.name, stepInput(run)),
        })
        return 'idle' as const
      }
      c.frame({
        kind: 'policy.decision',
        ...where,
        policy: 'allow',
        detail: run.approved.includes(step.step_id) ? { approved: true } : null,
      })
      run.inFlightStep = run.nextStep
      return { step, tool }
    })
    if (pending === 'continue' || pending === 'idle') return pending

    const { step, tool } = pending
    const started = performance.now()
    const outcome: ToolOutcome =
      run.mode === 'dry_run'
        ? { ok: true, resultId: `dry_run:${step.step_id}`, output: null }
        : await callTool({
            runId,
            stepId: step.step_id,
            tool,
            input: stepInput(run),
            newResultId: () => newId('res'),
            allowPrivate: this.allowPrivate(),
          })
    const latencyMs = Math.round(performance.now() - started)

    const { value } = await this.recorder.change(runId, (c) => {
      const r = c.run
      // A run cancelled during the call keeps the trace it ended with; the late answer is dropped.
      if (isTerminal(r.status) || r.inFlightStep !== r.nextStep) return 'idle' as const
      const where = { stepId: step.step_id, tool: tool.name, toolId: tool.id, latencyMs }
      r.inFlightStep = null
      r.nextStep += 1
      r.toolCalls += 1
      if (outcome.ok) {
        c.frame({
          kind: 'tool.call',
          ...where,
          result: outcome.resultId,
          detail:
            r.traceLevel === 'detailed' ? { input: stepInput(r), output: outcome.output as unknown } : null,
        })
        r.results.push({ step_id: step.step_id, tool: tool.name, tool_id: tool.id, result: outcome.resultId })
        return r.status === 'running' ? ('continue' as const) : ('idle' as const)
      }
      c.frame({ kind: 'step.failed', ...where, detail: { reason: outcome.reason, ...outcome.detail } })
      finish(c, 'fail', {
        code: 'tool_failed',
        message: `Step ${step.step_id} (${tool.name}) failed: ${outcome.reason}`,
        detail: outcome.detail,
      })
      return 'idle' as const
    })
    return value
  }
}
