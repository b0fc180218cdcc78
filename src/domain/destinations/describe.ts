import type { EventKind } from '../webhooks/body.js'
import { asObject, asText } from './json-values.js'

/** What a person reads about an event in a chat message or an incident: a title, one sentence, labelled facts. */
export interface EventDescription {
  /** A short title ("Approval needed", "Run failed"). */
  title: string
  /** One sentence saying what happened, naming the agent and run. */
  headline: string
  runId: string | null
  agentId: string | null
  /** Labelled facts worth a glance (step, queue, error, violation), values as plain text. */
  facts: [string, string][]
}

const TITLES: Record<EventKind, string> = {
  'run.started': 'Run started',
  'run.awaiting_approval': 'Approval needed',
  'run.succeeded': 'Run succeeded',
  'run.failed': 'Run failed',
  'run.paused': 'Run paused',
  'run.resumed': 'Run resumed',
  'run.cancelled': 'Run cancelled',
  'policy.denied': 'Policy denied a step',
  'agent.created': 'Agent created',
  'agent.deleted': 'Agent deleted',
  'task.created': 'Task created',
  'task.succeeded': 'Task succeeded',
  'task.failed': 'Task failed',
  'task.cancelled': 'Task cancelled',
  'tool.registered': 'Tool registered',
  'tool.retired': 'Tool retired',
  'ingest.batch_accepted': 'Ingestion batch accepted',
}

/** The error of a finished run's outcome, as "code: message", or null. */
function outcomeError(payload: Record<string, unknown>): string | null {
  const error = asObject(asObject(payload.outcome).error)
  const code = asText(error.code)
  const message = asText(error.message)
  if (code && message) return `${code}: ${message}`
  return code ?? message
}

/** Describes one event body (the webhook delivery body: `id`, `event`, `ts` and the kind's fields). */
export function describeEvent(kind: EventKind, payload: Record<string, unknown>): EventDescription {
  const runId = asText(payload.run_id)
  const agentId = asText(payload.agent_id)
  const run = runId ? `run ${runId}` : 'a run'
  const ofAgent = agentId ? ` of agent ${agentId}` : ''
  const facts: [string, string][] = []
  const add = (label: string, value: unknown) => {
    if (typeof value === 'string' && value !== '') facts.push([label, value])
    else if (typeof value === 'number' || typeof value === 'boolean') facts.push([label, String(value)])
  }
  let headline: string
  switch (kind) {
    case 'run.awaiting_approval': {
      headline = `Step ${asText(payload.step_id) ?? '?'} of ${run}${ofAgent} waits for a person's approval.`
      add('Step', payload.step_id)
      add('Queue', payload.queue)
      add('Reason', payload.reason)
      break
    }
    case 'run.failed': {
      headline = `${cap(run)}${ofAgent} failed.`
      add('Error', outcomeError(payload))
      break
    }
    case 'policy.denied': {
      const detail = asObject(payload.detail)
      headline = `A policy denied tool ${asText(payload.tool) ?? '?'} at step ${asText(payload.step_id) ?? '?'} of ${run}${ofAgent}.`
      add('Step', payload.step_id)
      add('Tool', payload.tool)
      add('Violation', detail.violation)
      add('Envelope', detail.envelope)
      if (detail.observed !== undefined && detail.limit !== undefined)
        add('Observed / limit', `${JSON.stringify(detail.observed)} / ${JSON.stringify(detail.limit)}`)
      add('Escalation queue', detail.escalation_queue)
      break
    }
    case 'run.started':
    case 'run.succeeded':
    case 'run.paused':
    case 'run.resumed':
    case 'run.cancelled': {
      const verb = kind.slice(4)
      headline = `${cap(run)}${ofAgent} ${verb === 'started' ? 'started' : verb}.`
      if (kind === 'run.resumed') add('Reason', payload.reason)
      if (kind === 'run.cancelled') add('Error', outcomeError(payload))
      break
    }
    case 'agent.created':
    case 'agent.deleted':
      headline = `Agent ${asText(payload.name) ?? agentId ?? '?'}${agentId ? ` (${agentId})` : ''} was ${kind.slice(6)}.`
      break
    case 'task.created':
    case 'task.succeeded':
    case 'task.failed':
    case 'task.cancelled':
      headline = `Task ${asText(payload.task_id) ?? '?'}${ofAgent} ${kind === 'task.created' ? 'was created' : kind.slice(5)}.`
      break
    case 'tool.registered':
    case 'tool.retired':
      headline = `Tool ${asText(payload.name) ?? '?'} (${asText(payload.tool_id) ?? '?'}) was ${kind.slice(5)}.`
      break
    case 'ingest.batch_accepted':
      headline = `Batch ${asText(payload.batch_id) ?? '?'} of connector ${asText(payload.connector_id) ?? '?'} was accepted.`
      add('Accepted', payload.accepted)
      add('Rejected', payload.rejected)
      break
  }
  return { title: TITLES[kind], headline, runId, agentId, facts }
}

function cap(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1)
}

/** The pending action of an approval event (spec §6 `payload_preview`), or null. */
export function pendingAction(
  payload: Record<string, unknown>,
): { tool: string; input: string; truncated: boolean } | null {
  const preview = asObject(payload.payload_preview)
  const tool = asText(preview.tool)
  if (!tool) return null
  const input = typeof preview.input === 'string' ? preview.input : JSON.stringify(preview.input ?? null)
  return { tool, input, truncated: preview.truncated === true }
}

/**
 * Where a person opens the run, when the operator configured the server's public URL (src/config.ts keeps it
 * without a trailing slash).
 */
export function runLink(publicUrl: string | undefined, runId: string | null): string | null {
  if (!publicUrl || !runId) return null
  return `${publicUrl}/v1/runs/${encodeURIComponent(runId)}`
}
