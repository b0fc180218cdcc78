import { answerResult } from '../../domain/destinations/answer.js'
import { type PagerDutyConfig, pagerDutyAction, pagerDutyEvent } from '../../domain/destinations/pagerduty.js'
import type { DestinationTransport } from '../../domain/destinations/ports.js'
import type { OutboundHttp } from '../../domain/outbound.js'

const MAX_ANSWER_BYTES = 16 * 1024

export interface PagerDutyTransportOptions {
  /** The server's public URL, for the incident's link to the run. */
  publicUrl?: string | undefined
  now?: () => number
}

function pagerDutyConfig(config: Record<string, unknown>): PagerDutyConfig {
  const severity = config.severity
  return {
    source: typeof config.source === 'string' ? config.source : undefined,
    component: typeof config.component === 'string' ? config.component : undefined,
    severity:
      severity === 'critical' || severity === 'error' || severity === 'warning' || severity === 'info'
        ? severity
        : undefined,
  }
}

/**
 * PagerDuty Events API v2: `trigger` for the kinds the destination lists, `resolve` when the run moved past them,
 * one `dedup_key` per run; POSTed through the guarded outbound port. PagerDuty answers 202 when it took the event
 * and 429 (with Retry-After when it says) when the integration is rate limited.
 */
export function pagerDutyTransport(
  outbound: OutboundHttp,
  options: PagerDutyTransportOptions = {},
): DestinationTransport {
  const now = options.now ?? Date.now
  return {
    async send(destination, event, context) {
      const action = pagerDutyAction(destination.events, event.kind, event.payload) ?? 'trigger'
      const body = pagerDutyEvent(
        action,
        event.kind,
        String(destination.secrets.routing_key),
        destination.workspaceId,
        pagerDutyConfig(destination.config),
        event.payload,
        options.publicUrl,
      )
      const answer = await outbound.post({
        url: String(destination.config.url),
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
        timeoutMs: context.timeoutMs,
        maxAnswerBytes: MAX_ANSWER_BYTES,
        // Stryker disable next-line ObjectLiteral: the shutdown signal: it ends an attempt only when the server stops.
        ...(context.signal ? { signal: context.signal } : {}),
      })
      return answerResult(answer, now())
    },
  }
}
