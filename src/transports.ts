/**
 * The composition root of the transports: the REST app with the other transports that answer over HTTP (GraphQL)
 * mounted on it, and the WebSocket transports on the same port. Transports never import each other, and none
 * receives the whole `Services`: this module hands each one only the ports and settings it uses.
 */
import type { Server } from 'node:http'
import type { OpenAPIHono } from '@hono/zod-openapi'
import { registerGraphqlRoutes } from './graphql/http.js'
import { graphqlPostKind } from './graphql/keying.js'
import { serveGraphqlWs } from './graphql/ws.js'
import { createHttpApp } from './http/app.js'
import type { Services } from './services.js'
import { attachStream } from './stream/attach.js'
import type { AppEnv } from './surface/context.js'
import type { SurfaceObserver } from './surface/observe.js'
import { GRAPHQL_PATH, STREAM_PATH } from './surface/paths.js'
import { routeUpgrades } from './surface/upgrade.js'

export function createApp(services: Services, observer?: SurfaceObserver): OpenAPIHono<AppEnv> {
  return createHttpApp(services, {
    mounts: [(app) => registerGraphqlRoutes(app, services, services.logger)],
    // GraphQL queries are reads: not keyed (their answers are not stored); mutations are.
    postKind: (path, body) => (path === GRAPHQL_PATH ? graphqlPostKind(body) : undefined),
    ...(observer ? { observer } : {}),
    tracePollMs: Math.max(1, services.config.tracePollMs),
  })
}

/** A protocol served by upgrading connections of the API's HTTP server; closed when the server shuts down. */
export interface SocketAttachment {
  close(): Promise<void>
}

/**
 * Attaches the WebSocket transports (/v1/stream and graphql-ws on /v1/graphql) to the API's HTTP server, behind one
 * upgrade router; the router is detached first on close.
 */
export function attachSockets(
  server: Server,
  services: Services,
  observer: SurfaceObserver,
): SocketAttachment[] {
  const { clock, keys, limits, config, metrics } = services
  const stream = attachStream(
    server,
    {
      clock,
      keys,
      limits,
      events: services.events,
      ingestion: services.ingestion,
      topicFeeds: services.topicFeeds,
      sockets: services.streamSockets,
      ...(metrics ? { telemetry: metrics.stream } : {}),
      log: services.logger,
    },
    {
      heartbeatMs: config.streamHeartbeatMs,
      maxReplay: config.streamMaxReplay,
      maxSubscriptions: config.streamMaxSubscriptions,
      maxBufferedBytes: config.streamMaxBufferedBytes,
      fallbackPollMs: config.streamFallbackPollMs,
      maxBodyBytes: config.maxBodyBytes,
    },
    observer,
  )
  const graphqlWs = serveGraphqlWs(
    {
      clock,
      keys,
      limits,
      resolvers: services,
      sockets: services.streamSockets,
      log: services.logger,
      ...(metrics ? { telemetry: metrics.graphql } : {}),
    },
    {
      maxBufferedBytes: config.streamMaxBufferedBytes,
      maxReplay: config.streamMaxReplay,
      keepAliveMs: config.streamHeartbeatMs,
    },
    observer,
  )
  // One upgrade listener: a WebSocket handshake of each path to its transport; any other upgrade is served as the
  // plain request it also is.
  const detach = routeUpgrades(
    server,
    new Map([
      [STREAM_PATH, stream.upgrade],
      [GRAPHQL_PATH, graphqlWs.upgrade],
    ]),
  )
  return [{ close: async () => detach() }, stream, graphqlWs]
}
