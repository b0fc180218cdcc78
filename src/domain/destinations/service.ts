import type { Clock } from '../clock.js'
import { notFound } from '../errors.js'
import { newId } from '../ids.js'
import type { OutboundHttp } from '../outbound.js'
import {
  dispatcherOptions,
  type EventSource,
  OutboxDispatcher,
  type OutboxSettings,
} from '../outbox/dispatcher.js'
import { redeliver } from '../outbox/redelivery.js'
import type { Slice } from '../pagination.js'
import type { Db } from '../ports.js'
import type { QuotaGate } from '../quotas/service.js'
import type { EventKind } from '../webhooks/body.js'
import type { DeliveryRepository } from '../webhooks/ports.js'
import type { SendResult } from '../webhooks/sender.js'
import type { DeliveryRecord } from '../webhooks/types.js'
import { destinationChannel } from './channel.js'
import type { DestinationRepository, DestinationTelemetry, DestinationTransports } from './ports.js'
import { samplePayload } from './sample.js'
import { defaultEvents, parseSettings } from './settings.js'
import type { DestinationRecord, DestinationType } from './types.js'

/**
 * What a surface hands the service once the contract's schema has judged it (both surfaces validate with the
 * generated route schemas): a known type, one to fifty known and distinct event kinds, one to fifty distinct agent
 * ids or null. The contract is the one home of those rules, as for webhook subscriptions.
 */
export interface CreateDestinationInput {
  type: DestinationType
  name: string
  /** Absent: the type's default (docs/events.md). */
  events?: EventKind[] | undefined
  agent_ids?: string[] | null | undefined
  config?: Record<string, unknown> | undefined
  secrets?: Record<string, unknown> | undefined
}

export interface UpdateDestinationInput {
  name?: string | undefined
  events?: EventKind[] | undefined
  agent_ids?: string[] | null | undefined
  /** Replaces the whole config when given (defaults filled in again). */
  config?: Record<string, unknown> | undefined
  /** Replaces the whole set of secrets when given. */
  secrets?: Record<string, unknown> | undefined
  status?: 'active' | 'disabled' | undefined
}

export interface TestSendResult {
  ok: boolean
  statusCode: number | null
  error: string | null
  eventId: string
  event: EventKind
}

export interface DestinationSettings extends OutboxSettings {
  /** The `destinations` quota, counted in the creation's transaction. */
  quotas: QuotaGate
  /** URL checks at creation; HTTP transports deliver through the same guarded port. */
  outbound: Pick<OutboundHttp, 'refusal'>
  transports: DestinationTransports
  telemetry?: DestinationTelemetry
}

/** Destinations of a workspace and their delivery log; owns the dispatcher that sends their outbox rows. */
export class DestinationService {
  readonly dispatcher: OutboxDispatcher<DestinationRecord>

  constructor(
    private readonly db: Db,
    private readonly destinations: DestinationRepository,
    private readonly deliveries: DeliveryRepository,
    private readonly clock: Clock,
    private readonly events: EventSource & { lastSeq(): Promise<number> },
    private readonly settings: DestinationSettings,
  ) {
    const telemetry = settings.telemetry
    this.dispatcher = new OutboxDispatcher(
      db,
      destinationChannel(destinations, settings.transports),
      deliveries,
      clock,
      events,
      dispatcherOptions<DestinationRecord>(
        settings,
        telemetry && {
          attempted: (outcome, d) => telemetry.attempted(d.type, outcome),
          gaveUp: (d) => telemetry.gaveUp(d?.type),
        },
      ),
    )
  }

  /** Stops the dispatcher, then closes what the transports keep open (NATS connections). */
  async stop(): Promise<void> {
    await this.dispatcher.stop()
    await Promise.allSettled(Object.values(this.settings.transports).map((t) => t.close?.()))
  }

  async create(workspaceId: string, input: CreateDestinationInput): Promise<DestinationRecord> {
    const events = input.events ?? defaultEvents(input.type)
    const { config, secrets } = parseSettings(input.type, input.config, input.secrets, this.settings.outbound)
    const now = this.clock.now()
    // Only events appended after this point reach the destination; the fan-out compares against this seq.
    const afterEventSeq = await this.events.lastSeq()
    const type = input.type
    return this.db.transaction(async (tx) => {
      await this.settings.quotas.take(tx, workspaceId, 'destinations')
      return this.destinations.in(tx).insert({
        id: newId('dst', now),
        workspaceId,
        type,
        name: input.name,
        events,
        agentIds: input.agent_ids ?? null,
        config,
        secrets,
        status: 'active',
        afterEventSeq,
        createdAt: now,
        updatedAt: now,
      })
    })
  }

  list(workspaceId: string, afterSeq: number, limit: number): Promise<Slice<DestinationRecord>> {
    return this.destinations.list(workspaceId, afterSeq, limit)
  }

  async get(workspaceId: string, id: string): Promise<DestinationRecord> {
    const found = await this.destinations.get(workspaceId, id)
    if (!found) throw notFound('Destination')
    return found
  }

  /** Changes what is given; a new config or set of secrets is checked whole, as at creation. */
  async update(workspaceId: string, id: string, input: UpdateDestinationInput): Promise<DestinationRecord> {
    const found = await this.get(workspaceId, id)
    const parsed =
      input.config !== undefined || input.secrets !== undefined
        ? parseSettings(
            found.type,
            input.config ?? found.config,
            input.secrets ?? found.secrets,
            this.settings.outbound,
          )
        : { config: found.config, secrets: found.secrets }
    const changed: DestinationRecord = {
      ...found,
      name: input.name ?? found.name,
      events: input.events ?? found.events,
      agentIds: input.agent_ids !== undefined ? input.agent_ids : found.agentIds,
      config: parsed.config,
      secrets: parsed.secrets,
      status: input.status ?? found.status,
      updatedAt: this.clock.now(),
    }
    await this.destinations.update(id, changed)
    return changed
  }

  /** Deletes the destination and drops what it still had to send. */
  async delete(workspaceId: string, id: string): Promise<void> {
    await this.db.transaction(async (tx) => {
      const found = await this.destinations.in(tx).get(workspaceId, id)
      if (!found) throw notFound('Destination')
      if (await this.destinations.in(tx).markDeleted(id, this.clock.now()))
        await this.settings.quotas.release(tx, workspaceId, 'destinations')
      await this.deliveries.in(tx).dropPending(id)
    })
  }

  /**
   * Sends one made-up event (`test: true`) now, outside the outbox, and tells what the receiver answered: the
   * "send a sample" an operator presses after configuring a channel. Nothing is recorded or retried.
   */
  async test(workspaceId: string, id: string, kind?: EventKind): Promise<TestSendResult> {
    const found = await this.get(workspaceId, id)
    // A destination lists at least one kind (the contract's minItems); the fallback only satisfies the type.
    // Stryker disable next-line StringLiteral: equivalent, a destination's events are never empty
    const event = kind ?? found.events[0] ?? 'run.awaiting_approval'
    const now = this.clock.now()
    const payload = samplePayload(event, now, found.agentIds?.[0])
    let result: SendResult
    try {
      result = await this.settings.transports[found.type].send(
        found,
        { deliveryId: newId('dlv', now), kind: event, payload },
        { timeoutMs: this.settings.timeoutMs },
      )
    } catch (err) {
      result = { ok: false, statusCode: null, error: err instanceof Error ? err.message : String(err) }
    }
    return {
      ok: result.ok,
      statusCode: result.statusCode,
      error: result.error,
      eventId: String(payload.id),
      event,
    }
  }

  async listDeliveries(
    workspaceId: string,
    destinationId: string,
    afterSeq: number,
    limit: number,
  ): Promise<Slice<DeliveryRecord>> {
    await this.get(workspaceId, destinationId)
    return this.deliveries.list(destinationId, afterSeq, limit)
  }

  /** Starts a fresh round of attempts now, with the same delivery and event ids (receivers dedupe on them). */
  async redeliver(workspaceId: string, destinationId: string, deliveryId: string): Promise<DeliveryRecord> {
    await this.get(workspaceId, destinationId)
    const { db, deliveries, clock, dispatcher } = this
    return redeliver({ db, deliveries, clock, dispatcher }, destinationId, deliveryId)
  }
}
