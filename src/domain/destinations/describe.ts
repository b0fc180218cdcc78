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
  // Stryker disable next-line LogicalOperator: equivalent, a run's outcome error always has both (the executor and a control that ends a run write both)
  if (code && message) return `${code}: ${message}`
  // Stryker disable next-line LogicalOperator: equivalent, as above: never reached with only one of them
  return code ?? message
}

/** A payload's text where a sentence names it, "?" where the payload has none. */
// Stryker disable next-line StringLiteral: equivalent, every event the reference emits carries the fields its sentence names (the "?" is for a payload that lacks one)
const named = (value: unknown): string => asText(value) ?? '?'

/** Describes one event body (the webhook delivery body: `id`, `event`, `ts` and the kind's fields). */
export function describeEvent(kind: EventKind, payload: Record<string, unknown>): EventDescription {
  const runId = asText(payload.run_id)
  const agentId = asText(payload.agent_id)
  const subject = `${named(runId)} of agent ${named(agentId)}`
  const facts: [string, string][] = []
  const add = (label: string, value: unknown) => {
    const text = typeof value === 'number' ? String(value) : asText(value)
    if (text !== null) facts.push([label, text])
  }
  let headline: string
  switch (kind) {
    case 'run.awaiting_approval': {
      headline = `Step ${named(payload.step_id)} of run ${subject} waits for a person's approval.`
      add('Step', payload.step_id)
      add('Queue', payload.queue)
      add('Reason', payload.reason)
      break
    }
    case 'run.failed': {
      headline = `Run ${subject} failed.`
      add('Error', outcomeError(payload))
      break
    }
    case 'policy.denied': {
      const detail = asObject(payload.detail)
      headline = `A policy denied tool ${named(payload.tool)} at step ${named(payload.step_id)} of run ${subject}.`
      add('Step', payload.step_id)
      add('Tool', payload.tool)
      add('Violation', detail.violation)
      add('Envelope', detail.envelope)
      add('Observed / limit', `${JSON.stringify(detail.observed)} / ${JSON.stringify(detail.limit)}`)
      add('Escalation queue', detail.escalation_queue)
      break
    }
    case 'run.started':
    case 'run.succeeded':
    case 'run.paused':
    case 'run.resumed':
    case 'run.cancelled': {
      headline = `Run ${subject} ${kind.slice(4)}.`
      // Why a run resumed (an approval, a person's resume), and why one was cancelled (its agent deleted).
      add('Reason', payload.reason)
      add('Error', outcomeError(payload))
      break
    }
    case 'agent.created':
    case 'agent.deleted':
      headline = `Agent ${asText(payload.name) ?? named(agentId)} (${named(agentId)}) was ${kind.slice(6)}.`
      break
    case 'task.created':
    case 'task.succeeded':
    case 'task.failed':
    case 'task.cancelled':
      headline = `Task ${named(payload.task_id)} of agent ${named(agentId)} ${kind.slice(5)}.`
      break
    case 'tool.registered':
    case 'tool.retired':
      headline = `Tool ${named(payload.name)} (${named(payload.tool_id)}) was ${kind.slice(5)}.`
      break
    case 'ingest.batch_accepted':
      headline = `Batch ${named(payload.batch_id)} of connector ${named(payload.connector_id)} was accepted.`
      add('Accepted', payload.accepted)
      add('Rejected', payload.rejected)
      break
  }
  return { title: TITLES[kind], headline, runId, agentId, facts }
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
