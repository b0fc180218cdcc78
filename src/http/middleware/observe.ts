import { performance } from 'node:perf_hooks'
import type { Context } from 'hono'
import { createMiddleware } from 'hono/factory'
import type { Logger } from '../../observability/logger.js'
import { type HttpMetrics, UNMATCHED_ROUTE } from '../../observability/metrics.js'
import type { AppEnv } from '../context.js'

/** Hono's `/v1/runs/:run_id` as the contract writes it, `/v1/runs/{run_id}`: converted once per route. */
const templates = new Map<string, string>()
function templateOf(honoPath: string): string {
  let template = templates.get(honoPath)
  if (template === undefined) {
    template = honoPath.includes('*') ? UNMATCHED_ROUTE : honoPath.replace(/:([A-Za-z0-9_]+)/g, '{$1}')
    templates.set(honoPath, template)
  }
  return template
}

/**
 * The route template a request matched: the last route Hono matched (routes are registered after the middleware
 * mounted on `*` and `/v1/*`), or `unmatched`. Never the request's path, whose ids are unbounded.
 */
export function routeTemplate(c: Context): string {
  const matched = c.req.matchedRoutes
  const last = matched[matched.length - 1]
  return last ? templateOf(last.path) : UNMATCHED_ROUTE
}

/**
 * Every request once: its latency in the histogram of its route template × method × status class, its error code
 * when it failed, and one log line (request id, method, route template, status, duration, workspace and key id:
 * never a token, a body or a signature). Mounted first, so it sees what every other middleware answered.
 * The time is until the answer is ready to write: a live stream (SSE) counts until its head.
 */
export const observeRequests = (metrics: HttpMetrics | undefined, logger: Logger) => {
  const logging = logger.isLevelEnabled('info')
  return createMiddleware<AppEnv>(async (c, next) => {
    const started = performance.now()
    if (metrics) metrics.inFlight += 1
    try {
      await next()
    } finally {
      if (metrics) metrics.inFlight -= 1
    }
    const ms = performance.now() - started
    const status = c.res.status
    const route = routeTemplate(c)
    const method = c.req.method
    if (metrics) {
      metrics.route(method, route).observe(status, ms / 1000)
      if (status >= 400) {
        const code = c.get('errorCode')
        if (code) metrics.error(code)
      }
    }
    if (logging) {
      const auth = c.get('auth')
      logger.info(
        {
          req_id: c.get('requestId'),
          method,
          route,
          status,
          duration_ms: Math.round(ms * 100) / 100,
          workspace_id: auth?.workspaceId,
          key_id: auth?.keyId,
        },
        'request',
      )
    }
  })
}
