import type { ZodType } from 'zod'
import { validationHook } from '../api/validation.js'

interface RouteWithBody {
  request: { body: { content: { 'application/json': { schema: ZodType } } } }
}
export interface RouteWithParams {
  request: { params: ZodType }
}

/** Absent and null mean the same in GraphQL inputs; the contract's schemas want absent. */
function dropNulls(value: Record<string, unknown> | null | undefined): Record<string, unknown> {
  return Object.fromEntries(Object.entries(value ?? {}).filter(([, v]) => v !== null && v !== undefined))
}

/**
 * Checks a mutation input with the REST operation's own generated schema and refuses it with the same
 * invalid_request detail, so GraphQL and REST accept exactly the same bodies.
 */
export function body<T>(route: RouteWithBody, input: Record<string, unknown> | null | undefined): T {
  const result = route.request.body.content['application/json'].schema.safeParse(dropNulls(input))
  if (!result.success)
    validationHook({ success: false, error: result.error, target: 'json' }, undefined as never)
  return result.data as T
}

/** Path parameters (ids) are checked by the REST operation's schema too: an overlong id is 400 on both surfaces. */
export function params<T>(route: RouteWithParams, values: Record<string, unknown>): T {
  const result = route.request.params.safeParse(values)
  if (!result.success)
    validationHook({ success: false, error: result.error, target: 'param' }, undefined as never)
  return result.data as T
}
