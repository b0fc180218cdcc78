import { ApiError } from './errors.js'

/**
 * How deeply any JSON a client sends may nest (a request body, a stream message, GraphQL variables and literals),
 * counting the outermost value as 1. Every free-form value (a run's `inputs`, a tool's `config`, a record's `body`)
 * lies inside one of them, so each is bounded too. Far above what any real document needs, far below what breaks a
 * reader: a value nested ~4,000 deep was stored, then answered 500 on every read (recursive serialisation ran out
 * of stack), and 100,000 deep failed at once.
 */
export const MAX_JSON_DEPTH = 64

/**
 * The dotted path of the first value nested deeper than `max` (depth first), or undefined. Iterative, so no depth
 * exhausts the call stack while checking.
 */
export function tooDeepAt(value: unknown, max = MAX_JSON_DEPTH, path = ''): string | undefined {
  const pending: { value: unknown; depth: number; path: string }[] = [{ value, depth: 1, path }]
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const current = next.value
    if (typeof current !== 'object' || current === null) continue
    if (next.depth > max) return next.path
    for (const [key, inner] of Object.entries(current)) {
      if (typeof inner === 'object' && inner !== null)
        pending.push({ value: inner, depth: next.depth + 1, path: next.path ? `${next.path}.${key}` : key })
    }
  }
  return undefined
}

/** 400 naming the limit: the value at `path` inside `where` nests deeper than MAX_JSON_DEPTH. */
export function tooDeepError(where: string, path: string): ApiError {
  const at = path ? `${where}.${path}` : where
  return new ApiError('invalid_request', `The JSON at ${at} nests deeper than ${MAX_JSON_DEPTH} levels`, {
    issues: [{ path: at, message: `nests deeper than ${MAX_JSON_DEPTH} levels (limit max_json_depth)` }],
    fields: [at],
    limit: 'max_json_depth',
    max_depth: MAX_JSON_DEPTH,
  })
}
