/** Every check, in the order they run. The sweep checks come last: they judge the traffic of all the others. */
import type { Check } from '../check.js'
import { authChecks } from './auth.js'
import { authzChecks } from './authz.js'
import { backoffChecks } from './backoff.js'
import { destinationAgentChecks } from './destinations/agents.js'
import { destinationChecks } from './destinations/index.js'
import { eventChecks } from './events.js'
import { extensionChecks } from './extensions.js'
import { graphqlChecks, graphqlSpecChecks } from './graphql.js'
import { graphqlSurfaceChecks } from './graphql-surface/index.js'
import { idempotencyChecks } from './idempotency.js'
import { ingestChecks } from './ingest.js'
import { ingestRuleChecks } from './ingestrules.js'
import { notificationChecks } from './notifications.js'
import { outcomeChecks } from './outcomes.js'
import { paginationChecks } from './pagination.js'
import { quotaChecks } from './quotas.js'
import { rateLimitChecks } from './ratelimit.js'
import { readbackChecks } from './readback.js'
import { resourceChecks } from './resources.js'
import { revocationChecks } from './revocation.js'
import { runEventChecks, runPlanChecks } from './runplans.js'
import { runChecks } from './runs.js'
import { scopingChecks } from './scoping.js'
import { silentPeerChecks } from './silent-peers.js'
import { slackChatChecks } from './slackchat.js'
import { streamChecks } from './stream.js'
import { streamMessageRulesChecks, streamProtocolChecks } from './streamprotocol.js'
import { surfaceChecks } from './surface.js'
import { sweepChecks } from './sweep.js'
import { tenancyChecks } from './tenancy.js'
import { testSendChecks } from './test-sends.js'
import { tierChecks } from './tiers.js'
import { toolCallChecks } from './toolcalls.js'
import { toolChecks } from './tools.js'
import { tracePushChecks } from './tracepush.js'
import { validationChecks } from './validation.js'
import { webhookOperationChecks } from './webhookops.js'
import { webhookChecks, webhookLateChecks } from './webhooks.js'

export const ALL_CHECKS: Check[] = [
  // First, in a lane of their own (the small-limit workspace), alongside everything after them: the lane's waits for
  // its windows to roll over are the run's longest, so they start at once.
  ...rateLimitChecks,
  // Then the keys that end while they hold connections open: each waits seconds on a key of its own (a hold, a
  // revoke's reach, an expiry), alongside everything after them.
  ...revocationChecks,
  // Then the sockets whose client answers no ping: each waits the deployment's ping period, alongside the rest.
  ...silentPeerChecks,
  ...authChecks,
  ...authzChecks,
  // Probes of every operation's documented error answers (for the contract coverage report); they create nothing,
  // so the long one runs alongside the checks after it.
  ...surfaceChecks,
  ...webhookChecks,
  ...webhookOperationChecks,
  ...eventChecks,
  ...backoffChecks,
  ...extensionChecks,
  ...destinationChecks,
  ...destinationAgentChecks,
  ...notificationChecks,
  ...testSendChecks,
  ...slackChatChecks,
  ...resourceChecks,
  ...readbackChecks,
  ...runChecks,
  ...tracePushChecks,
  ...outcomeChecks,
  ...runPlanChecks,
  ...runEventChecks,
  ...toolChecks,
  ...toolCallChecks,
  ...scopingChecks,
  ...tenancyChecks,
  ...idempotencyChecks,
  ...quotaChecks,
  ...tierChecks,
  ...validationChecks,
  ...ingestChecks,
  ...ingestRuleChecks,
  ...streamChecks,
  ...streamProtocolChecks,
  ...streamMessageRulesChecks,
  ...paginationChecks,
  ...graphqlSpecChecks,
  ...graphqlChecks,
  ...graphqlSurfaceChecks,
  // Checks that wait on time (a retry's backoff) judge last, after the wait overlapped the others.
  ...webhookLateChecks,
  ...sweepChecks,
]
