import { createMiddleware } from 'hono/factory'
import type { Services } from '../../services.js'
import type { AppEnv } from '../context.js'

/** Placeholder: per-workspace rate limiting lands with the limits feature. */
export const rateLimit = (_services: Services) =>
  createMiddleware<AppEnv>(async (_c, next) => {
    await next()
  })
