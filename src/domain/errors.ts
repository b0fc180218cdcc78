/**
 * The one catalogue of error codes, the constructors of the errors more than one place raises, and the spec §7
 * envelope `{"error":{"code","message","detail","request_id"}}` that both the HTTP side and the stream render.
 * The OpenAPI document lists the same codes under `x-error-codes` (a test keeps the two equal).
 */
import type { KeyRefusal } from './identity.js'
import type { WindowState } from './limits/rate-limit.js'

export const ERROR_CATALOGUE = {
  invalid_request: { status: 400, title: 'The request does not match the schema or is malformed.' },
  invalid_cursor: {
    status: 400,
    title: 'The pagination cursor is not one this server issued for this list.',
  },
  invalid_idempotency_key: {
    status: 400,
    title: 'The Idempotency-Key header is empty, too long or not printable ASCII.',
  },
  unauthenticated: {
    status: 401,
    title: 'The bearer token is missing, malformed, unknown, revoked or expired.',
  },
  policy_denied: { status: 403, title: 'The policy gate refused the action.' },
  not_found: { status: 404, title: 'The resource does not exist or is outside the calling identity.' },
  idempotency_key_reused: {
    status: 409,
    title: 'The Idempotency-Key was already used with a different request.',
  },
  idempotency_key_in_progress: {
    status: 409,
    title: 'A request with this Idempotency-Key is still being processed.',
  },
  invalid_state: { status: 409, title: 'The action is not allowed in the resource’s current state.' },
  already_exists: { status: 409, title: 'A resource with this unique name already exists.' },
  payload_too_large: { status: 413, title: 'The body or the batch is larger than the documented limit.' },
  unsupported_media_type: { status: 415, title: 'The request body must be application/json.' },
  rate_limited: { status: 429, title: 'The workspace exceeded a rate-limit window.' },
  internal_error: { status: 500, title: 'The server failed unexpectedly; retry with backoff and jitter.' },
  unavailable: {
    status: 503,
    title: 'The service is temporarily unavailable; retry with backoff and jitter.',
  },
} as const

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

/** 429 for the window that refused the request (REST and socket ingestion alike). */
export function rateLimited(w: WindowState): ApiError {
  return new ApiError(
    'rate_limited',
    `The workspace used its ${w.quota} requests of the ${w.name} window; retry in ${w.resetSeconds} s`,
    {
      window: w.name,
      limit: w.quota,
      window_seconds: w.windowSeconds,
      reset_at: new Date(w.windowStart + w.windowSeconds * 1000).toISOString(),
      retry_after_seconds: w.resetSeconds,
    },
    { 'Retry-After': String(w.resetSeconds) },
  )
}

export interface ErrorEnvelope {
  error: { code: ErrorCode; message: string; detail: ErrorDetail; request_id: string }
}

/** The spec §7 body of an error; `request_id` is the response's X-Request-Id. */
export function errorEnvelope(err: ApiError, requestId: string): ErrorEnvelope {
  return { error: { code: err.code, message: err.message, detail: err.detail, request_id: requestId } }
}
