/**
 * The surface observer of the reference server: every HTTP request once into the request histogram (route
 * template × method × status class), its error code, the in-flight gauge and one request log line; sockets opening
 * and closing into the open-sockets gauge. The transports report through `SurfaceObserver` (src/surface/observe.ts)
 * and know nothing of Prometheus or pino.
 *
 * Hot path: what a request touches is bound once per route template × method (RouteObserver): the prom-client
 * histogram children (by status class) and a pino child logger carrying `method` and `route` already serialised, so
 * a request builds no label object and no closure here and its log line serialises only what differs per request.
 * The log line is built only when `info` is enabled.
 */
import {
  NO_OBSERVER,
  type RequestObservation,
  type SocketTransport,
  type SurfaceObserver,
} from '../surface/observe.js'
import type { Logger } from './logger.js'
import type { HttpMetrics, Metrics, RouteSeries, SocketMetrics } from './metrics.js'

/** The series and the log of one route template and method, bound on its first request. */
interface RouteObserver {
  readonly series: RouteSeries | undefined
  readonly log: Logger | undefined
}

class ServerObserver implements SurfaceObserver {
  private readonly http: HttpMetrics | undefined
  private readonly stream: SocketMetrics | undefined
  private readonly graphql: SocketMetrics | undefined
  /** By route template, then method: both bounded (templates, and the methods Node's parser accepts). */
  private readonly routes = new Map<string, Map<string, RouteObserver>>()

  constructor(
    metrics: Metrics | undefined,
    private readonly logger: Logger | undefined,
  ) {
    this.http = metrics?.http
    this.stream = metrics?.stream
    this.graphql = metrics?.graphql
  }

  requestStarted(): void {
    if (this.http) this.http.inFlight += 1
  }

  request(o: RequestObservation): void {
    const route = this.route(o.method, o.route)
    const http = this.http
    if (http) {
      http.inFlight -= 1
      route.series?.observe(o.status, o.durationMs / 1000)
      if (o.errorCode !== undefined) http.error(o.errorCode)
    }
    // Named fields only: never a token, a body or a signature. `method` and `route` are the child's bindings.
    route.log?.info(
      {
        req_id: o.requestId,
        status: o.status,
        duration_ms: Math.round(o.durationMs * 100) / 100,
        workspace_id: o.workspaceId,
        key_id: o.keyId,
      },
      'request',
    )
  }

  socket(transport: SocketTransport, event: 'open' | 'close'): void {
    const sockets = transport === 'stream' ? this.stream : this.graphql
    if (sockets) sockets.open += event === 'open' ? 1 : -1
  }

  private route(method: string, template: string): RouteObserver {
    let byMethod = this.routes.get(template)
    if (!byMethod) {
      byMethod = new Map()
      this.routes.set(template, byMethod)
    }
    let route = byMethod.get(method)
    if (!route) {
      route = {
        series: this.http?.route(method, template),
        log: this.logger?.child({ method, route: template }),
      }
      byMethod.set(method, route)
    }
    return route
  }
}

/**
 * The observer for the server's metrics and log, or NO_OBSERVER (no middleware mounted at all) when metrics are
 * off and the log does not write request lines (a level above `info`).
 */
export function createSurfaceObserver(metrics: Metrics | undefined, logger: Logger): SurfaceObserver {
  const logging = logger.isLevelEnabled('info')
  if (!metrics && !logging) return NO_OBSERVER
  return new ServerObserver(metrics, logging ? logger : undefined)
}
