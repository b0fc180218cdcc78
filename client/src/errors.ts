import { KNOWN_ERROR_CODES } from '../generated/contract.gen.js'
import type { ErrorResponse, KnownErrorCode, PolicyDeniedDetail } from '../generated/types.gen.js'

/** An error code: a known one (narrowable) or any other string a newer server may send. */
// `string & {}` keeps editor completion for the known codes while accepting any string.
export type ApiErrorCode = KnownErrorCode | (string & {})

/** What `detail` holds for the codes whose detail the contract describes. */
export interface ErrorDetails {
  policy_denied: PolicyDeniedDetail
  invalid_state: { status: string; action: string; allowed_actions: string[] }
  rate_limited: { window: string; limit: number; reset_at: string; retry_after_seconds: number }
  invalid_request: { issues?: { path?: string; message: string }[]; fields?: string[] }
}
type DetailOf<C> = C extends keyof ErrorDetails ? ErrorDetails[C] : Record<string, unknown>

/**
 * Every non-2xx answer, as thrown by the client: the spec §7 envelope plus the HTTP status and `Retry-After`.
 * Narrow with `error.is('not_found')` (or `isApiError(e, 'not_found')`); codes the client does not know keep their
 * string in `code`, so handle those by `status`.
 */
export class AgentOpsError<C extends ApiErrorCode = ApiErrorCode> extends Error {
  override readonly name = 'AgentOpsError'
  readonly status: number
  readonly code: C
  readonly detail: DetailOf<C>
  readonly requestId: string | undefined
  /** Seconds the server asked to wait (`Retry-After`), when it did. */
  readonly retryAfter: number | undefined

  constructor(
    status: number,
    code: C,
    message: string,
    detail: DetailOf<C>,
    requestId?: string,
    retryAfter?: number,
  ) {
    super(`${status} ${code}: ${message}`)
    this.status = status
    this.code = code
    this.detail = detail
    this.requestId = requestId
    this.retryAfter = retryAfter
  }

  /** True (and narrows `code` and `detail`) when the server sent this code. */
  is<K extends ApiErrorCode>(code: K): this is AgentOpsError<K> {
    return (this.code as string) === code
  }

  /** Whether the code is one the contract lists (`KnownErrorCode`). */
  get known(): boolean {
    return (KNOWN_ERROR_CODES as readonly string[]).includes(this.code)
  }

  /** Builds the error from a response and its parsed body; a body that is not the envelope still gives an error. */
  static fromResponse(response: Response, body: unknown): AgentOpsError {
    const envelope = isEnvelope(body) ? body.error : undefined
    const retryAfter = parseRetryAfter(response.headers.get('retry-after'))
    return new AgentOpsError(
      response.status,
      envelope?.code ?? (response.status >= 500 ? 'internal_error' : 'unknown_error'),
      envelope?.message ??
        (typeof body === 'string' && body !== '' ? body : response.statusText || 'HTTP error'),
      (envelope?.detail ?? {}) as never,
      envelope?.request_id ?? response.headers.get('x-request-id') ?? undefined,
      retryAfter,
    )
  }
}

/** `e` is an API error (with `code`, when given). */
export function isApiError<K extends ApiErrorCode>(e: unknown, code?: K): e is AgentOpsError<K> {
  return e instanceof AgentOpsError && (code === undefined || e.code === code)
}

function isEnvelope(body: unknown): body is ErrorResponse {
  if (typeof body !== 'object' || body === null) return false
  const error = (body as { error?: unknown }).error
  return typeof error === 'object' && error !== null && typeof (error as { code?: unknown }).code === 'string'
}

/** `Retry-After` in seconds: delta-seconds or an HTTP date (RFC 9110 §10.2.3); undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined
  if (/^\d+$/.test(value.trim())) return Number(value.trim())
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000))
}
