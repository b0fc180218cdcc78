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
import type { WebhookService } from '../../domain/webhooks/service.js'
import type { AppEnv } from '../../surface/context.js'
import { deliveriesPage, webhooksPage } from '../../surface/pages.js'
import { presentDelivery, presentWebhook } from '../../surface/presenters.js'
import { requireScopeOf } from '../../surface/scopes.js'

/** What the webhook routes call. */
export interface WebhookRoutePorts {
  webhooks: Pick<
    WebhookService,
    'create' | 'list' | 'get' | 'delete' | 'rotateSecret' | 'listDeliveries' | 'redeliver'
  >
}

export function registerWebhookRoutes(app: OpenAPIHono<AppEnv>, services: WebhookRoutePorts): void {
  const webhooks = services.webhooks

  app.openapi(postV1WebhooksRoute, async (c) => {
    const auth = requireScopeOf(c, 'createWebhook')
    const created = await webhooks.create(auth.workspaceId, c.req.valid('json'))
    return c.json(presentWebhook(created), 201)
  })

  app.openapi(getV1WebhooksRoute, async (c) => {
    const auth = requireScopeOf(c, 'listWebhooks')
    return c.json(await webhooksPage(webhooks, auth.workspaceId, c.req.valid('query')), 200)
  })

  app.openapi(getV1WebhooksWebhookIdRoute, async (c) => {
    const auth = requireScopeOf(c, 'getWebhook')
    const found = await webhooks.get(auth.workspaceId, c.req.valid('param').webhook_id)
    return c.json(presentWebhook(found), 200)
  })

  app.openapi(deleteV1WebhooksWebhookIdRoute, async (c) => {
    const auth = requireScopeOf(c, 'deleteWebhook')
    await webhooks.delete(auth.workspaceId, c.req.valid('param').webhook_id)
    return c.body(null, 204)
  })

  app.openapi(postV1WebhooksWebhookIdRotateSecretRoute, async (c) => {
    const auth = requireScopeOf(c, 'rotateWebhookSecret')
    const rotated = await webhooks.rotateSecret(
      auth.workspaceId,
      c.req.valid('param').webhook_id,
      c.req.valid('json'),
    )
    return c.json(presentWebhook(rotated), 200)
  })

  app.openapi(getV1WebhooksWebhookIdDeliveriesRoute, async (c) => {
    const auth = requireScopeOf(c, 'listWebhookDeliveries')
    const webhookId = c.req.valid('param').webhook_id
    return c.json(await deliveriesPage(webhooks, auth.workspaceId, webhookId, c.req.valid('query')), 200)
  })

  app.openapi(postV1WebhooksWebhookIdDeliveriesDeliveryIdRedeliverRoute, async (c) => {
    const auth = requireScopeOf(c, 'redeliverWebhookDelivery')
    const { webhook_id, delivery_id } = c.req.valid('param')
    const requeued = await webhooks.redeliver(auth.workspaceId, webhook_id, delivery_id)
    return c.json(presentDelivery(requeued), 202)
  })
}
