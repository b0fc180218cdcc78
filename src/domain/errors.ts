/**
 * The one catalogue of error codes, the constructors of the errors more than one place raises, and the spec §7
 * envelope `{"error":{"code","message","detail","request_id"}}` that both the HTTP side and the stream render.
 * The codes come from the OpenAPI document's `x-error-codes` (generated/contract.ts).
 */
import { ERROR_CODES } from '../../generated/contract.js'
import type { KeyRefusal } from './identity.js'

/** Every code with its status and meaning: the contract's `x-error-codes`, generated into generated/contract.ts. */
export const ERROR_CATALOGUE = ERROR_CODES

export type ErrorCode = keyof typeof ERROR_CATALOGUE
export type ErrorDetail = Record<string, unknown>

export class ApiError extends Error {
  readonly status: number
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly detail: ErrorDetail = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message)
    // Stryker disable next-line StringLiteral: the Error's name shows only in a stack trace the server logs, never in an answer (§7's envelope is code, message, detail, request_id).
    this.name = 'ApiError'
    this.status = ERROR_CATALOGUE[code].status
  }
}

/** The spec §7 `policy_denied` detail. `observed` and `limit` are JSON values of whatever the violation measures. */
export interface PolicyDeniedDetail extends ErrorDetail {
  envelope: string
  violation: string
  observed: unknown
  limit: unknown
  escalation_queue: string | null
}

export function policyDenied(message: string, detail: PolicyDeniedDetail): ApiError {
  return new ApiError('policy_denied', message, detail)
}

export function notFound(resource: string): ApiError {
  return new ApiError('not_found', `${resource} not found`, {})
}

/** A path served, asked with a method it does not answer: 405 with Allow listing the ones it does (RFC 9110 §15.5.6). */
export function methodNotAllowed(path: string, method: string, allow: readonly string[]): ApiError {
  const methods = allow.join(', ')
  return new ApiError(
    'method_not_allowed',
    `${path} does not answer ${method}; it answers ${methods}`,
    { method, allow: [...allow] },
    { Allow: methods },
  )
}

const REFUSALS: Record<KeyRefusal, string> = {
  missing: 'A bearer token is required: send Authorization: Bearer <API_KEY>',
  malformed: 'The Authorization header is not a well-formed bearer token',
  unknown: 'The bearer token is not valid',
  expired: 'The bearer token has expired',
  revoked: 'The bearer token has been revoked',
}

/** 401 with the RFC 6750 challenge; `error="invalid_token"` only when a token was sent. */
export function unauthenticated(reason: KeyRefusal): ApiError {
  const challenge = reason === 'missing' ? 'Bearer' : 'Bearer error="invalid_token"'
  return new ApiError('unauthenticated', REFUSALS[reason], { reason }, { 'WWW-Authenticate': challenge })
}

export interface ErrorEnvelope {
  error: { code: ErrorCode; message: string; detail: ErrorDetail; request_id: string }
}

/** The spec §7 body of an error; `request_id` is the response's X-Request-Id. */
export function errorEnvelope(err: ApiError, requestId: string): ErrorEnvelope {
  return { error: { code: err.code, message: err.message, detail: err.detail, request_id: requestId } }
}
