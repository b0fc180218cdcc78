import { GraphQLError, type GraphQLFormattedError } from 'graphql'
import { ApiError } from '../domain/errors.js'
import type { FailureLog } from '../domain/failure-log.js'

/**
 * GraphQL errors carry the spec §7 envelope in `extensions` (`code`, `status`, `detail`, `request_id`), so a client
 * handles a `policy_denied` or `not_found` the same way whichever surface answered.
 */
export function formatError(
  err: GraphQLError,
  requestId: string,
  failures: FailureLog,
): GraphQLFormattedError {
  const original = err.originalError
  let api: ApiError
  if (original instanceof ApiError) api = original
  else if (original instanceof GraphQLError) return formatError(original, requestId, failures)
  // Unreachable from outside: only a resolver's unexpected failure (a bug, a store that throws) is an original error
  // neither ApiError nor GraphQLError (its `false` variant stays a survivor: a directive before `else if` binds to nothing).
  else if (original) {
    failures.error({ err: original, req_id: requestId }, 'graphql resolver failed')
    // Stryker disable next-line StringLiteral: unreachable from outside (see above): the internal_error of an unexpected resolver failure.
    api = new ApiError('internal_error', 'The server failed unexpectedly; retry with backoff and jitter')
  } else {
    // A document error (syntax, validation, limits): the request is wrong, not the server.
    const ext = err.extensions as { code?: unknown; detail?: unknown }
    api = new ApiError(
      'invalid_request',
      err.message,
      typeof ext.detail === 'object' && ext.detail !== null ? (ext.detail as Record<string, unknown>) : {},
    )
  }
  const formatted = err.toJSON()
  return {
    message: api.code === 'internal_error' ? api.message : formatted.message,
    ...(formatted.locations ? { locations: formatted.locations } : {}),
    ...(formatted.path ? { path: formatted.path } : {}),
    extensions: { code: api.code, status: api.status, detail: api.detail, request_id: requestId },
  }
}

/** A refusal of the whole document (limits), shaped like graphql-js's own validation errors. */
export function documentError(message: string, detail: Record<string, unknown>): GraphQLError {
  return new GraphQLError(message, { extensions: { detail } })
}
