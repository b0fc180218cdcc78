import { createMiddleware } from 'hono/factory'
import { ApiError } from '../../domain/errors.js'
import { rateLimitHeader, rateLimitPolicyHeader } from '../../domain/limits/rate-limit.js'
import type { RateDecision } from '../../domain/limits/service.js'
import type { Services } from '../../services.js'
import type { AppEnv } from '../context.js'
import { errorResponse } from '../errors.js'

function setHeaders(headers: Headers, decision: RateDecision): void {
  headers.set('RateLimit-Policy', rateLimitPolicyHeader(decision.states))
  headers.set('RateLimit', rateLimitHeader(decision.states))
}

/**
 * Per-workspace burst and hourly windows (spec §8), shared through the store by every key and replica.
 * Every authenticated response, success or error, carries both figures; a refusal is 429 rate_limited with
 * Retry-After and the window in `detail`.
 */
export const rateLimit = (services: Services) =>
  createMiddleware<AppEnv>(async (c, next) => {
    const auth = c.get('auth')
    if (!auth) return next() // public or stream upgrade: nothing to bill
    const decision = await services.limits.consume(auth.workspace)
    if (!decision.allowed && decision.refusedBy) {
      const w = decision.refusedBy
      const resetAt = new Date(w.windowStart + w.windowSeconds * 1000).toISOString()
      const res = errorResponse(
        c,
        new ApiError(
          'rate_limited',
          `The workspace used its ${w.quota} requests of the ${w.name} window; retry in ${w.resetSeconds} s`,
          {
            window: w.name,
            limit: w.quota,
            window_seconds: w.windowSeconds,
            reset_at: resetAt,
            retry_after_seconds: w.resetSeconds,
          },
          { 'Retry-After': String(w.resetSeconds) },
        ),
      )
      setHeaders(res.headers, decision)
      return res
    }
    await next()
    setHeaders(c.res.headers, decision)
  })
