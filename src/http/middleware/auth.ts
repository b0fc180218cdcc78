import { createMiddleware } from 'hono/factory'
import { ApiError } from '../../domain/errors.js'
import type { KeyRefusal } from '../../domain/keys/service.js'
import type { Services } from '../../services.js'
import type { AppEnv } from '../context.js'

const MESSAGES: Record<KeyRefusal, string> = {
  missing: 'A bearer token is required: send Authorization: Bearer <API_KEY>',
  malformed: 'The Authorization header is not a well-formed bearer token',
  unknown: 'The bearer token is not valid',
  expired: 'The bearer token has expired',
  revoked: 'The bearer token has been revoked',
}

export function unauthenticated(reason: KeyRefusal): ApiError {
  const challenge = reason === 'missing' ? 'Bearer' : 'Bearer error="invalid_token"'
  return new ApiError('unauthenticated', MESSAGES[reason], { reason }, { 'WWW-Authenticate': challenge })
}

/** Resolves the bearer token into the caller's workspace, identity and scopes (spec §5). */
export const auth = (services: Services) =>
  createMiddleware<AppEnv>(async (c, next) => {
    const verified = await services.keys.verify(c.req.header('authorization'))
    if (typeof verified === 'string') throw unauthenticated(verified)
    c.set('auth', {
      workspaceId: verified.workspace.id,
      keyId: verified.keyId,
      identity: verified.identity,
      scopes: verified.scopes,
      workspace: verified.workspace,
    })
    await next()
  })
