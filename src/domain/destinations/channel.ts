import type { DispatchedEvent, OutboxChannel } from '../outbox/dispatcher.js'
import type { EventKind } from '../webhooks/body.js'
import { pagerDutyAction } from './pagerduty.js'
import type { DestinationRepository, DestinationTransports } from './ports.js'
import type { DestinationRecord } from './types.js'

/** The agent an event is about, when it names one (run, policy, agent and task events do). */
export function agentOf(event: { data: Record<string, unknown> }): string | null {
  const agent = event.data.agent_id
  // Stryker disable next-line ConditionalExpression: `true` is equivalent: a value that is no string matches no listed agent id either.
  return typeof agent === 'string' ? agent : null
}

/**
 * Whether a destination gets an event: its kinds (plus what its type follows on its own, such as the events that
 * resolve a PagerDuty incident), and, with an agent filter, only events naming one of those agents.
 */
export function destinationWants(
  destination: DestinationRecord,
  event: Pick<DispatchedEvent, 'data'>,
  kind: EventKind,
): boolean {
  if (!destination.events.includes(kind) && !followsOnItsOwn(destination, event, kind)) return false
  if (destination.agentIds === null) return true
  const agent = agentOf(event)
  return agent !== null && destination.agentIds.includes(agent)
}

/** Events a type gets beyond the kinds listed: a PagerDuty destination gets what resolves the incidents it opened. */
function followsOnItsOwn(
  destination: DestinationRecord,
  event: Pick<DispatchedEvent, 'data'>,
  kind: EventKind,
): boolean {
  return (
    destination.type === 'pagerduty' && pagerDutyAction(destination.events, kind, event.data) === 'resolve'
  )
}

/** Destinations as an outbox channel: the same rows, leases, retries and log as webhooks, sent by type. */
export function destinationChannel(
  destinations: DestinationRepository,
  transports: DestinationTransports,
): OutboxChannel<DestinationRecord> {
  return {
    // Stryker disable next-line StringLiteral: equivalent: any name apart from the webhooks' keeps this channel's fan-out cursor its own.
    cursorName: 'destinations',
    // Stryker disable next-line StringLiteral: words of the server's failure log, and of the error logged for a deleted destination's delivery, whose log no one can read any more.
    noun: 'destination',
    targets: destinations,
    wants: destinationWants,
    send: (row, destination, { timeoutMs, signal }) =>
      transports[destination.type].send(
        destination,
        { deliveryId: row.id, kind: row.eventKind, payload: row.payload },
        { timeoutMs, signal },
      ),
  }
}
