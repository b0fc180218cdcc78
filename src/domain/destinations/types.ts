import type { EventKind } from '../webhooks/body.js'

/** Where a destination sends events (docs/events.md); each has its own config and write-only secrets. */
export const DESTINATION_TYPES = ['cloudevents', 'slack', 'pagerduty', 'nats'] as const

export type DestinationType = (typeof DESTINATION_TYPES)[number]

export function isDestinationType(value: string): value is DestinationType {
  return (DESTINATION_TYPES as readonly string[]).includes(value)
}

export interface DestinationRecord {
  seq: number
  id: string
  workspaceId: string
  type: DestinationType
  name: string
  events: EventKind[]
  /** Only events about these agents; null: every agent's. */
  agentIds: string[] | null
  /** The type's public settings, as validated (defaults filled in). */
  config: Record<string, unknown>
  /** Credentials (webhook URLs with tokens, routing keys, passwords): write-only, never answered or logged. */
  secrets: Record<string, string>
  status: 'active' | 'disabled'
  /** The last event-log seq when the destination was created: only later events reach it. */
  afterEventSeq: number
  createdAt: number
  updatedAt: number
  deletedAt: number | null
}

export type NewDestination = Omit<DestinationRecord, 'seq' | 'deletedAt'>

/** What an update may change; absent fields stay. */
export type DestinationChanges = Pick<
  DestinationRecord,
  'name' | 'events' | 'agentIds' | 'config' | 'secrets' | 'status' | 'updatedAt'
>
