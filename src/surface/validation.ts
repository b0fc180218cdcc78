import type { Context } from 'hono'
import { z } from 'zod'
import { ApiError } from '../domain/errors.js'

/**
 * A field a request leaves out is "Required: expected string", not zod's "Invalid input: expected string, received
 * undefined": the most common refusal a client meets, said plainly. Zod's process-wide message setting, so both
 * surfaces whose input zod checks (REST, GraphQL's arguments) say it alike; every other message stays zod's.
 */
z.config({
  customError: (issue) =>
    issue.code === 'invalid_type' && issue.input === undefined
      ? `Required: expected ${issue.expected}`
      : undefined,
})

interface Issue {
  path: PropertyKey[]
  message: string
  code?: string
  keys?: string[]
}

const LOCATION: Record<string, string> = { json: 'body', query: 'query', param: 'path', header: 'header' }

/**
 * @hono/zod-openapi's defaultHook: every request-validation failure becomes 400 invalid_request whose detail
 * names each failing field (`fields`) and why (`issues`), so a client can fix the request without guessing.
 */
export function validationHook(
  result: { success: true } | { success: false; error: { issues: readonly Issue[] }; target?: string },
  c?: Context,
): void {
  if (result.success) return
  const location = LOCATION[result.target ?? 'json'] ?? result.target ?? 'body'
  const repeated = location === 'query' && c ? repeatedParameters(c) : undefined
  const issues = result.error.issues.flatMap((issue) => {
    const base = issue.path.map(String).join('.')
    // A parameter given twice reaches the schema as a list ("expected number, received NaN"): say what happened.
    const times = repeated?.get(base)
    if (times !== undefined) return [{ location, path: base, message: `Given ${times} times; give it once` }]
    // An unknown property is reported by name, so `fields` points at what to remove.
    if (issue.code === 'unrecognized_keys' && issue.keys?.length) {
      return issue.keys.map((key) => ({
        location,
        path: base ? `${base}.${key}` : key,
        message: 'Unknown property',
      }))
    }
    return [{ location, path: base, message: issue.message }]
  })
  const fields = [...new Set(issues.map((i) => i.path || '(root)'))]
  throw new ApiError('invalid_request', `The request ${location} is invalid: ${describe(issues)}`, {
    issues,
    fields,
  })
}

/** Query parameters given more than once, with how many times. */
function repeatedParameters(c: Context): Map<string, number> {
  const repeated = new Map<string, number>()
  for (const [name, values] of Object.entries(c.req.queries()))
    if (values.length > 1) repeated.set(name, values.length)
  return repeated
}

function describe(issues: { path: string; message: string }[]): string {
  const first = issues
    .slice(0, 3)
    .map((i) => (i.path ? `${i.path}: ${i.message}` : i.message))
    .join('; ')
  return issues.length > 3 ? `${first}; and ${issues.length - 3} more` : first
}

/**
 * The refusal of a route whose contract requires a JSON body when the request has none: the typed routes (Hono's
 * validator meets the absent body, src/http/errors.ts) and routes checked outside them (`routeBody`) give this one.
 */
export function jsonBodyRequired(): ApiError {
  return new ApiError('invalid_request', 'A JSON request body is required', {
    issues: [{ location: 'body', path: '', message: 'Required' }],
    fields: ['(body)'],
  })
}
