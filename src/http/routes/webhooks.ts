import type { OpenAPIHono } from '@hono/zod-openapi'
import {
  deleteV1WebhooksWebhookIdRoute,
  getV1WebhooksRoute,
  getV1WebhooksWebhookIdDeliveriesRoute,
  getV1WebhooksWebhookIdRoute,
  postV1WebhooksRoute,
  postV1WebhooksWebhookIdDeliveriesDeliveryIdRedeliverRoute,
  postV1WebhooksWebhookIdRotateSecretRoute,
} from '../../../generated/routes.js'
import { pageRequest, toPage } from '../../domain/pagination.js'
import type { WebhookService } from '../../domain/webhooks/service.js'
import type { AppEnv } from '../context.js'
import { presentDelivery, presentWebhook } from '../presenters.js'
import { requireScope } from '../scopes.js'

export function registerWebhookRoutes(
  app: OpenAPIHono<AppEnv>,
  services: { webhooks: WebhookService },
): void {
  const webhooks = services.webhooks

  app.openapi(postV1WebhooksRoute, async (c) => {
    const auth = requireScope(c, 'webhooks:write')
    const created = await webhooks.create(auth.workspaceId, c.req.valid('json'))
    return c.json(presentWebhook(created), 201)
  })

  app.openapi(getV1WebhooksRoute, async (c) => {
    const auth = requireScope(c, 'webhooks:read')
    const page = pageRequest(auth.workspaceId, 'webhooks', c.req.valid('query'))
    const rows = await webhooks.list(auth.workspaceId, page.afterSeq, page.limit)
    return c.json(toPage(auth.workspaceId, 'webhooks', rows, presentWebhook), 200)
  })

  app.openapi(getV1WebhooksWebhookIdRoute, async (c) => {
    const auth = requireScope(c, 'webhooks:read')
    const found = await webhooks.get(auth.workspaceId, c.req.valid('param').webhook_id)
    return c.json(presentWebhook(found), 200)
  })

  app.openapi(deleteV1WebhooksWebhookIdRoute, async (c) => {
    const auth = requireScope(c, 'webhooks:write')
    await webhooks.delete(auth.workspaceId, c.req.valid('param').webhook_id)
    return c.body(null, 204)
  })

  app.openapi(postV1WebhooksWebhookIdRotateSecretRoute, async (c) => {
    const auth = requireScope(c, 'webhooks:write')
    const rotated = await webhooks.rotateSecret(
      auth.workspaceId,
      c.req.valid('param').webhook_id,
      c.req.valid('json'),
    )
    return c.json(presentWebhook(rotated), 200)
  })

  app.openapi(getV1WebhooksWebhookIdDeliveriesRoute, async (c) => {
    const auth = requireScope(c, 'webhooks:read')
    const webhookId = c.req.valid('param').webhook_id
    // The cursor names its subscription, so a cursor from one delivery log cannot page another.
    const list = `deliveries:${webhookId}`
    const page = pageRequest(auth.workspaceId, list, c.req.valid('query'))
    const rows = await webhooks.listDeliveries(auth.workspaceId, webhookId, page.afterSeq, page.limit)
    return c.json(toPage(auth.workspaceId, list, rows, presentDelivery), 200)
  })

  app.openapi(postV1WebhooksWebhookIdDeliveriesDeliveryIdRedeliverRoute, async (c) => {
    const auth = requireScope(c, 'webhooks:write')
    const { webhook_id, delivery_id } = c.req.valid('param')
    const requeued = await webhooks.redeliver(auth.workspaceId, webhook_id, delivery_id)
    return c.json(presentDelivery(requeued), 202)
  })
}
