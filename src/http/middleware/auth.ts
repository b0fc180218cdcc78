import { createMiddleware } from 'hono/factory'
import { callerFromKey } from '../../api/caller.js'
import type { AppEnv } from '../../api/context.js'
import { unauthenticated } from '../../domain/errors.js'
import type { KeyService } from '../../domain/keys/service.js'

/**
 * Resolves the bearer token into the caller's workspace, identity and scopes (spec §5). `exceptPath`
 * authenticates itself (the stream, during its upgrade). A plain comparison, not `hono/combine`'s `except`:
 * that wraps every request in three more async layers, a measurable share of a cached GET.
 */
export const auth = (keys: Pick<KeyService, 'verifyCached' | 'verifyRequest'>, exceptPath?: string) =>
  createMiddleware<AppEnv>(async (c, next) => {
    if (c.req.path === exceptPath) return next()
    const credentials = { authorization: c.req.header('authorization') }
    // A key in the verified-key cache is checked without a promise; only a cache miss waits for the store.
    const verified = keys.verifyCached(credentials) ?? (await keys.verifyRequest(credentials))
    if (typeof verified === 'string') throw unauthenticated(verified)
    c.set('auth', callerFromKey(verified))
    await next()
  })
