import { performance } from 'node:perf_hooks'
import type { Context } from 'hono'
import { createMiddleware } from 'hono/factory'
import { routePath } from 'hono/route'
import type { AppEnv } from '../../surface/context.js'
import { type SurfaceObserver, UNMATCHED_ROUTE } from '../../surface/observe.js'
import { answerWithRequestId } from './request-id.js'

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
 * mounted on `*` and `/v1/*`), or `unmatched`. Never the request's path, whose ids are unbounded. Unlike
 * `routePath(c)` (the handler running now: `/v1/*` for a request the auth middleware refused), this names the
 * route the request was for, whoever answered it.
 */
export function routeTemplate(c: Context): string {
  const path = routePath(c, -1)
  return path ? templateOf(path) : UNMATCHED_ROUTE
}

function report(observer: SurfaceObserver, c: Context<AppEnv>, started: number): void {
  const auth = c.get('auth')
  const status = c.res.status
  observer.request({
    method: c.req.method,
    route: routeTemplate(c),
    status,
    durationMs: performance.now() - started,
    requestId: c.get('requestId'),
    workspaceId: auth?.workspaceId,
    keyId: auth?.keyId,
    errorCode: status >= 400 ? c.get('errorCode') : undefined,
  })
}

/**
 * The request id middleware with observation: gives the request its id (./request-id.ts) and reports it to the
 * surface observer once its answer is ready, thrown errors included (Hono's onError has rendered them into `c.res`
 * by the time `next()` returns). One layer instead of two (a middleware layer and its promise hop are part of what
 * observation costs a cached GET: bench:observability); it runs first, so it sees what every other middleware
 * answered. The time is until the answer is ready to write: a live stream (SSE) counts until its head.
 */
export const observeRequests = (observer: SurfaceObserver) =>
  createMiddleware<AppEnv>(async (c, next) => {
    const started = performance.now()
    observer.requestStarted()
    try {
      await answerWithRequestId(c, next)
    } finally {
      report(observer, c, started)
    }
  })
