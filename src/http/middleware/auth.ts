import type { Context, Next } from 'hono'
import { unauthenticated } from '../../domain/errors.js'
import type { KeyRefusal } from '../../domain/identity.js'
import type { KeyService, VerifiedKey } from '../../domain/keys/service.js'
import { callerFromKey } from '../../surface/caller.js'
import type { AppEnv } from '../../surface/context.js'
import { requestHeader } from '../../surface/request-headers.js'
import type { Step } from './series.js'

/**
 * Resolves the bearer token into the caller's workspace, identity and scopes (spec §5). On `queryTokenPath` (the
 * stream, whose browsers cannot set headers) the token may also come as `?access_token=`, as at its upgrade; that
 * path's plain GET is then counted and answered like any authenticated request. A plain comparison, not
 * `hono/combine`'s `except`: that wraps every request in three more async layers, a measurable share of a cached GET.
 */
export const auth =
  (keys: Pick<KeyService, 'verifyCached' | 'verifyRequest'>, queryTokenPath?: string): Step =>
  (c, next) => {
    const authorization = requestHeader(c, 'authorization')
    const credentials =
      c.req.path === queryTokenPath
        ? { authorization, accessToken: c.req.query('access_token') }
        : { authorization }
    // A key in the verified-key cache is checked without a promise; only a cache miss waits for the store.
    const verified = keys.verifyCached(credentials)
    if (verified === undefined) return keys.verifyRequest(credentials).then((v) => admit(c, v, next))
    return admit(c, verified, next)
  }

function admit(c: Context<AppEnv>, verified: VerifiedKey | KeyRefusal, next: Next): Promise<void> {
  if (typeof verified === 'string') throw unauthenticated(verified)
  c.set('auth', callerFromKey(verified))
  return next()
}
