import type { Context } from 'hono'
import type { ZodType, z } from 'zod'
import { validationHook } from './validation.js'

/** The request half of a generated route definition (generated/routes.ts): the parts a route without a body has. */
interface ContractRequest {
  params?: ZodType
  query?: ZodType
  headers?: ZodType
}

type Checked<T> = T extends ZodType ? z.output<T> : undefined

/** A route's path parameters, query and headers, each as its contract schema outputs it. */
export interface RouteInput<R extends ContractRequest> {
  param: Checked<R['params']>
  query: Checked<R['query']>
  header: Checked<R['headers']>
}

/** What one of Hono's validation targets reads, the way @hono/zod-openapi's validators read it. */
function rawInput(
  c: Context,
  target: 'query' | 'param' | 'header',
  schema: ZodType,
): Record<string, unknown> {
  if (target === 'param') return c.req.param()
  if (target === 'query') {
    // A repeated name is an array, a single one its value: what the typed routes' query validator sees.
    return Object.fromEntries(
      Object.entries(c.req.queries()).map(([name, values]) => [
        name,
        values.length === 1 ? values[0] : values,
      ]),
    )
  }
  // Header names are case-insensitive: the contract's spelling (`Last-Event-ID`) names what Node gives lower-cased.
  const shape = (schema as { shape?: Record<string, unknown> }).shape ?? {}
  const spelling = new Map(Object.keys(shape).map((name) => [name.toLowerCase(), name]))
  return Object.fromEntries(
    Object.entries(c.req.header()).map(([name, value]) => [spelling.get(name) ?? name, value]),
  )
}

/** Where a value was read from, as the typed routes' validators name it (`json` is the body). */
export type InputTarget = 'query' | 'param' | 'header' | 'json'

/**
 * The one check of a request value against its contract schema: the value the schema outputs, or the 400
 * invalid_request every typed route gives (`validationHook`), naming each failing field and where it was.
 */
export function checkInput<T extends ZodType>(target: InputTarget, schema: T, value: unknown): z.output<T> {
  const result = schema.safeParse(value)
  if (!result.success) validationHook({ success: false, error: result.error, target })
  return result.data as z.output<T>
}

function check(c: Context, target: 'query' | 'param' | 'header', schema: ZodType | undefined): unknown {
  return schema ? checkInput(target, schema, rawInput(c, target, schema)) : undefined
}

/**
 * The input of a route served outside `app.openapi` (a Server-Sent Events stream is not a JSON answer), checked
 * against its generated contract route: the same schemas, in the same order (query, path, headers) and with the same
 * 400 invalid_request naming the field as a typed route's validators, so an untyped path accepts and refuses
 * exactly what its contract says.
 */
export function routeInput<R extends { request: ContractRequest }>(
  c: Context,
  route: R,
): RouteInput<R['request']> {
  const { params, query, headers } = route.request
  const checkedQuery = check(c, 'query', query)
  const checkedParam = check(c, 'param', params)
  const checkedHeader = check(c, 'header', headers)
  return {
    param: checkedParam,
    query: checkedQuery,
    header: checkedHeader,
  } as RouteInput<R['request']>
}
