import type { Context } from 'hono'
import { OPERATION_SCOPES } from '../../generated/contract.js'
import { type ApiError, policyDenied } from '../domain/errors.js'
import { scopeAllows } from '../domain/scopes.js'
import type { AuthContext } from './caller.js'
import type { AppEnv } from './context.js'

/**
 * The one home of the missing-scope refusal: a call outside the key's scopes is a policy-gate refusal
 * (403 policy_denied) with the spec §7 detail, on every surface (REST, GraphQL, the stream's topics and ingest).
 */
export function missingScope(held: readonly string[], scope: string): ApiError {
  return policyDenied(`This key lacks the scope "${scope}"`, {
    envelope: 'api_key',
    violation: 'missing_scope',
    observed: [...held],
    limit: [scope],
    escalation_queue: 'workspace-admins',
  })
}

/** The caller, when its key holds `scope`; else the missing-scope refusal. */
export function assertScope(auth: AuthContext, scope: string): AuthContext {
  if (!scopeAllows(auth.scopes, scope)) throw missingScope(auth.scopes, scope)
  return auth
}

/** An operation of the contract that needs a scope (its `security` requirement names it). */
export type ScopedOperation = keyof typeof OPERATION_SCOPES

/** The caller, when its key holds the scope the contract names for `operation`; else the missing-scope refusal. */
export function assertScopeOf(auth: AuthContext, operation: ScopedOperation): AuthContext {
  return assertScope(auth, OPERATION_SCOPES[operation])
}

/** assertScopeOf for a Hono route: the caller the auth middleware put on the context. */
export function requireScopeOf(c: Context<AppEnv>, operation: ScopedOperation): AuthContext {
  return assertScopeOf(c.get('auth'), operation)
}
