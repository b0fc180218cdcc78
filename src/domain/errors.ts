/**
 * The one catalogue of error codes. The OpenAPI document lists the same codes under `x-error-codes`
 * (a test keeps the two equal). Handlers and middleware throw ApiError; the HTTP layer renders the
 * spec §7 envelope `{"error":{"code","message","detail","request_id"}}`.
 */
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
