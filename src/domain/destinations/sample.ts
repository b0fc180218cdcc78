import { toRfc3339 } from '../clock.js'
import { newId } from '../ids.js'
import type { EventKind } from '../webhooks/body.js'

/** The run's status a lifecycle event announces, as the real event's `status` carries it. */
const RUN_STATUS: Partial<Record<EventKind, string>> = {
  'run.started': 'running',
  'run.succeeded': 'succeeded',
  'run.failed': 'failed',
  'run.paused': 'paused',
  'run.resumed': 'running',
  'run.cancelled': 'cancelled',
}

/** The outcome a sample run ends with: a failure and a cancellation say why, as a real one's error does. */
function outcomeOf(status: string): Record<string, unknown> | undefined {
  if (status === 'succeeded') return { status, results: [], error: null }
  if (status === 'failed')
    return { status, results: [], error: { code: 'tool_failed', message: 'A sample failure: nothing ran' } }
  if (status === 'cancelled')
    return {
      status,
      results: [],
      error: { code: 'cancelled', message: 'A sample cancellation: nothing ran' },
    }
  return undefined
}

/** The fields a real event of `kind` carries (the services that append each kind), with made-up ids. */
function fieldsOf(kind: EventKind, agentId: string): Record<string, unknown> {
  const run = { run_id: 'run_sample', agent_id: agentId, task_id: null }
  const status = RUN_STATUS[kind]
  if (status !== undefined) {
    const outcome = outcomeOf(status)
    return {
      ...run,
      status,
      ...(outcome ? { outcome } : {}),
      // A run starts with its plan's step ids; the resume a person most often sees is an approval's, naming its step;
      // a pause says what it paused, and a cancellation the approvals it flushed.
      ...(kind === 'run.started' ? { plan: ['step_sample'] } : {}),
      ...(kind === 'run.resumed' ? { reason: 'approved', step_id: 'step_sample' } : {}),
      ...(kind === 'run.paused' ? { paused_from: 'running' } : {}),
      ...(kind === 'run.cancelled' ? { flushed_approvals: ['step_sample'] } : {}),
    }
  }
  switch (kind) {
    case 'run.awaiting_approval':
      // Spec §6's fields, exactly (deliveryBody keeps only those for this kind).
      return {
        run_id: 'run_sample',
        agent_id: agentId,
        step_id: 'step_sample',
        queue: 'approvals',
        reason: 'A sample approval: nothing waits on it',
        payload_preview: { tool: 'sample_tool', input: '{"amount":100}', truncated: false },
      }
    case 'policy.denied':
      return {
        ...run,
        step_id: 'step_sample',
        tool: 'sample_tool',
        tool_id: 'tool_sample',
        detail: { envelope: 'default', violation: 'sample', observed: 1, limit: 0, escalation_queue: null },
      }
    case 'agent.created':
      return { agent_id: agentId, name: 'sample-agent', status: 'idle' }
    case 'agent.deleted':
      return { agent_id: agentId, name: 'sample-agent' }
    case 'tool.registered':
      return { tool_id: 'tool_sample', name: 'sample_tool', status: 'active' }
    case 'tool.retired':
      return { tool_id: 'tool_sample', name: 'sample_tool', status: 'retired' }
    case 'task.created':
      return { task_id: 'task_sample', agent_id: agentId, status: 'queued', run_id: null }
    case 'ingest.batch_accepted':
      return {
        connector_id: 'connector_sample',
        batch_id: 'batch_sample',
        accepted: 1,
        rejected: 0,
        lineage_root: 'sample',
      }
    default:
      // task.succeeded, task.failed, task.cancelled: the task follows its run to its end.
      return { task_id: 'task_sample', agent_id: agentId, run_id: 'run_sample', status: kind.slice(5) }
  }
}

/**
 * A made-up event of `kind` for "send a test": the fields a real one carries, with `test: true` and ids that name
 * no real run, so a receiver (or a person reading the channel) can tell it apart.
 */
export function samplePayload(kind: EventKind, now: number, agentId = 'agt_sample'): Record<string, unknown> {
  return { ...fieldsOf(kind, agentId), id: newId('evt', now), event: kind, ts: toRfc3339(now), test: true }
}
