/** What the GraphQL surface's checks read in an answer, and the fields its types mirror from REST. */
import { sameJson } from '../../canonical.js'
import type { CheckContext } from '../../check.js'
import { expectStatus } from '../../fixtures.js'
import type { HttpResponse } from '../../http.js'
import { obj } from '../../http.js'
import { assert } from '../../types.js'
import { short } from '../../wait.js'
import { declaredSurface, gql } from '../graphql.js'

export type Json = Record<string, unknown>
/** Well-formed for the reference (`aok_<26>_<43>`) but never issued. */
export const UNKNOWN_TOKEN = `aok_${'0'.repeat(26)}_${'x'.repeat(43)}`

export function errorsOf(res: HttpResponse | Json): Json[] {
  const body = 'exchange' in res ? obj(res.body) : res
  return Array.isArray(body.errors) ? (body.errors as unknown[]).map(obj) : []
}

/** The errors of a graphql-ws answer: an `error` message's payload, or a `next` result's `errors`. */
export function wsErrorsOf(m: Json | undefined): Json[] {
  if (m?.type === 'error') return Array.isArray(m.payload) ? m.payload.map(obj) : []
  return errorsOf(obj(m?.payload))
}

export const codeOf = (res: HttpResponse | Json): unknown => obj(errorsOf(res)[0]?.extensions).code
export const dataOf = (res: HttpResponse): Json => obj(obj(res.body).data)

/** A 200 answer whose `data` holds `field` and no error: the field's value. */
export function answered(res: HttpResponse, field: string, what: string): Json {
  expectStatus(res, 200, what)
  assert(errorsOf(res).length === 0, `${what} answered errors: ${short(errorsOf(res))}`)
  const value = dataOf(res)[field]
  assert(value !== null && typeof value === 'object', `${what} answered ${short(res.body)}`)
  return obj(value)
}

/** A 200 answer refusing the document: no `data`, the first error invalid_request with a message. */
export function refusedDocument(res: HttpResponse, what: string): Json {
  expectStatus(res, 200, what)
  const body = obj(res.body)
  assert(!('data' in body), `${what} answered data ${short(body.data)}`)
  const first = errorsOf(res)[0] ?? {}
  const ext = obj(first.extensions)
  assert(
    ext.code === 'invalid_request' && ext.status === 400,
    `${what}: the first error's extensions are ${short(ext)}, not invalid_request with status 400`,
  )
  assert(
    typeof ext.request_id === 'string' && ext.request_id !== '',
    `${what}: no request_id in ${short(ext)}`,
  )
  assert(
    typeof first.message === 'string' && first.message.trim() !== '',
    `${what}: the error has the message ${short(first.message)}`,
  )
  return first
}

/** A REST-style refusal: 400 with the envelope's invalid_request. */
export function refused400(
  res: HttpResponse,
  what: string,
  want?: { message: string; location: string; path: string; issue?: string },
): void {
  const error = obj(obj(res.body).error)
  assert(
    res.status === 400 && error.code === 'invalid_request',
    `${what} answered ${res.status} ${short(res.body)}, not 400 invalid_request`,
  )
  if (!want) return
  const detail = {
    issues: [{ location: want.location, path: want.path, message: want.issue ?? want.message }],
    fields: [want.path],
  }
  assert(
    error.message === want.message && sameJson(error.detail, detail),
    `${what} answered the message ${short(error.message)} and detail ${short(error.detail)}, not ${short(want.message)} and ${short(detail)}`,
  )
}

/** Every key of `rest` holds the same JSON in `graph`. */
export function sameFields(graph: Json, rest: Json, keys: readonly string[], what: string): void {
  for (const key of keys) {
    const want = JSON.stringify(rest[key] ?? null)
    const got = JSON.stringify(graph[key] ?? null)
    assert(
      got === want,
      `${what}.${key} is ${short(graph[key])} through GraphQL, REST says ${short(rest[key])}`,
    )
  }
}

export async function restJson(ctx: CheckContext, path: string): Promise<Json> {
  const res = await ctx.http.get(path)
  expectStatus(res, 200, `GET ${path}`)
  return obj(res.body)
}

/** Every item's `key` over a list's pages (`page(cursor)` answers one), at most 30 pages. */
export async function walkIds(
  page: (cursor: string | undefined) => Promise<Json>,
  key: string,
): Promise<unknown[]> {
  const ids: unknown[] = []
  let cursor: string | undefined
  for (let i = 0; i < 30; i++) {
    const p = await page(cursor)
    ids.push(...(Array.isArray(p.data) ? p.data : []).map((t) => obj(t)[key]))
    if (typeof p.next_cursor !== 'string') break
    cursor = p.next_cursor
  }
  return ids
}

/** A list through GraphQL (`field`, every page) and over REST (`path`, every page): both id lists. */
export async function bothLists(
  ctx: CheckContext,
  field: string,
  path: string,
  key: string,
): Promise<[unknown[], unknown[]]> {
  const graphIds = () =>
    walkIds(
      async (cursor) =>
        answered(
          await gql(
            ctx.http,
            declaredSurface(ctx),
            `query($k: String) { ${field}(limit: 200, cursor: $k) { data { ${key} } next_cursor } }`,
            {
              k: cursor ?? null,
            },
          ),
          field,
          field,
        ),
      key,
    )
  const restIds = () =>
    walkIds(
      (cursor) => restJson(ctx, `${path}?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`),
      key,
    )
  // The checks alongside create and delete theirs between the two reads: lists that differ are read again (a
  // surface that lists otherwise differs every time).
  let lists: [unknown[], unknown[]] = [await graphIds(), await restIds()]
  for (let again = 0; again < 3 && !sameJson(lists[0], lists[1]); again++)
    lists = [await graphIds(), await restIds()]
  return lists
}

/** The REST operation each root field mirrors (the reference's schema). */
export const ROOT_OPERATIONS: Readonly<Record<string, string>> = {
  run: 'getRun',
  agent: 'getAgent',
  agents: 'listAgents',
  task: 'getTask',
  tool: 'getTool',
  tools: 'listTools',
  webhook: 'getWebhook',
  webhooks: 'listWebhooks',
  destination: 'getDestination',
  destinations: 'listDestinations',
  records: 'listConnectorRecords',
  ...Object.fromEntries(
    [
      'createAgent',
      'assignTask',
      'registerTool',
      'retireTool',
      'startRun',
      'pauseRun',
      'resumeRun',
      'cancelRun',
      'decideApproval',
      'createWebhook',
      'createDestination',
      'updateDestination',
      'deleteDestination',
      'testDestination',
    ].map((m) => [m, m]),
  ),
}

export const TOOL_FIELDS = [
  'tool_id',
  'name',
  'provider',
  'policy_binding',
  'idempotent',
  'status',
  'created_at',
]
export const TASK_FIELDS = ['task_id', 'agent_id', 'description', 'priority', 'created_at']
export const WEBHOOK_FIELDS = ['webhook_id', 'url', 'events', 'status', 'created_at']
export const DEST_FIELDS = [
  'destination_id',
  'type',
  'name',
  'events',
  'config',
  'secrets_set',
  'status',
  'created_at',
]
