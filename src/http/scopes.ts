import type { Context } from 'hono'
import { policyDenied } from '../domain/errors.js'
import { scopeAllows } from '../domain/scopes.js'
import type { AppEnv, AuthContext } from './context.js'

/** A call outside the key's scopes is a policy-gate refusal (403 policy_denied) with the spec §7 detail. */
export function requireScope(c: Context<AppEnv>, scope: string): AuthContext {
  return assertScope(c.get('auth'), scope)
}

/** requireScope for callers that hold the AuthContext itself (GraphQL resolvers). */
export function assertScope(auth: AuthContext, scope: string): AuthContext {
  if (!scopeAllows(auth.scopes, scope)) {
    throw policyDenied(`This key lacks the scope "${scope}"`, {
      envelope: 'api_key',
      violation: 'missing_scope',
      observed: auth.scopes,
      limit: [scope],
      escalation_queue: 'workspace-admins',
    })
  }
  return auth
}

/** The part of the caller a run or task records (who started it, with which scopes); never the workspace. */
export function callerOf(auth: AuthContext): { keyId: string; identity: string; scopes: string[] } {
  return { keyId: auth.keyId, identity: auth.identity, scopes: auth.scopes }
}
