/** The destinations' presenters and pages, shared by REST and GraphQL. */
import { toRfc3339 } from '../domain/clock.js'
import type { TestSendResult } from '../domain/destinations/service.js'
import type { DestinationRecord } from '../domain/destinations/types.js'
import type { DeliveryRecord } from '../domain/webhooks/types.js'
import type { DestinationBody, DestinationDeliveryBody, DestinationTestResultBody } from './contract-types.js'
import { deliveryLog, workspaceList } from './pages.js'
import { deliveryProgress } from './presenters.js'

/** A destination as answered: its secrets only by name, never by value. */
export function presentDestination(d: DestinationRecord): DestinationBody {
  return {
    destination_id: d.id,
    type: d.type,
    name: d.name,
    events: d.events,
    agent_ids: d.agentIds,
    config: d.config,
    secrets_set: Object.keys(d.secrets).sort(),
    status: d.status,
    created_at: toRfc3339(d.createdAt),
    updated_at: toRfc3339(d.updatedAt),
  }
}

export function presentDestinationDelivery(d: DeliveryRecord): DestinationDeliveryBody {
  return { delivery_id: d.id, destination_id: d.webhookId, ...deliveryProgress(d) }
}

export function presentTestResult(r: TestSendResult): DestinationTestResultBody {
  return { ok: r.ok, status_code: r.statusCode, error: r.error, event_id: r.eventId, event: r.event }
}

export const destinationsPage = workspaceList('destinations', presentDestination)

/** One destination's delivery log. */
export const destinationDeliveriesPage = deliveryLog('destination-deliveries', presentDestinationDelivery)
