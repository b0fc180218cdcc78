import type { Context } from 'hono'
import type { ZodType, z } from 'zod'
import { ApiError } from '../domain/errors.js'
import { requestHeader, requestHeaders } from './request-headers.js'
import { jsonBodyRequired, validationHook } from './validation.js'

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
  const headers: Record<string, unknown> = requestHeaders(c)
  for (const [lower, spelled] of spellingOf(schema)) {
    if (lower in headers) {
      headers[spelled] = headers[lower]
      delete headers[lower]
    }
  }
  return headers
}

/** By header schema: its names whose contract spelling is not lower case, lower-cased to that spelling. */
const spellings = new WeakMap<ZodType, Map<string, string>>()

function spellingOf(schema: ZodType): Map<string, string> {
  let spelling = spellings.get(schema)
  if (!spelling) {
    const shape = (schema as { shape?: Record<string, unknown> }).shape ?? {}
    spelling = new Map(
      Object.keys(shape)
        .filter((name) => name !== name.toLowerCase())
        .map((name) => [name.toLowerCase(), name]),
    )
    spellings.set(schema, spelling)
  }
  return spelling
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

/** A generated route whose request has a required JSON body. */
interface ContractJsonBody {
  request: { body: { content: { 'application/json': { schema: ZodType } }; required: true } }
}

/** @hono/zod-openapi's test of a Content-Type against a declared `application/json` body (its media-type gate). */
const JSON_CONTENT_TYPE = /^application\/([a-z-.]+\+)?json(;\s*[a-zA-Z0-9-]+=([^;]+))*$/i

/**
 * A route's required JSON body checked against its contract schema, answering exactly what @hono/zod-openapi's
 * validators in front of a typed route answer (its media-type gate, then Hono's json validator with the typed
 * routes' hook): 415 unsupported_media_type for a declared non-JSON Content-Type; 400 invalid_request "A JSON
 * request body is required" for a JSON Content-Type with no body; the schema's verdict on `{}` when there is no
 * Content-Type and no body (the body guard has refused a body without a JSON Content-Type); otherwise the schema's
 * verdict on the body the body guard parsed. Run after `routeInput`, as the typed routes check the body after
 * query, path and headers.
 */
export async function routeBody<R extends ContractJsonBody>(
  c: Context,
  route: R,
): Promise<z.output<R['request']['body']['content']['application/json']['schema']>> {
  const contentType = requestHeader(c, 'content-type')
  if (contentType && !JSON_CONTENT_TYPE.test(contentType)) {
    throw new ApiError('unsupported_media_type', 'Unsupported Media Type')
  }
  let value: unknown = {}
  if (contentType) {
    try {
      value = await c.req.json()
    } catch {
      throw jsonBodyRequired()
    }
  }
  const schema: R['request']['body']['content']['application/json']['schema'] =
    route.request.body.content['application/json'].schema
  return checkInput('json', schema, value)
}
