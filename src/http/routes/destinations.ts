import type { OpenAPIHono } from '@hono/zod-openapi'
import {
  deleteV1DestinationsDestinationIdRoute,
  getV1DestinationsDestinationIdDeliveriesRoute,
  getV1DestinationsDestinationIdRoute,
  getV1DestinationsRoute,
  patchV1DestinationsDestinationIdRoute,
  postV1DestinationsDestinationIdDeliveriesDeliveryIdRedeliverRoute,
  postV1DestinationsDestinationIdTestRoute,
  postV1DestinationsRoute,
} from '../../../generated/routes.js'
import type { DestinationService } from '../../domain/destinations/service.js'
import type { AppEnv } from '../../surface/context.js'
import {
  destinationDeliveriesPage,
  destinationsPage,
  presentDestination,
  presentDestinationDelivery,
  presentTestResult,
} from '../../surface/destinations.js'
import { requireScopeOf } from '../../surface/scopes.js'

/** What the destination routes call. */
export interface DestinationRoutePorts {
  destinations: Pick<
    DestinationService,
    'create' | 'list' | 'get' | 'update' | 'delete' | 'test' | 'listDeliveries' | 'redeliver'
  >
}

export function registerDestinationRoutes(app: OpenAPIHono<AppEnv>, services: DestinationRoutePorts): void {
  const destinations = services.destinations

  app.openapi(postV1DestinationsRoute, async (c) => {
    const auth = requireScopeOf(c, 'createDestination')
    const created = await destinations.create(auth.workspaceId, c.req.valid('json'))
    return c.json(presentDestination(created), 201)
  })

  app.openapi(getV1DestinationsRoute, async (c) => {
    const auth = requireScopeOf(c, 'listDestinations')
    return c.json(await destinationsPage(destinations, auth.workspaceId, c.req.valid('query')), 200)
  })

  app.openapi(getV1DestinationsDestinationIdRoute, async (c) => {
    const auth = requireScopeOf(c, 'getDestination')
    const found = await destinations.get(auth.workspaceId, c.req.valid('param').destination_id)
    return c.json(presentDestination(found), 200)
  })

  app.openapi(patchV1DestinationsDestinationIdRoute, async (c) => {
    const auth = requireScopeOf(c, 'updateDestination')
    const id = c.req.valid('param').destination_id
    const changed = await destinations.update(auth.workspaceId, id, c.req.valid('json'))
    return c.json(presentDestination(changed), 200)
  })

  app.openapi(deleteV1DestinationsDestinationIdRoute, async (c) => {
    const auth = requireScopeOf(c, 'deleteDestination')
    await destinations.delete(auth.workspaceId, c.req.valid('param').destination_id)
    return c.body(null, 204)
  })

  app.openapi(postV1DestinationsDestinationIdTestRoute, async (c) => {
    const auth = requireScopeOf(c, 'testDestination')
    const id = c.req.valid('param').destination_id
    const result = await destinations.test(auth.workspaceId, id, c.req.valid('json')?.event)
    return c.json(presentTestResult(result), 200)
  })

  app.openapi(getV1DestinationsDestinationIdDeliveriesRoute, async (c) => {
    const auth = requireScopeOf(c, 'listDestinationDeliveries')
    const id = c.req.valid('param').destination_id
    return c.json(
      await destinationDeliveriesPage(destinations, auth.workspaceId, id, c.req.valid('query')),
      200,
    )
  })

  app.openapi(postV1DestinationsDestinationIdDeliveriesDeliveryIdRedeliverRoute, async (c) => {
    const auth = requireScopeOf(c, 'redeliverDestinationDelivery')
    const { destination_id, delivery_id } = c.req.valid('param')
    const requeued = await destinations.redeliver(auth.workspaceId, destination_id, delivery_id)
    return c.json(presentDestinationDelivery(requeued), 202)
  })
}
