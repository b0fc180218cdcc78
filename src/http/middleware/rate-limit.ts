import { createMiddleware } from 'hono/factory'
import { rateLimited } from '../../domain/errors.js'
import { rateLimitHeader, rateLimitPolicyHeader } from '../../domain/limits/rate-limit.js'
import type { RateDecision } from '../../domain/limits/service.js'
import type { Services } from '../../services.js'
import type { AppEnv } from '../context.js'
import { errorResponse } from '../errors.js'
import { withAnswerHeaders } from '../node-io.js'

const NAMES = ['RateLimit-Policy', 'RateLimit']

function valuesOf(decision: RateDecision): string[] {
  return [rateLimitPolicyHeader(decision.policies), rateLimitHeader(decision.states)]
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
    // Counters in memory (the embedded store) decide without a promise; shared counters wait for the store.
    const decision =
      services.limits.consumeNow(auth.workspace) ?? (await services.limits.consume(auth.workspace))
    const values = valuesOf(decision)
    if (!decision.allowed && decision.refusedBy) {
      const res = errorResponse(c, rateLimited(decision.refusedBy))
      for (let i = 0; i < NAMES.length; i++) res.headers.set(NAMES[i] as string, values[i] as string)
      return res
    }
    return withAnswerHeaders(c, NAMES, values, next)
  })
