import { parseRetryAfter } from './errors.js'

export interface RetryOptions {
  /** Attempts in all, the first included; default 4. */
  attempts?: number
  /** First backoff step in ms (doubling each retry, full jitter); default 250. */
  baseDelayMs?: number
  /** Longest single wait in ms, also the cap on a server's `Retry-After`; default 30000. */
  maxDelayMs?: number
  /** Random source in [0, 1) for the jitter; tests pin it. */
  random?: () => number
  /** How to wait; tests replace it. */
  sleep?: (ms: number, signal?: AbortSignal | null) => Promise<void>
}

const RETRY_STATUSES = new Set([429, 500, 502, 503, 504])

function sleep(ms: number, signal?: AbortSignal | null): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal?.reason)
    }
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

/** Whether an answer is worth repeating: 429, 5xx, and 409 `idempotency_key_in_progress` (which sends Retry-After). */
function retryable(res: Response): boolean {
  return RETRY_STATUSES.has(res.status) || (res.status === 409 && res.headers.has('retry-after'))
}

/**
 * A `fetch` that (1) gives every POST an `Idempotency-Key` (a random UUID unless the caller set one) and keeps it
 * across retries, so a retried POST is never applied twice, and (2) retries 429, 5xx, an in-progress 409 and
 * network failures with exponential backoff and full jitter, waiting at least what `Retry-After` asks.
 */
export function retryingFetch(base: typeof fetch, options: RetryOptions | false = {}): typeof fetch {
  const attempts = options === false ? 1 : Math.max(1, options.attempts ?? 4)
  const baseDelay = options === false ? 0 : (options.baseDelayMs ?? 250)
  const maxDelay = options === false ? 0 : (options.maxDelayMs ?? 30_000)
  const random = (options !== false && options.random) || Math.random
  const wait = (options !== false && options.sleep) || sleep

  return async (input, init) => {
    let request = new Request(input, init)
    if (request.method === 'POST' && !request.headers.has('idempotency-key')) {
      const headers = new Headers(request.headers)
      headers.set('idempotency-key', crypto.randomUUID())
      request = new Request(request, { headers })
    }
    for (let attempt = 1; ; attempt++) {
      const last = attempt >= attempts
      let response: Response
      try {
        response = await base(last ? request : request.clone())
      } catch (error) {
        if (last || request.signal.aborted) throw error
        await wait(backoff(attempt), request.signal)
        continue
      }
      if (last || !retryable(response)) return response
      const asked = parseRetryAfter(response.headers.get('retry-after'))
      await response.body?.cancel()
      await wait(Math.max(backoff(attempt), Math.min(maxDelay, (asked ?? 0) * 1000)), request.signal)
    }
  }

  function backoff(attempt: number): number {
    return Math.floor(random() * Math.min(maxDelay, baseDelay * 2 ** (attempt - 1)))
  }
}

/**
 * The request with a deadline: its signal also aborts after `ms` (with a `TimeoutError` DOMException, what
 * `AbortSignal.timeout` gives), composed with whatever signal the caller passed. `0` (or less) leaves it as it is.
 */
export function withDeadline(request: Request, ms: number): Request {
  if (!(ms > 0)) return request
  return new Request(request, { signal: AbortSignal.any([request.signal, AbortSignal.timeout(ms)]) })
}
