import type { ZodType } from 'zod'
import { checkInput } from '../surface/route-input.js'

interface RouteWithBody {
  request: { body: { content: { 'application/json': { schema: ZodType } } } }
}
export interface RouteWithParams {
  request: { params: ZodType }
}

/**
 * Absent and null mean the same in GraphQL inputs; the contract's schemas want absent. A resolver passes an argument
 * the query left out as an undefined value (`testDestination`'s `event`), which a contract enum refuses: dropped too.
 */
function dropNulls(value: Record<string, unknown> | null | undefined): Record<string, unknown> {
  return Object.fromEntries(Object.entries(value ?? {}).filter(([, v]) => v !== null && v !== undefined))
}

/**
 * Checks a mutation input with the REST operation's own generated schema and refuses it with the same
 * invalid_request detail, so GraphQL and REST accept exactly the same bodies.
 */
export function body<T>(route: RouteWithBody, input: Record<string, unknown> | null | undefined): T {
  return checkInput('json', route.request.body.content['application/json'].schema, dropNulls(input)) as T
}

/** Path parameters (ids) are checked by the REST operation's schema too: an overlong id is 400 on both surfaces. */
export function params<T>(route: RouteWithParams, values: Record<string, unknown>): T {
  return checkInput('param', route.request.params, values) as T
}
