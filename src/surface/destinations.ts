/** The destinations' presenters and pages, shared by REST and GraphQL. */
import { toRfc3339 } from '../domain/clock.js'
import type { DestinationService, TestSendResult } from '../domain/destinations/service.js'
import type { DestinationRecord } from '../domain/destinations/types.js'
import { type Page, pageRequest, toPage } from '../domain/pagination.js'
import type { DeliveryRecord } from '../domain/webhooks/types.js'
import type {
  DestinationBody,
  DestinationDeliveryBody,
  DestinationDeliveryPageBody,
  DestinationTestResultBody,
} from './contract-types.js'
import type { PageQuery } from './pages.js'

const orNull = (ms: number | null) => (ms === null ? null : toRfc3339(ms))

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
  return {
    delivery_id: d.id,
    destination_id: d.webhookId,
    event_id: d.eventId,
    event: d.eventKind,
    status: d.status,
    attempts: d.attempts,
    last_status_code: d.lastStatusCode,
    last_error: d.lastError,
    next_attempt_at: orNull(d.nextAttemptAt),
    created_at: toRfc3339(d.createdAt),
    delivered_at: orNull(d.deliveredAt),
  }
}

export function presentTestResult(r: TestSendResult): DestinationTestResultBody {
  return { ok: r.ok, status_code: r.statusCode, error: r.error, event_id: r.eventId, event: r.event }
}

export async function destinationsPage(
  destinations: Pick<DestinationService, 'list'>,
  workspaceId: string,
  query: PageQuery,
): Promise<Page<DestinationBody>> {
  const page = pageRequest(workspaceId, 'destinations', query)
  const read = await destinations.list(workspaceId, page.afterSeq, page.limit)
  return toPage(workspaceId, 'destinations', read, presentDestination)
}

/** One destination's delivery log; the cursor names the destination, so it cannot page another's. */
export async function destinationDeliveriesPage(
  destinations: Pick<DestinationService, 'listDeliveries'>,
  workspaceId: string,
  destinationId: string,
  query: PageQuery,
): Promise<DestinationDeliveryPageBody> {
  const list = `destination-deliveries:${destinationId}`
  const page = pageRequest(workspaceId, list, query)
  const read = await destinations.listDeliveries(workspaceId, destinationId, page.afterSeq, page.limit)
  return toPage(workspaceId, list, read, presentDestinationDelivery)
}
