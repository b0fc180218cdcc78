import type { Context, Next } from 'hono'
import { ApiError } from '../../domain/errors.js'
import { fingerprint, REPLAYED_HEADERS, validateKey } from '../../domain/idempotency/key.js'
import type { IdempotencyService } from '../../domain/idempotency/service.js'
import type { StoredResponse } from '../../domain/idempotency/types.js'
import type { AppEnv } from '../../surface/context.js'
import { postPathsOf } from '../../surface/operations.js'
import { requestHeader } from '../../surface/request-headers.js'
import type { Step } from './series.js'

/** A keyed request answered without running it: a replay, or one of the two 409s. */
export type KeyedAnswer = 'replayed' | 'conflict' | 'in_progress'

/** What `captureJson` saw of the route's answer. */
interface Captured {
  /** The JSON text of the last `c.json` answer, and the Response it made. */
  text?: string
  res?: Response
  /** Whether that call named no headers (`c.json(object)` or `c.json(object, status)`). */
  plain?: boolean
  /** Whether `c.header` was called since the key was claimed. */
  headerSet?: boolean
}

/** What a plain `c.json` answer carries of REPLAYED_HEADERS (its content type), worked out once. */
const JSON_ANSWER_HEADERS: Readonly<Record<string, string>> = replayedHeaders(
  new Headers({ 'content-type': 'application/json' }),
)

/**
 * Remembers the JSON text of the last `c.json` answer and the Response it made. The object is stringified once
 * more here (the same object gives the same text): for an answer's size that is far cheaper than reading the text
 * back out of the Response. It also notes whether the answer's headers are known without reading them (see
 * `storedAnswer`).
 */
function captureJson(c: Context<AppEnv>): Captured {
  const captured: Captured = {}
  const json = c.json
  const header = c.header
  c.header = ((...args: Parameters<typeof header>) => {
    captured.headerSet = true
    return header(...args)
  }) as typeof c.header
  c.json = ((object: unknown, ...rest: unknown[]) => {
    const res = (json as (o: unknown, ...r: unknown[]) => Response)(object, ...rest)
    captured.text = JSON.stringify(object)
    captured.res = res
    captured.plain = rest.length <= 1 && (rest[0] === undefined || typeof rest[0] === 'number')
    return res
  }) as typeof c.json
  return captured
}

/**
 * `Idempotency-Key` on every POST (spec §8; IETF draft-ietf-httpapi-idempotency-key-header): the first request
 * claims the key, its non-5xx answer is stored for 24 h and replayed byte for byte to identical repeats. A
 * different request with the key is 409 idempotency_key_reused; a repeat while the first runs is 409
 * idempotency_key_in_progress (no waiting, so a client never hangs on a stuck request).
 *
 * The route runs inside the key's unit of work (IdempotencyService.once): whatever it writes commits with its answer,
 * so a crash at any point leaves the key unclaimed with nothing done, or answered with the effect.
 */
export interface IdempotencyOptions {
  /** Told of each request answered without running it (the server's metrics). */
  countAnswer?: ((answer: KeyedAnswer) => void) | undefined
  /**
   * The contract's operations (operationId) whose work writes only, as the domain declares them
   * (IdempotencyService.once's `writesOnly`).
   */
  writesOnlyOperations?: readonly string[]
  /**
   * Whether a POST only reads, from its path and body (GraphQL queries, told by the GraphQL transport): a read is not
   * keyed at all (its Idempotency-Key is ignored: nothing is stored, a retry runs the read again and changes
   * nothing), so a read-only key cannot grow the store with answers.
   */
  postKind?: ((path: string, body: string) => 'read' | 'write' | undefined) | undefined
}

export const idempotency = (
  service: Pick<IdempotencyService, 'once'>,
  options: IdempotencyOptions = {},
): Step => {
  const writesOnly = postPathsOf(options.writesOnlyOperations ?? [])
  return (c, next) => {
    if (c.req.method !== 'POST') return next()
    const key = requestHeader(c, 'idempotency-key')
    if (key === undefined) return next()
    validateKey(key)
    return keyed(c, next, key, service, options, writesOnly.has(c.req.path))
  }
}

/**
 * A keyed POST: runs the rest of the chain inside the key's unit of work, or answers without running it. A replay
 * or a refusal is the step's own answer (`c.res`, or a thrown ApiError), as a step of a series gives it.
 */
async function keyed(
  c: Context<AppEnv>,
  next: Next,
  key: string,
  service: Pick<IdempotencyService, 'once'>,
  options: IdempotencyOptions,
  writesOnly: boolean,
): Promise<void> {
  const auth = c.get('auth')
  const text = await c.req.text()
  if (options.postKind?.(c.req.path, text) === 'read') return next()
  // The body guard (before this) parsed a body once and keeps the parse: reused, not parsed again.
  const print = fingerprint(
    c.req.method,
    c.req.path,
    text,
    text.trim() === '' ? undefined : await c.req.json(),
  )
  const answered = captureJson(c)
  const outcome = await service.once(
    auth.workspaceId,
    key,
    print,
    async () => {
      await next()
      return {
        response: await storedAnswer(c, answered),
        failed: c.error !== undefined || c.res.status >= 500,
        code: c.error instanceof ApiError ? c.error.code : undefined,
      }
    },
    // The workspace's quotas bound the answers the key keeps.
    { writesOnly, quota: { workspace: auth.workspace } },
  )
  if (outcome.kind === 'answered' || outcome.kind === 'unanswered') return
  if (outcome.fingerprint !== print) {
    options.countAnswer?.('conflict')
    throw new ApiError('idempotency_key_reused', 'This Idempotency-Key was used with a different request', {
      header: 'Idempotency-Key',
    })
  }
  if (outcome.kind === 'in_progress') {
    options.countAnswer?.('in_progress')
    throw new ApiError(
      'idempotency_key_in_progress',
      'A request with this Idempotency-Key is still being processed; retry later',
      { header: 'Idempotency-Key' },
      { 'Retry-After': '1' },
    )
  }
  options.countAnswer?.('replayed')
  const headers = new Headers(outcome.response.headers)
  headers.set('Idempotent-Replayed', 'true')
  // After this request's own work (it lost a race with another holder of the key), its answer gives way.
  c.res = undefined
  c.res = new Response(outcome.response.status === 204 ? null : outcome.response.body, {
    status: outcome.response.status,
    headers,
  })
}

/**
 * The answer the route gave, as the key stores it. The body is the text the handler's c.json produced when that is
 * the answer, and the answer then goes out untouched. Any other answer is read here (its body is consumed), so it
 * goes out again as that text rather than a clone's tee'd stream: the server writes it in one piece, as it does for
 * any JSON answer.
 */
async function storedAnswer(c: Context<AppEnv>, answered: Captured): Promise<StoredResponse> {
  const answer = c.res
  const captured = answered.res === answer ? answered.text : undefined
  const body = captured ?? (await answer.text())
  // A plain c.json answer with no c.header call carries JSON_ANSWER_HEADERS (the layers before this one set none of
  // REPLAYED_HEADERS): known without reading the Response's headers, which would build a Fetch Headers for
  // @hono/node-server's lightweight Response on every keyed answer, and make the server write its head from it.
  const headers =
    captured !== undefined && answered.plain === true && answered.headerSet !== true
      ? { ...JSON_ANSWER_HEADERS }
      : replayedHeaders(answer.headers)
  if (captured === undefined) {
    c.res = undefined
    c.res = new Response(answer.status === 204 ? null : body, {
      status: answer.status,
      headers: answer.headers,
    })
  }
  return { status: answer.status, headers, body }
}

/** The REPLAYED_HEADERS among an answer's headers. */
function replayedHeaders(answer: Headers): Record<string, string> {
  const headers: Record<string, string> = {}
  for (const name of REPLAYED_HEADERS) {
    const value = answer.get(name)
    if (value !== null) headers[name] = value
  }
  return headers
}
