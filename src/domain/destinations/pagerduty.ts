import type { EventKind } from '../webhooks/body.js'
import { describeEvent, runLink } from './describe.js'

/** The kinds a PagerDuty destination triggers on when it lists none: what needs a person now. */
export const PAGERDUTY_DEFAULT_EVENTS: EventKind[] = ['run.failed', 'policy.denied', 'run.awaiting_approval']

export const PAGERDUTY_SEVERITIES = ['critical', 'error', 'warning', 'info'] as const
export type PagerDutySeverity = (typeof PAGERDUTY_SEVERITIES)[number]

/** PagerDuty's Events API v2 endpoint (US service region); the EU one is https://events.eu.pagerduty.com/v2/enqueue. */
export const PAGERDUTY_EVENTS_URL = 'https://events.pagerduty.com/v2/enqueue'

const DEFAULT_SEVERITY: Partial<Record<EventKind, PagerDutySeverity>> = {
  'run.failed': 'error',
  'policy.denied': 'warning',
  'run.awaiting_approval': 'warning',
}

/**
 * What a PagerDuty destination does with an event: `trigger` for a kind it lists; `resolve` when the run that may
 * have opened an incident got past it (it succeeded or was cancelled, its approval was granted, or it failed while
 * failures are not paged: a rejected approval); nothing otherwise.
 */
export function pagerDutyAction(
  listed: readonly EventKind[],
  kind: EventKind,
  payload: Record<string, unknown>,
): 'trigger' | 'resolve' | null {
  if (listed.includes(kind)) return 'trigger'
  if (kind === 'run.succeeded' || kind === 'run.cancelled' || kind === 'run.failed') return 'resolve'
  if (kind === 'run.resumed' && payload.reason === 'approved') return 'resolve'
  return null
}

/** One incident per run: every trigger and resolve of that run carries this key. */
export function dedupKey(workspaceId: string, payload: Record<string, unknown>): string {
  for (const key of ['run_id', 'task_id', 'agent_id', 'tool_id', 'connector_id']) {
    const value = payload[key]
    if (typeof value === 'string') return `agentops:${workspaceId}:${value}`
  }
  return `agentops:${workspaceId}:${String(payload.id)}`
}

export interface PagerDutyConfig {
  source?: string | undefined
  component?: string | undefined
  severity?: PagerDutySeverity | undefined
}

/** An Events API v2 body (https://developer.pagerduty.com/api-reference/YXBpOjI3NDgyNjU-pager-duty-v2-events-api). */
export function pagerDutyEvent(
  action: 'trigger' | 'resolve',
  kind: EventKind,
  routingKey: string,
  workspaceId: string,
  config: PagerDutyConfig,
  payload: Record<string, unknown>,
  publicUrl?: string,
): Record<string, unknown> {
  const dedup_key = dedupKey(workspaceId, payload)
  if (action === 'resolve') return { routing_key: routingKey, event_action: 'resolve', dedup_key }
  const described = describeEvent(kind, payload)
  const link = runLink(publicUrl, described.runId)
  return {
    routing_key: routingKey,
    event_action: 'trigger',
    dedup_key,
    payload: {
      summary: `${described.title}: ${described.headline}`.slice(0, 1024),
      source: config.source ?? `agentops:${workspaceId}`,
      severity: config.severity ?? DEFAULT_SEVERITY[kind] ?? 'info',
      timestamp: String(payload.ts),
      component: config.component ?? described.agentId ?? 'agentops',
      group: workspaceId,
      class: kind,
      custom_details: payload,
    },
    client: 'Agent Operations',
    ...(link ? { client_url: link, links: [{ href: link, text: `Run ${described.runId}` }] } : {}),
  }
}
