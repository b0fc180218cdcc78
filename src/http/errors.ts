import type { Context } from 'hono'
import { HTTPException } from 'hono/http-exception'
import type { ContentfulStatusCode } from 'hono/utils/http-status'
import { ApiError, ERROR_CATALOGUE, type ErrorCode, errorEnvelope } from '../domain/errors.js'
import type { AppEnv } from '../surface/context.js'
import type { ErrorBody } from '../surface/contract-types.js'
import { jsonBodyRequired } from '../surface/validation.js'

/** Renders an ApiError as the spec §7 envelope, with its status and headers. */
export function errorResponse(c: Context<AppEnv>, err: ApiError): Response {
  for (const [name, value] of Object.entries(err.headers)) c.header(name, value)
  // Stryker disable next-line StringLiteral: the code kept for the request log and metrics (observe.ts), no answer of the API.
  c.set('errorCode', err.code)
  // Stryker disable next-line StringLiteral: defence in depth: the request id middleware runs first on every request, so the id is always there.
  const body: ErrorBody = errorEnvelope(err, c.get('requestId') ?? '')
  return c.json(body, err.status as ContentfulStatusCode)
}

/** Anything thrown becomes an envelope; only real bugs become 500, and they never leak internals. */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err
  // Stryker disable next-line ConditionalExpression,LogicalOperator: equivalent: the validator's malformed-JSON refusal is the only HTTPException the reference's routes throw, so loosening this test changes no answer.
  if (err instanceof HTTPException && err.message === 'Malformed JSON in request body') {
    // Hono's validator met a required body that is absent (the body guard already refused malformed ones).
    return jsonBodyRequired()
  }
  // Stryker disable all: defence in depth: no middleware or route of the reference throws another HTTPException
  // (the body guard, the validation hook and the routes throw ApiError), and only a bug of the reference reaches the
  // 500 below, which no correct run of the suite can provoke.
  if (err instanceof HTTPException) {
    const status = err.status
    const code = (Object.keys(ERROR_CATALOGUE) as ErrorCode[]).find(
      (k) => ERROR_CATALOGUE[k].status === status,
    )
    if (code && status < 500) return new ApiError(code, err.message || ERROR_CATALOGUE[code].meaning)
  }
  return new ApiError('internal_error', 'The server failed unexpectedly; retry with backoff and jitter')
  // Stryker restore all
}
