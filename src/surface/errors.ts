import { ApiError } from '../domain/errors.js'

/** What every surface says when the server itself failed: never the internals. */
export function internalError(): ApiError {
  return new ApiError('internal_error', 'The server failed unexpectedly; retry with backoff and jitter')
}

/** What every surface says when a store or other dependency cannot be reached now. */
export function unavailable(): ApiError {
  return new ApiError('unavailable', 'The service is temporarily unavailable; retry with backoff and jitter')
}

/**
 * What every surface says to a request whose target or Host header is no URL (an absolute form such as `http://[x`,
 * which Node's parser lets through): the request cannot be routed, so it is refused before any route sees it.
 */
export function unreadableTarget(): ApiError {
  return new ApiError('invalid_request', 'The request target or Host header is not a valid URL', {
    issues: [],
    fields: [],
  })
}
