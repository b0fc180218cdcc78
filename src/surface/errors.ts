import { ApiError } from '../domain/errors.js'

/** What every surface says when the server itself failed: never the internals. */
export function internalError(): ApiError {
  return new ApiError('internal_error', 'The server failed unexpectedly; retry with backoff and jitter')
}

/** What every surface says when a store or other dependency cannot be reached now. */
export function unavailable(): ApiError {
  return new ApiError('unavailable', 'The service is temporarily unavailable; retry with backoff and jitter')
}
