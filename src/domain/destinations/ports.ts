import type { OutboxTargets } from '../outbox/dispatcher.js'
import type { Slice } from '../pagination.js'
import type { Queryable } from '../ports.js'
import type { EventKind } from '../webhooks/body.js'
import type { SendResult } from '../webhooks/sender.js'
import type { DestinationChanges, DestinationRecord, DestinationType, NewDestination } from './types.js'

export interface DestinationRepository extends OutboxTargets<DestinationRecord> {
  in(tx: Queryable): DestinationRepository
  insert(d: NewDestination): Promise<DestinationRecord>
  /**
   * A destination by id alone, whatever its workspace: only for callers a destination's own secret authenticates
   * (Slack's signed interactions), which then act in that destination's workspace.
   */
  byId(id: string): Promise<DestinationRecord | undefined>
  list(workspaceId: string, afterSeq: number, limit: number): Promise<Slice<DestinationRecord>>
  update(id: string, changes: DestinationChanges): Promise<void>
  /** Whether it was live (and is deleted now): a second delete at once changes nothing. */
  markDeleted(id: string, now: number): Promise<boolean>
}

/** One event as a destination transport sends it: the delivery id (stable across attempts) and the body. */
export interface OutgoingEvent {
  deliveryId: string
  kind: EventKind
  /** The event's delivery body (`id`, `event`, `ts` and the kind's fields), as webhooks get it unsigned. */
  payload: Record<string, unknown>
}

export interface TransportContext {
  timeoutMs: number
  signal?: AbortSignal
}

/**
 * How one destination type reaches its service (src/outbound/destinations): one attempt, never throwing, with the
 * receiver's status and its Retry-After when it asked for one.
 */
export interface DestinationTransport {
  send(destination: DestinationRecord, event: OutgoingEvent, context: TransportContext): Promise<SendResult>
  /** Ends connections the transport keeps open (NATS); called when the server stops. */
  close?(): Promise<void>
}

export type DestinationTransports = Record<DestinationType, DestinationTransport>

/** Destination attempts and given-up deliveries per type, for the server's metrics; never throws. */
export interface DestinationTelemetry {
  attempted(type: DestinationType, outcome: 'delivered' | 'failed'): void
  /** `type` is undefined when the destination was deleted before its delivery's attempt. */
  gaveUp(type: DestinationType | undefined): void
}

/** The click signatures seen lately, shared by every replica of one store. */
export interface SeenSignatures {
  /** Remembers the signature as seen at `now`, forgetting those older than `windowMs`; false when already seen. */
  firstSeen(signature: string, now: number, windowMs: number): Promise<boolean>
}
