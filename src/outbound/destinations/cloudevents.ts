import { CloudEvent, HTTP } from 'cloudevents'
import { answerResult } from '../../domain/destinations/answer.js'
import type { DestinationTransport } from '../../domain/destinations/ports.js'
import type { OutboundHttp } from '../../domain/outbound.js'

/** Reads at most this much of a sink's answer: only the status and Retry-After matter. */
const MAX_ANSWER_BYTES = 16 * 1024

/** The CloudEvents `subject`: what the event is about (the run, else the task, agent, tool or connector). */
function subjectOf(payload: Record<string, unknown>): string | undefined {
  for (const key of ['run_id', 'task_id', 'agent_id', 'tool_id', 'connector_id']) {
    const value = payload[key]
    if (typeof value === 'string') return value
  }
  return undefined
}

/** The event as a CloudEvent 1.0: `id` the event id, `type` its kind, `data` its delivery body. */
export function toCloudEvent(
  workspaceId: string,
  source: unknown,
  payload: Record<string, unknown>,
): CloudEvent<Record<string, unknown>> {
  const subject = subjectOf(payload)
  return new CloudEvent<Record<string, unknown>>({
    specversion: '1.0',
    id: String(payload.id),
    type: String(payload.event),
    source: typeof source === 'string' ? source : `urn:agentops:workspace:${workspaceId}`,
    time: String(payload.ts),
    datacontenttype: 'application/json',
    ...(subject ? { subject } : {}),
    data: payload,
  })
}

/**
 * CloudEvents over HTTP through the SDK's binary (ce-* headers, the body as data) or structured
 * (application/cloudevents+json) binding, POSTed through the guarded outbound port.
 */
export function cloudEventsTransport(
  outbound: OutboundHttp,
  now: () => number = Date.now,
): DestinationTransport {
  return {
    async send(destination, event, context) {
      const ce = toCloudEvent(destination.workspaceId, destination.config.source, event.payload)
      const message = destination.config.mode === 'structured' ? HTTP.structured(ce) : HTTP.binary(ce)
      const headers: Record<string, string> = {}
      for (const [name, value] of Object.entries(message.headers)) {
        if (value !== undefined) headers[name] = String(value)
      }
      const authorization = destination.secrets.authorization
      if (authorization) headers.authorization = authorization
      const answer = await outbound.post({
        url: String(destination.config.url),
        headers,
        body: typeof message.body === 'string' ? message.body : JSON.stringify(message.body),
        timeoutMs: context.timeoutMs,
        maxAnswerBytes: MAX_ANSWER_BYTES,
        ...(context.signal ? { signal: context.signal } : {}),
      })
      return answerResult(answer, now())
    },
  }
}
