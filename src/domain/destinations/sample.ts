import { toRfc3339 } from '../clock.js'
import { newId } from '../ids.js'
import type { EventKind } from '../webhooks/body.js'

/**
 * A made-up event of `kind` for "send a test": the fields a real one carries, with `test: true` and ids that name
 * no real run, so a receiver (or a person reading the channel) can tell it apart.
 */
export function samplePayload(kind: EventKind, now: number, agentId = 'agt_sample'): Record<string, unknown> {
  const run = { run_id: 'run_sample', agent_id: agentId }
  const fields: Record<string, unknown> = kind.startsWith('run.')
    ? { ...run, task_id: null, status: kind.slice(4) }
    : kind === 'policy.denied'
      ? {
          ...run,
          task_id: null,
          step_id: 'step_sample',
          tool: 'sample_tool',
          tool_id: 'tool_sample',
          detail: { envelope: 'default', violation: 'sample', observed: 1, limit: 0, escalation_queue: null },
        }
      : { agent_id: agentId }
  if (kind === 'run.awaiting_approval') {
    Object.assign(fields, {
      status: undefined,
      task_id: undefined,
      step_id: 'step_sample',
      queue: 'approvals',
      reason: 'A sample approval: nothing waits on it',
      payload_preview: { tool: 'sample_tool', input: '{"amount":100}', truncated: false },
    })
  }
  const body = Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined))
  return { ...body, id: newId('evt', now), event: kind, ts: toRfc3339(now), test: true }
}
