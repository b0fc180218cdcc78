/**
 * The composition root of the HTTP surface: the REST app with the other transports that answer over HTTP (GraphQL)
 * mounted on it. Transports never import each other; this module and src/server.ts put them together.
 */
import type { OpenAPIHono } from '@hono/zod-openapi'
import type { AppEnv } from './api/context.js'
import type { SurfaceObserver } from './api/observe.js'
import { registerGraphqlRoutes } from './graphql/http.js'
import { createHttpApp } from './http/app.js'
import type { Services } from './services.js'

export function createApp(services: Services, observer?: SurfaceObserver): OpenAPIHono<AppEnv> {
  return createHttpApp(services, { mounts: [registerGraphqlRoutes], ...(observer ? { observer } : {}) })
}
