/** Domain records in the contract's JSON shapes (snake_case, RFC 3339 timestamps). */
import type { AgentView } from '../domain/agents/service.js'
import { toRfc3339, toRfc3339OrNull } from '../domain/clock.js'
import { encodeCursor } from '../domain/pagination.js'
import type { RunView } from '../domain/runs/service.js'
import type { FrameRecord } from '../store/repos/runs.js'
import type { TaskRecord } from '../store/repos/tasks.js'
import type { ToolRecord } from '../store/repos/tools.js'

export function presentAgent(a: AgentView) {
  return {
    agent_id: a.id,
    name: a.name,
    behavior: a.behavior,
    capabilities: a.capabilities,
    policy_envelope: a.policyEnvelope,
    status: a.status,
    active_runs: a.activeRuns,
    created_at: toRfc3339(a.createdAt),
    updated_at: toRfc3339(a.updatedAt),
  }
}

export function presentTask(t: TaskRecord) {
  return {
    task_id: t.id,
    agent_id: t.agentId,
    description: t.description,
    data_source: t.dataSource,
    priority: t.priority,
    status: t.status as
      | 'queued'
      | 'running'
      | 'awaiting_approval'
      | 'paused'
      | 'succeeded'
      | 'failed'
      | 'cancelled',
    run_id: t.runId,
    // biome-ignore lint/suspicious/noExplicitAny: the run outcome is stored as JSON and checked against the contract in tests
    result: t.result as any,
    created_at: toRfc3339(t.createdAt),
    updated_at: toRfc3339(t.updatedAt),
  }
}

export function presentTool(t: ToolRecord) {
  return {
    tool_id: t.id,
    name: t.name,
    provider: t.provider,
    input_schema: t.inputSchema,
    output_schema: t.outputSchema,
    policy_binding: t.policyBinding,
    idempotent: t.idempotent,
    config: t.config,
    status: t.status,
    created_at: toRfc3339(t.createdAt),
    retired_at: toRfc3339OrNull(t.retiredAt),
  }
}

export function presentRun(view: RunView) {
  const { run, counts } = view
  return {
    run_id: run.id,
    agent_id: run.agentId,
    task_id: run.taskId,
    status: run.status,
    mode: run.mode,
    trace_level: run.traceLevel,
    inputs: run.inputs,
    policy_envelope: run.envelope.name,
    priority: run.priority,
    trace_url: `/v1/runs/${run.id}/trace`,
    created_at: toRfc3339(run.createdAt),
    started_at: toRfc3339OrNull(run.startedAt),
    finished_at: toRfc3339OrNull(run.finishedAt),
    plan: counts,
    awaiting: run.awaiting.map((a) => ({
      step_id: a.step_id,
      queue: a.queue,
      reason: a.reason,
      requested_at: toRfc3339(a.requested_at),
    })),
    trace_cursor: run.frameCount > 0 ? encodeCursor(TRACE_LIST, run.frameCount) : null,
    outcome: run.outcome,
  }
}

/** Trace cursors belong to their own list, so an agents or tools cursor is refused there. */
export const TRACE_LIST = 'trace'

export function presentFrame(f: FrameRecord) {
  return {
    seq: f.seq,
    ts: toRfc3339(f.ts),
    step_id: f.stepId,
    kind: f.kind as TraceFrameKind,
    tool: f.tool,
    tool_id: f.toolId,
    policy: f.policy,
    latency_ms: f.latencyMs,
    result: f.result,
    detail: f.detail,
  }
}

type TraceFrameKind =
  | 'run.started'
  | 'policy.decision'
  | 'tool.call'
  | 'step.failed'
  | 'approval.requested'
  | 'approval.granted'
  | 'approval.rejected'
  | 'approval.flushed'
  | 'control.paused'
  | 'control.resumed'
  | 'control.cancelled'
  | 'run.succeeded'
  | 'run.failed'
