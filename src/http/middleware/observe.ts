import { createMiddleware } from 'hono/factory'
import type { AppEnv } from '../../api/context.js'
import type { SurfaceObserver } from '../../api/observe.js'

/**
 * Reports each request to the surface observer once its answer is ready, thrown errors included (Hono's onError
 * has rendered them into `c.res` by the time `next()` returns). Mounted right after the request id.
 */
export const observeRequests = (observer: SurfaceObserver) =>
  createMiddleware<AppEnv>(async (c, next) => {
    const started = performance.now()
    try {
      await next()
    } finally {
      const auth = c.get('auth')
      observer.request({
        method: c.req.method,
        route: c.req.routePath,
        status: c.res.status,
        durationMs: performance.now() - started,
        requestId: c.get('requestId'),
        workspaceId: auth?.workspaceId,
        keyId: auth?.keyId,
      })
    }
  })
