/** Domain records in the contract's JSON shapes (snake_case, RFC 3339 timestamps). */
import type { AgentView } from '../domain/agents/service.js'
import { toRfc3339, toRfc3339OrNull } from '../domain/clock.js'
import { encodeCursor } from '../domain/pagination.js'
import type { RunView } from '../domain/runs/service.js'
import type { FrameRecord } from '../domain/runs/types.js'
import type { TaskRecord } from '../domain/tasks/types.js'
import type { ToolRecord } from '../domain/tools/types.js'
import type { DeliveryRecord, WebhookRecord } from '../domain/webhooks/types.js'
import type {
  AgentBody,
  DeliveryBody,
  RunBody,
  TaskBody,
  ToolBody,
  TraceFrameBody,
  WebhookBody,
} from './contract-types.js'

export function presentAgent(a: AgentView): AgentBody {
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

export function presentTask(t: TaskRecord): TaskBody {
  return {
    task_id: t.id,
    agent_id: t.agentId,
    description: t.description,
    data_source: t.dataSource,
    priority: t.priority,
    status: t.status,
    run_id: t.runId,
    result: t.result,
    created_at: toRfc3339(t.createdAt),
    updated_at: toRfc3339(t.updatedAt),
  }
}

export function presentTool(t: ToolRecord): ToolBody {
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

/** Bodies of frozen views (src/domain/runs/service.ts viewOf), which cannot change: a repeated GET of one run reuses its body. */
const presentedRuns = new WeakMap<RunView, RunBody>()

export function presentRun(view: RunView): RunBody {
  if (!Object.isFrozen(view)) return runBody(view)
  let body = presentedRuns.get(view)
  if (!body) {
    body = Object.freeze(runBody(view))
    presentedRuns.set(view, body)
  }
  return body
}

function runBody(view: RunView): RunBody {
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
    trace_cursor:
      run.frameCount > 0 ? encodeCursor(run.workspaceId, traceList(run.id), run.frameCount) : null,
    outcome: run.outcome,
  }
}

/** A trace cursor belongs to its run's trace, so another run's (or an agents or tools) cursor is refused there. */
export function traceList(runId: string): string {
  return `trace:${runId}`
}

export function presentFrame(f: FrameRecord): TraceFrameBody {
  return {
    seq: f.seq,
    ts: toRfc3339(f.ts),
    step_id: f.stepId,
    kind: f.kind,
    tool: f.tool,
    tool_id: f.toolId,
    policy: f.policy,
    latency_ms: f.latencyMs,
    result: f.result,
    detail: f.detail,
  }
}

/** The subscription as the contract shows it: never the secrets. */
export function presentWebhook(w: WebhookRecord): WebhookBody {
  return {
    webhook_id: w.id,
    url: w.url,
    events: w.events,
    status: w.status,
    created_at: toRfc3339(w.createdAt),
    secret_rotated_at: toRfc3339OrNull(w.secretRotatedAt),
  }
}

/** What every delivery channel answers of one delivery, after its own ids (webhook_id, destination_id). */
export function deliveryProgress(d: DeliveryRecord) {
  return {
    event_id: d.eventId,
    event: d.eventKind,
    status: d.status,
    attempts: d.attempts,
    last_status_code: d.lastStatusCode,
    last_error: d.lastError,
    next_attempt_at: toRfc3339OrNull(d.nextAttemptAt),
    created_at: toRfc3339(d.createdAt),
    delivered_at: toRfc3339OrNull(d.deliveredAt),
  }
}

export function presentDelivery(d: DeliveryRecord): DeliveryBody {
  return { delivery_id: d.id, webhook_id: d.webhookId, ...deliveryProgress(d) }
}
