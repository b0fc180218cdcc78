import type { MiddlewareHandler } from 'hono'
import { cors as honoCors } from 'hono/cors'

/**
 * CORS for browser apps on other origins (`AGENTOPS_CORS_ORIGINS`). Off when no origin is configured. Mounted before
 * authentication, because a browser's preflight never carries the Authorization header: it is answered (204) here.
 * The API authenticates with bearer keys, never cookies, so credentials mode stays off even for `*`.
 */
export function cors(origins: readonly string[]): MiddlewareHandler | undefined {
  if (origins.length === 0) return undefined
  return honoCors({
    origin: origins.includes('*') ? '*' : [...origins],
    allowMethods: ['GET', 'POST', 'DELETE', 'OPTIONS'],
    allowHeaders: ['Authorization', 'Content-Type', 'Idempotency-Key', 'Last-Event-ID', 'X-Request-Id'],
    // What a generated client reads from answers: tracing, quotas, retry hints, replays, new resources.
    exposeHeaders: [
      'X-Request-Id',
      'RateLimit',
      'RateLimit-Policy',
      'Retry-After',
      'Idempotent-Replayed',
      'Location',
    ],
    maxAge: 600,
  })
}
