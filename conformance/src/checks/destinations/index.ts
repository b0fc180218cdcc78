/**
 * Spec §6: "Events can be routed to webhooks and to chat, paging and downstream systems"; how routing is configured
 * is not shown, so every check here is profile: the reference's `/v1/destinations`. The suite's receiver poses as
 * the destination's service and judges each body against that service's documented shape (CloudEvents 1.0's HTTP
 * binding for `cloudevents`). A deployment without `/v1/destinations` skips them.
 */
import type { Check } from '../../check.js'
import { slackIncomingWebhook, slackRetryAfter } from './chat.js'
import { cloudeventsBinary, cloudeventsStructured } from './cloudevents.js'
import { eventBus } from './event-bus.js'
import { operations, settingsJudged } from './operations.js'
import { pagerdutyEventsV2 } from './paging.js'

export {
  cloudEventsSink,
  pagerDestination,
  pagerResolve,
  pagerTrigger,
  refusesType,
  servesDestinations,
  skipWithoutDestinations,
  slackDestination,
} from './sinks.js'

export const destinationChecks: Check[] = [
  cloudeventsBinary,
  cloudeventsStructured,
  slackIncomingWebhook,
  pagerdutyEventsV2,
  operations,
  settingsJudged,
  eventBus,
  slackRetryAfter,
]
