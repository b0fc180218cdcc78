import { OpenAPIHono } from '@hono/zod-openapi'
import type { Config } from '../config.js'
import { AGENT_WRITES_ONLY_OPERATIONS } from '../domain/agents/service.js'
import { ApiError, methodNotAllowed } from '../domain/errors.js'
import type { Services } from '../services.js'
import type { AppEnv } from '../surface/context.js'
import { NO_OBSERVER, type SurfaceObserver } from '../surface/observe.js'
import { STREAM_PATH } from '../surface/paths.js'
import { validationHook } from '../surface/validation.js'
import { allowedMethods } from './allowed-methods.js'
import { errorResponse, toApiError } from './errors.js'
import { auth } from './middleware/auth.js'
import { bodyGuard, closeUnreadBody } from './middleware/body.js'
import { cors } from './middleware/cors.js'
import { idempotency } from './middleware/idempotency.js'
import { observeRequests, routeTemplate } from './middleware/observe.js'
import { rateLimit } from './middleware/rate-limit.js'
import { requestId } from './middleware/request-id.js'
import { inSeries } from './middleware/series.js'
import { textGuard } from './middleware/text.js'
import { registerAgentRoutes } from './routes/agents.js'
import { registerDestinationRoutes } from './routes/destinations.js'
import { registerIngestRoutes } from './routes/ingest.js'
import { registerMetaRoutes } from './routes/meta.js'
import { registerRunRoutes } from './routes/runs.js'
import { registerSlackInteractionRoute } from './routes/slack-interactions.js'
import { registerToolRoutes } from './routes/tools.js'
import { registerWebhookRoutes } from './routes/webhooks.js'

/** What the REST app uses: the services its middleware and routes call, two settings and the error log. */
export type HttpServices = Pick<
  Services,
  | 'db'
  | 'keys'
  | 'limits'
  | 'idempotency'
  | 'agents'
  | 'tasks'
  | 'tools'
  | 'ingestion'
  | 'runs'
  | 'webhooks'
  | 'destinations'
  | 'slackInteractions'
  | 'metrics'
> & {
  config: Pick<Config, 'corsOrigins' | 'maxBodyBytes'>
  logger: Pick<Services['logger'], 'error'>
}

/**
 * Routes another transport serves over this app's HTTP (GraphQL), mounted by the composition root (src/transports.ts),
 * which hands that transport its own services.
 */
export type RouteMount = (app: OpenAPIHono<AppEnv>) => void

export interface HttpAppOptions {
  /** Routes of other transports served over this app (GraphQL over HTTP). */
  mounts?: readonly RouteMount[]
  /** Told once per request (metrics, request log); nothing is mounted for the default. */
  observer?: SurfaceObserver
  /** Which POSTs of the mounted transports only read (GraphQL queries): they are not keyed (IdempotencyOptions). */
  postKind?: (path: string, body: string) => 'read' | 'write' | undefined
  /** How often a run's SSE trace reads the run again without a wake-up, in ms (default 1000). */
  tracePollMs?: number
}

/**
 * The reference server's HTTP side. Middleware is applied once, in this order: request id and observation in one
 * layer (the surface observer: metrics and the request log, which see every answer; no observation for the default
 * observer) → auth, rate limit, text guard, body guard (bodies only) and idempotency (POST only) in one layer → validated routes.
 * Errors from anywhere become the spec §7 envelope.
 */
export function createHttpApp(services: HttpServices, options: HttpAppOptions = {}): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })

  // The request id, observed (metrics and the request log see every answer) unless the observer is the default.
  const observer = options.observer ?? NO_OBSERVER
  app.use('*', observer === NO_OBSERVER ? requestId() : observeRequests(observer))
  const corsMiddleware = cors(services.config.corsOrigins ?? [])
  if (corsMiddleware) app.use('*', corsMiddleware)
  app.onError((err, c) => {
    const apiError = toApiError(err)
    closeUnreadBody(c, services.config.maxBodyBytes)
    if (apiError.code === 'internal_error') {
      services.logger.error(
        { err, req_id: c.get('requestId'), method: c.req.method, route: routeTemplate(c) },
        'request failed',
      )
    }
    return errorResponse(c, apiError)
  })
  app.notFound((c) => {
    closeUnreadBody(c, services.config.maxBodyBytes)
    const allow = allowedMethods(c.req.path)
    if (allow === undefined)
      return errorResponse(c, new ApiError('not_found', 'No such endpoint', { path: c.req.path }))
    return errorResponse(c, methodNotAllowed(c.req.path, c.req.method, allow))
  })

  const limitMetrics = services.metrics?.limits
  // One layer, five steps in series (Hono awaits every layer in an async dispatch of its own). Everything under /v1
  // needs a key here; the stream's upgrade never reaches the app (src/stream authenticates it), only its plain GET
  // does, which takes `?access_token=` like the upgrade. The text guard comes after auth and rate limit (so its 400
  // carries the rate-limit headers like every answer), before anything stores; the body guard concerns the methods
  // with a body, idempotency POSTs, and each passes every other request on at its first test.
  app.use(
    '/v1/*',
    inSeries(
      auth(services.keys, STREAM_PATH),
      rateLimit(services.limits, limitMetrics && ((tier) => limitMetrics.rateLimited(tier))),
      textGuard(),
      bodyGuard(services.config.maxBodyBytes),
      idempotency(services.idempotency, {
        countAnswer: limitMetrics && ((answer) => limitMetrics.idempotency(answer)),
        writesOnlyOperations: AGENT_WRITES_ONLY_OPERATIONS,
        postKind: options.postKind,
      }),
    ),
  )

  registerMetaRoutes(app, services)
  registerAgentRoutes(app, services)
  registerToolRoutes(app, services)
  registerIngestRoutes(app, services)
  registerRunRoutes(app, services, options.tracePollMs)
  registerWebhookRoutes(app, services)
  registerDestinationRoutes(app, services)
  registerSlackInteractionRoute(app, services)
  for (const mount of options.mounts ?? []) mount(app)

  return app
}
