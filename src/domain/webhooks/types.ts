import type { EventKind } from './body.js'

/** One signing secret; `expiresAt` is set on the old secret when a rotation starts its overlap. */
export interface StoredSecret {
  secret: string
  expiresAt: number | null
}

export interface WebhookRecord {
  seq: number
  id: string
  workspaceId: string
  url: string
  events: EventKind[]
  secrets: StoredSecret[]
  status: 'active' | 'disabled'
  /** The last event-log seq when the subscription was created: only later events are delivered to it. */
  afterEventSeq: number
  createdAt: number
  secretRotatedAt: number | null
  deletedAt: number | null
}

export type NewWebhook = Omit<WebhookRecord, 'seq' | 'deletedAt' | 'secretRotatedAt'>

export type DeliveryStatus = 'pending' | 'delivered' | 'failed'

export interface DeliveryRecord {
  seq: number
  id: string
  webhookId: string
  workspaceId: string
  eventId: string
  eventSeq: number
  eventKind: EventKind
  /** The unsigned delivery body, fixed when the row is created so retries send the same content. */
  payload: Record<string, unknown>
  status: DeliveryStatus
  attempts: number
  lastStatusCode: number | null
  lastError: string | null
  nextAttemptAt: number | null
  leaseOwner: string | null
  leaseUntil: number | null
  createdAt: number
  updatedAt: number
  deliveredAt: number | null
}

/** A delivery row as the fan-out creates it; `now` is its creation time and first due time. */
export type NewDelivery = Pick<
  DeliveryRecord,
  'id' | 'webhookId' | 'workspaceId' | 'eventId' | 'eventSeq' | 'eventKind' | 'payload'
> & { now: number }

/** The outcome of one attempt, written only by the lease holder. */
export type AttemptOutcome =
  | { kind: 'delivered'; statusCode: number }
  | { kind: 'retry'; statusCode: number | null; error: string; nextAttemptAt: number }
  | { kind: 'failed'; statusCode: number | null; error: string }

/** One attempt's outcome for the row it was made for: `attemptsBefore` is the count its lease was taken with. */
export interface AttemptRecord {
  id: string
  attemptsBefore: number
  outcome: AttemptOutcome
  now: number
}
