import { execute, type GraphQLError } from 'graphql'
import type { Context, Hono } from 'hono'
import { getV1GraphqlRoute, postV1GraphqlRoute } from '../../generated/routes.js'
import { ApiError } from '../domain/errors.js'
import type { FailureLog } from '../domain/failure-log.js'
import { findInexactNumber, inexactNumberError } from '../domain/json-numbers.js'
import type { AppEnv } from '../surface/context.js'
import { GRAPHQL_PATH, SCHEMA_PATH } from '../surface/paths.js'
import { checkInput, routeInput } from '../surface/route-input.js'
import { createContext } from './context.js'
import { formatError } from './errors.js'
import type { GraphqlPorts } from './ports.js'
import { prepare } from './prepare.js'
import { graphqlSchema, printedSchema } from './schema.js'

interface GraphqlRequest {
  query: string
  variables: Record<string, unknown>
  operationName: string | null
}

function badRequest(message: string, field: string, location: 'query' | 'body'): ApiError {
  return new ApiError('invalid_request', message, {
    issues: [{ location, path: field, message }],
    fields: [field],
  })
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/** GET's `variables`: JSON text in the query string, decoded to the object POST would carry. */
function variablesFromQuery(text: string | undefined): Record<string, unknown> | null {
  if (text === undefined || text === '') return null
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    throw badRequest('variables must be a JSON object', 'variables', 'query')
  }
  if (parsed !== null && !isObject(parsed))
    throw badRequest('variables must be a JSON object', 'variables', 'query')
  const inexact = findInexactNumber(text, 'variables')
  if (inexact) throw inexactNumberError('query', inexact)
  return parsed
}

/**
 * The GraphQL-over-HTTP request: GET's query parameters or POST's JSON body, each checked against its contract
 * operation (`getGraphql`, `postGraphql`) as a typed route's would be; anything else is 400 with the envelope.
 */
async function readRequest(c: Context<AppEnv>): Promise<GraphqlRequest> {
  let request: { query: string; variables?: Record<string, unknown> | null; operationName?: string | null }
  if (c.req.method === 'GET') {
    const { query } = routeInput(c, getV1GraphqlRoute)
    request = { ...query, variables: variablesFromQuery(query.variables) }
  } else {
    routeInput(c, postV1GraphqlRoute)
    let parsed: unknown
    try {
      parsed = await c.req.json()
    } catch {
      throw badRequest('The body must be a JSON object with a "query" string', 'query', 'body')
    }
    if (!isObject(parsed))
      throw badRequest('The body must be a JSON object with a "query" string', 'query', 'body')
    request = checkInput('json', postV1GraphqlRoute.request.body.content['application/json'].schema, parsed)
  }
  // The contract asks for one character at least; a document of white space only is no request either.
  if (request.query.trim() === '') {
    throw badRequest(
      'query must be a non-empty GraphQL document',
      'query',
      c.req.method === 'GET' ? 'query' : 'body',
    )
  }
  return {
    query: request.query,
    variables: request.variables ?? {},
    operationName: request.operationName ?? null,
  }
}

/**
 * POST and GET /v1/graphql. The app's middleware already ran (auth, rate limit, body guard, idempotency), so this
 * is only: read the request (400 with the envelope when it is not a GraphQL request), execute, and render errors with
 * the envelope's fields.
 */
export function registerGraphqlRoutes(app: Hono<AppEnv>, ports: GraphqlPorts, failures: FailureLog): void {
  const handle = async (c: Context<AppEnv>) => {
    const request = await readRequest(c)
    const requestId = c.get('requestId')
    const format = (errors: readonly GraphQLError[]) => errors.map((e) => formatError(e, requestId, failures))
    const prepared = prepare(request.query, request.operationName, request.variables)
    // GraphQL over HTTP (application/json): a well-formed request answers 200 even when its document is refused;
    // the refusal is in `errors` (no `data`), each carrying the envelope's code, status and detail in extensions.
    if (!prepared.ok) return c.json({ errors: format(prepared.errors) }, 200)
    const kind = prepared.operation.operation
    if (kind === 'subscription') {
      throw new ApiError(
        'invalid_request',
        `Subscriptions use the graphql-ws protocol: open a WebSocket to ${GRAPHQL_PATH}`,
        {
          issues: [{ location: 'body', path: 'query', message: 'subscription over HTTP' }],
          fields: ['query'],
        },
      )
    }
    if (kind === 'mutation' && c.req.method === 'GET') {
      // GET must stay safe (GraphQL over HTTP §GET): a mutation needs POST, where Idempotency-Key applies too.
      throw new ApiError('invalid_request', 'Mutations must be sent with POST', {
        issues: [{ location: 'query', path: 'query', message: 'mutation over GET' }],
        fields: ['query'],
      })
    }
    const result = await execute({
      schema: graphqlSchema(),
      document: prepared.document,
      operationName: request.operationName,
      variableValues: request.variables,
      contextValue: createContext(ports, c.get('auth'), requestId),
    })
    // No `data` at all: the variables did not fit their types, so nothing executed (the `errors` say why).
    // Stryker disable next-line ConditionalExpression: `false` is equivalent: `{ data: undefined }` is written as `{}` by JSON.stringify.
    const body: Record<string, unknown> = result.data === undefined ? {} : { data: result.data }
    if (result.errors?.length) body.errors = format(result.errors)
    return c.json(body, 200)
  }
  app.post(GRAPHQL_PATH, handle)
  app.get(GRAPHQL_PATH, handle)
  // Public like /openapi.json: the /docs reference links it, and tools (codegen, IDEs) fetch it without a key.
  app.get(SCHEMA_PATH, (c) => c.text(printedSchema(), 200, { 'Content-Type': 'text/plain; charset=utf-8' }))
}
