/**
 * A deployment that delivers its webhooks a few seconds after the event (an outbox polled every few seconds, a
 * queue between the service and its sender). Spec §6: "Every state change emits an event. Events can be routed to
 * webhooks ... Webhook deliveries are signed with HMAC SHA-256 and are retried with exponential backoff." The spec
 * states no delivery latency, so this is correct, and every core check that judges deliveries must wait for them
 * within --wait-ms instead of skipping or failing.
 */
import type { Dialect } from '../dialects.js'

/** How late each delivery reaches the subscriber: a few seconds, well within the suite's --wait-ms. */
export const LATE_DELIVERY_MS = 3000

export function lateDialect(delayMs = LATE_DELIVERY_MS): Dialect {
  return {
    id: 'late-deliveries',
    description: `Webhook deliveries reach the subscriber ${delayMs / 1000} s after the event`,
    targets: [],
    // The deployment's request is held, then forwarded unchanged: the subscriber's answer (a 5xx that asks for a
    // retry) still reaches the deployment.
    async delivery(req) {
      await new Promise((resolve) => setTimeout(resolve, delayMs))
      return req
    },
  }
}
