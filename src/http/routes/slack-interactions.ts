import type { OpenAPIHono } from '@hono/zod-openapi'
import type { SlackInteractionService } from '../../domain/destinations/slack-interactions.js'
import type { AppEnv } from '../../surface/context.js'
import { readLimited } from '../middleware/body.js'

/** Slack's interaction payloads (a message's blocks, the click) are a few kB; this bounds what is read unsigned. */
const MAX_INTERACTION_BYTES = 256 * 1024

/**
 * Slack's Interactivity Request URL of a slack destination: outside /v1 and its bearer keys, because Slack signs
 * the request with the app's signing secret instead (the service verifies it). 200 with no body once handled, as
 * Slack expects within 3 s; 401 for anything not signed right.
 */
export function registerSlackInteractionRoute(
  app: OpenAPIHono<AppEnv>,
  services: { slackInteractions: Pick<SlackInteractionService, 'handle'> },
): void {
  app.post('/integrations/slack/:destination_id/interactions', async (c) => {
    const body = (await readLimited(c.req.raw, MAX_INTERACTION_BYTES)).toString('utf8')
    await services.slackInteractions.handle(
      c.req.param('destination_id'),
      {
        timestamp: c.req.header('x-slack-request-timestamp'),
        signature: c.req.header('x-slack-signature'),
      },
      body,
    )
    return c.body(null, 200)
  })
}
