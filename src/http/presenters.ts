/** Domain records in the contract's JSON shapes (snake_case, RFC 3339 timestamps). */
import type { AgentView } from '../domain/agents/service.js'
import { toRfc3339, toRfc3339OrNull } from '../domain/clock.js'
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
