import { createMiddleware } from 'hono/factory'
import type { Services } from '../../services.js'
import type { AppEnv } from '../context.js'

/** Placeholder: Idempotency-Key handling lands with the limits feature. */
export const idempotency = (_services: Services) =>
  createMiddleware<AppEnv>(async (_c, next) => {
    await next()
  })
