import type { Clock } from '../clock.js'
import { ApiError, notFound } from '../errors.js'
import type { Db } from '../ports.js'
import type { DeliveryRepository } from '../webhooks/ports.js'
import type { DeliveryRecord } from '../webhooks/types.js'

/** What a manual redelivery needs of a channel's service (webhooks, destinations). */
export interface RedeliveryContext {
  db: Db
  deliveries: DeliveryRepository
  clock: Clock
  /** Woken once the requeue commits, so the fresh round starts at once. */
  dispatcher: { wake(): void }
}

/**
 * Starts a fresh round of attempts now for one delivery of a target the caller has already found in its workspace,
 * with the same delivery and event ids (receivers dedupe on them); 409 invalid_state while an attempt holds it.
 */
export async function redeliver(
  outbox: RedeliveryContext,
  targetId: string,
  deliveryId: string,
): Promise<DeliveryRecord> {
  const found = await outbox.deliveries.get(targetId, deliveryId)
  if (!found) throw notFound('Delivery')
  if (!(await outbox.deliveries.requeue(deliveryId, outbox.clock.now()))) {
    throw new ApiError(
      'invalid_state',
      'An attempt of this delivery is in progress; try again after it ends',
      {
        status: found.status,
        action: 'redeliver',
        allowed_actions: [],
      },
    )
  }
  outbox.db.afterCommit(() => outbox.dispatcher.wake())
  const after = await outbox.deliveries.get(targetId, deliveryId)
  // Stryker disable next-line ConditionalExpression: a race no check can provoke on demand: the target deleted between the requeue above and this read (its pending rows, this one now among them, dropped) answers 404 here.
  if (!after) throw notFound('Delivery')
  return after
}
