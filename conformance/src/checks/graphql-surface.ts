/**
 * The reference's GraphQL surface beyond the first reads (spec §4 "A GraphQL surface is mentioned; its shape is not
 * shown", so every check here is profile): GraphQL over HTTP's GET and its refusals, the document limits, the
 * resources and mutations that mirror REST operations, the records query, and graphql-ws's authentication and
 * subscriptions. Each judges the reference's own answers; another deployment's GraphQL surface may differ in all of it.
 */
import { randomBytes } from 'node:crypto'
import WebSocket from 'ws'
import { sameJson } from '../canonical.js'
import type { Check, CheckContext } from '../check.js'
import { tokenName } from '../config.js'
import { expectStatus, firstAwaitingStep, pageItems, toolRegistration, unwantedHookUrl } from '../fixtures.js'
import type { HttpResponse } from '../http.js'
import { obj } from '../http.js'
import { assert, fail, skip } from '../types.js'
import { short, sleep, waitUntil } from '../wait.js'
import { declaredSurface, gql, socketUrl } from './graphql.js'
import { batch, ingestAccepted } from './ingest.js'
import { QUOTA_LANE } from './quotas.js'
import { LIMITED_LANE, SOCKET_OPERATIONS_PAST_LIMIT } from './ratelimit.js'
import { assertResumedPastWindow, connect, FAR_SINCE, type Opened, type RefusedUpgrade } from './stream.js'
import { receiverUrl } from './webhooks.js'

type Json = Record<string, unknown>
/** Well-formed for the reference (`aok_<26>_<43>`) but never issued. */
const UNKNOWN_TOKEN = `aok_${'0'.repeat(26)}_${'x'.repeat(43)}`

function errorsOf(res: HttpResponse | Json): Json[] {
  const body = 'exchange' in res ? obj(res.body) : res
  return Array.isArray(body.errors) ? (body.errors as unknown[]).map(obj) : []
}

/** The errors of a graphql-ws answer: an `error` message's payload, or a `next` result's `errors`. */
function wsErrorsOf(m: Json | undefined): Json[] {
  if (m?.type === 'error') return Array.isArray(m.payload) ? m.payload.map(obj) : []
  return errorsOf(obj(m?.payload))
}

const codeOf = (res: HttpResponse | Json): unknown => obj(errorsOf(res)[0]?.extensions).code
const dataOf = (res: HttpResponse): Json => obj(obj(res.body).data)

/** A 200 answer whose `data` holds `field` and no error: the field's value. */
function answered(res: HttpResponse, field: string, what: string): Json {
  expectStatus(res, 200, what)
  assert(errorsOf(res).length === 0, `${what} answered errors: ${short(errorsOf(res))}`)
  const value = dataOf(res)[field]
  assert(value !== null && typeof value === 'object', `${what} answered ${short(res.body)}`)
  return obj(value)
}

/** A 200 answer refusing the document: no `data`, the first error invalid_request with a message. */
function refusedDocument(res: HttpResponse, what: string): Json {
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
function refused400(
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
function sameFields(graph: Json, rest: Json, keys: readonly string[], what: string): void {
  for (const key of keys) {
    const want = JSON.stringify(rest[key] ?? null)
    const got = JSON.stringify(graph[key] ?? null)
    assert(
      got === want,
      `${what}.${key} is ${short(graph[key])} through GraphQL, REST says ${short(rest[key])}`,
    )
  }
}

async function restJson(ctx: CheckContext, path: string): Promise<Json> {
  const res = await ctx.http.get(path)
  expectStatus(res, 200, `GET ${path}`)
  return obj(res.body)
}

/** Every item's `key` over a list's pages (`page(cursor)` answers one), at most 30 pages. */
async function walkIds(page: (cursor: string | undefined) => Promise<Json>, key: string): Promise<unknown[]> {
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
async function bothLists(
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
const ROOT_OPERATIONS: Readonly<Record<string, string>> = {
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

const TOOL_FIELDS = ['tool_id', 'name', 'provider', 'policy_binding', 'idempotent', 'status', 'created_at']
const TASK_FIELDS = ['task_id', 'agent_id', 'description', 'priority', 'created_at']
const WEBHOOK_FIELDS = ['webhook_id', 'url', 'events', 'status', 'created_at']
const DEST_FIELDS = [
  'destination_id',
  'type',
  'name',
  'events',
  'config',
  'secrets_set',
  'status',
  'created_at',
]

/** One graphql-ws socket: its messages as they come, a wait for one, and how it closed. */
export interface GqlSocket {
  ws: WebSocket
  refused?: number
  messages: Json[]
  /** The WebSocket pings the deployment sent, counted from the handshake. */
  pings: number
  closed?: { code: number; reason: string }
  send(message: Json): void
  next(match: (m: Json) => boolean, timeoutMs: number): Promise<Json | undefined>
}

/**
 * Opens a graphql-transport-ws socket to the declared surface (`token` at the upgrade, `suffix` a path or query
 * appended to its URL), sends
 * `connection_init` with `init` and waits for its answer: an ack, a close, or a refused upgrade. `autoPong: false`
 * leaves the server's WebSocket pings unanswered.
 */
export function openGql(
  ctx: CheckContext,
  url: string,
  token: string | null,
  init: Json = {},
  suffix = '',
  options: { autoPong?: boolean } = {},
): Promise<GqlSocket> {
  ctx.http.budget.take()
  const ws = new WebSocket(socketUrl(url, suffix), 'graphql-transport-ws', {
    headers: token ? { authorization: `Bearer ${token}` } : {},
    handshakeTimeout: ctx.config.timeoutMs,
    autoPong: options.autoPong ?? true,
  })
  ctx.opened(ws)
  const waiters = new Set<() => void>()
  const socket: GqlSocket = {
    ws,
    messages: [],
    pings: 0,
    send: (message) => ws.send(JSON.stringify(message)),
    next(match, timeoutMs) {
      return new Promise((resolve) => {
        const check = () => {
          const found = socket.messages.find(match)
          if (found || socket.closed || socket.refused !== undefined) {
            waiters.delete(check)
            clearTimeout(timer)
            resolve(found)
          }
        }
        const timer = setTimeout(() => {
          waiters.delete(check)
          resolve(undefined)
        }, timeoutMs)
        waiters.add(check)
        check()
      })
    },
  }
  const wake = () => {
    for (const w of [...waiters]) w()
  }
  ws.on('ping', () => {
    socket.pings++
  })
  ws.on('message', (data) => {
    try {
      socket.messages.push(obj(JSON.parse(String(data))))
    } catch {
      socket.messages.push({ unparseable: String(data) })
    }
    wake()
  })
  ws.once('close', (code, reason) => {
    socket.closed = { code, reason: reason.toString() }
    wake()
  })
  ws.once('unexpected-response', (_req, res) => {
    res.resume()
    socket.refused = res.statusCode ?? 0
    ws.terminate()
    wake()
  })
  ws.on('error', () => wake())
  ws.once('open', () => socket.send({ type: 'connection_init', payload: init }))
  return socket.next((m) => m.type === 'connection_ack', ctx.config.timeoutMs).then(() => socket)
}

/** The refusals of a subscription's arguments: their message and the one issue their detail names. */
const ARG_REFUSALS: Readonly<Record<string, { message: string; path: string; issue: string }>> = {
  neg: {
    message: 'since must be a non-negative integer seq',
    path: 'since',
    issue: 'must be a non-negative integer',
  },
  badc: {
    message: 'connector_id is not a valid connector id',
    path: 'connector_id',
    issue: 'must match ^[A-Za-z0-9_.:-]{1,128}$',
  },
}

/** The `next` payloads of operation `id`. */
const payloadsOf = (s: GqlSocket, id: string): Json[] =>
  s.messages.filter((m) => m.id === id && m.type === 'next').map((m) => obj(m.payload))

/**
 * On one socket and connector: a live connectorRecords subscription and one with since FAR_SINCE, subscribed in
 * the given order, then records ingested one at a time until three have reached the live one (the first may come
 * before its first read: a subscription states no moment it starts from). The problems found.
 */
async function gqlResumePointsApart(
  ctx: CheckContext,
  url: string,
  order: 'ahead-first' | 'live-first',
): Promise<string[]> {
  const connector = ctx.name(`gql-apart-${order}`)
  const s = await openGql(ctx, url, ctx.config.tokens.primary)
  const problems: string[] = []
  const recordsOf = (id: string) =>
    payloadsOf(s, id).map((p) => String(obj(obj(obj(p.data).connectorRecords).record).id))
  const subscribe = (id: 'live' | 'ahead') =>
    s.send({
      id,
      type: 'subscribe',
      payload: {
        query: `subscription($c: ID!, $since: Int) { connectorRecords(connector_id: $c, since: $since) { record { id } } }`,
        variables: { c: connector, since: id === 'ahead' ? FAR_SINCE : null },
      },
    })
  const ingestOne = async () => {
    const [record] = batch(ctx, 1)
    await ingestAccepted(ctx, connector, [record!], 'ingesting a record')
    return String(record!.id)
  }
  try {
    assert(
      s.messages.some((m) => m.type === 'connection_ack'),
      `no connection_ack: ${short(s.messages)}`,
    )
    subscribe(order === 'ahead-first' ? 'ahead' : 'live')
    subscribe(order === 'ahead-first' ? 'live' : 'ahead')
    // Until one record reaches the live subscription, the ones before were ingested before it began: not judged.
    // graphql-ws acknowledges no subscribe, so records go in until one arrives: four a second, for as long as the
    // run's wait (a record that came before the subscription began is not judged).
    let first: string | undefined
    const deadline = Date.now() + ctx.config.waitMs
    let tried = 0
    while (!first && (tried === 0 || Date.now() < deadline)) {
      const id = await ingestOne()
      tried++
      if (await s.next((m) => m.id === 'live' && recordsOf('live').includes(id), 250)) first = id
    }
    if (!first)
      return [
        `(${order}) none of ${tried} records ingested over ${ctx.config.waitMs} ms reached the live connectorRecords subscription`,
      ]
    const judged = [first]
    for (let i = 0; i < 2; i++) {
      const id = await ingestOne()
      judged.push(id)
      if (!(await s.next((m) => m.id === 'live' && recordsOf('live').includes(id), ctx.config.waitMs))) {
        problems.push(
          `(${order}) a record did not reach the live subscription within ${ctx.config.waitMs} ms, while another subscription of the connector waits beyond seq ${FAR_SINCE}`,
        )
        break
      }
    }
    await sleep(200) // a duplicate, or a record the other should not get, would show now
    const live = recordsOf('live')
    const fromFirst = live.slice(live.indexOf(first))
    if (problems.length === 0 && !sameJson(fromFirst, judged))
      problems.push(
        `(${order}) the live subscription got ${short(fromFirst)}, expected ${short(judged)} once each in order`,
      )
    const ahead = payloadsOf(s, 'ahead')
    if (ahead.length > 0)
      problems.push(
        `(${order}) the subscription with since ${FAR_SINCE} got ${short(ahead)}, records not after it`,
      )
    return problems
  } finally {
    s.ws.terminate()
  }
}

/**
 * connectorRecords(since: 0) on a connector holding `window + 2` records, `window` the stream's declared replay
 * window: one `gap` first (its `from..to` a range of seqs), then the newest `window` records, each once, in order,
 * as /v1/stream resumes (the reference's subscriptions follow the stream's topics, window included).
 */
async function resumePastWindow(ctx: CheckContext, s: GqlSocket, window: number): Promise<void> {
  const connector = ctx.name('gql-gap')
  const records = batch(ctx, window + 2)
  await ingestAccepted(ctx, connector, records, `ingesting ${records.length} records`)
  s.send({
    id: 'gap',
    type: 'subscribe',
    payload: {
      query:
        'subscription($c: ID!) { connectorRecords(connector_id: $c, since: 0) { type from to record { id } } }',
      variables: { c: connector },
    },
  })
  const last = records.at(-1)?.id
  const messages = () => payloadsOf(s, 'gap').map((p) => obj(obj(p.data).connectorRecords))
  await waitUntil(
    `the newest of ${records.length} records over connectorRecords(since: 0)`,
    async () => messages(),
    (got) => got.some((m) => obj(m.record).id === last),
    ctx.config.waitMs,
  )
  const [gap, ...rest] = messages()
  assertResumedPastWindow(
    'connectorRecords(since: 0)',
    gap,
    rest.map((m) => obj(m.record).id),
    records,
    window,
  )
}

/**
 * Fills the key's connection slots with graphql-ws sockets (the token at the upgrade) until one is refused, then
 * asks once more with the token in connection_init, whose close names the quota, its limit and its use. Starts again
 * (within `waitMs`) while that use counts more sockets than were opened: slots of sockets an earlier check closed
 * may still be held for a moment. Any other answer is returned at once, for the check to judge.
 */
async function fillGqlSlots(
  ctx: CheckContext,
  url: string,
  token: string,
  most: number,
): Promise<{ open: GqlSocket[]; refusal?: GqlSocket; closedByInit?: GqlSocket }> {
  const deadline = Date.now() + ctx.config.waitMs
  for (;;) {
    const open: GqlSocket[] = []
    let refusal: GqlSocket | undefined
    while (!refusal && open.length < most) {
      const s = await openGql(ctx, url, token)
      // A socket neither acknowledged nor refused within the time-out ends the filling too: the check fails on it.
      if (s.refused !== undefined || s.closed || !s.messages.some((m) => m.type === 'connection_ack'))
        refusal = s
      else open.push(s)
    }
    if (!refusal) return { open }
    const byInit = await openGql(ctx, url, null, { authorization: `Bearer ${token}` })
    await byInit.next(() => false, ctx.config.timeoutMs)
    const used = Number(/ used=(\d+)$/.exec(byInit.closed?.reason ?? '')?.[1])
    // Only a quota refusal counting more sockets than these is worth a second try; anything else is judged now.
    const stale = refusal.refused === 403 && Number.isInteger(used) && used > open.length
    if (!stale || Date.now() >= deadline) return { open, refusal, closedByInit: byInit }
    for (const s of open) s.ws.terminate()
    await sleep(200)
  }
}

export const graphqlSurfaceChecks: Check[] = [
  {
    id: 'graphql.ws-subscriptions',
    // Its subscriptions judge only the runs and records it made: it waits on the deployment's pushes alongside the
    // rest of the GraphQL checks, so it comes first.
    overlap: true,
    title:
      'graphql-ws: connectorRecords delivers ingested records (a since past the declared replay window a gap first, as on the stream), runEvents without since only new events (typed in run_event), and bad arguments or documents are errors with the envelope',
    level: 'profile',
    clauses: ['S4.15', 'S1.8', 'S4.10'],
    async run(ctx) {
      const url = declaredSurface(ctx)
      const s = await openGql(ctx, url, ctx.config.tokens.primary)
      try {
        assert(
          s.messages.some((m) => m.type === 'connection_ack'),
          `no connection_ack: ${short(s.messages)}`,
        )
        // A run started and settled before the subscription: runEvents without since must not replay it. Settled
        // first, so that none of its events is live news (through a balancer, or under load, a run started a moment
        // before may still be taken and announced after the subscription began).
        const before = await ctx.fx.startRun(await ctx.fx.agent())
        await ctx.fx.waitForStatus(before.runId, (status) => ctx.fx.statuses.settled(status), 'settled')
        s.send({
          id: 'live',
          type: 'subscribe',
          payload: {
            query:
              'subscription { runEvents { type topic seq event run_event { event ... on RunLifecycleEvent { run_id status } } } }',
          },
        })
        // since: null is no since at all (live only), as absent.
        s.send({
          id: 'livenull',
          type: 'subscribe',
          payload: { query: 'subscription { runEvents(since: null) { event } }' },
        })
        // The subscription starts reading at the topic's head when its first read runs: start runs until one arrives.
        const agent = await ctx.fx.agent()
        const mine = new Set<string>()
        let live: Json | undefined
        for (let i = 0; i < 5 && !live; i++) {
          await sleep(300)
          mine.add((await ctx.fx.startRun(agent)).runId)
          const m = await s.next(
            (x) =>
              x.id === 'live' && mine.has(String(obj(obj(obj(obj(x.payload).data).runEvents).event).run_id)),
            2_000,
          )
          live = m
        }
        assert(live, `runEvents delivered none of the runs started after it: ${short(s.messages.slice(-3))}`)
        const message = obj(obj(obj(live.payload).data).runEvents)
        const typed = obj(message.run_event)
        assert(
          message.type === 'event' &&
            message.topic === 'runs' &&
            typeof message.seq === 'number' &&
            typed.event === obj(message.event).event &&
            typed.run_id === obj(message.event).run_id &&
            typeof typed.status === 'string',
          `the runs message is ${short(message)}`,
        )
        const replayed = payloadsOf(s, 'live').find(
          (p) => obj(obj(obj(p.data).runEvents).event).run_id === before.runId,
        )
        assert(!replayed, `runEvents without since replayed a run started before it: ${short(replayed)}`)
        // One more run: the since: null subscription has surely started reading by now.
        mine.add((await ctx.fx.startRun(agent)).runId)
        const nullSince = await s.next(
          (x) =>
            x.id === 'livenull' &&
            (x.type !== 'next' ||
              mine.has(String(obj(obj(obj(obj(x.payload).data).runEvents).event).run_id))),
          ctx.config.waitMs,
        )
        const nullReplayed = payloadsOf(s, 'livenull').find(
          (p) => obj(obj(obj(p.data).runEvents).event).run_id === before.runId,
        )
        assert(
          nullSince?.type === 'next' && errorsOf(obj(nullSince.payload)).length === 0 && !nullReplayed,
          `runEvents(since: null) answered ${short(nullSince)}${nullReplayed ? ' and replayed a run started before it' : ''}`,
        )
        // connectorRecords(since: 0): the records ingested before, each with its seq and lineage.
        const connector = ctx.name('gql-conn')
        const records = batch(ctx, 2)
        await ingestAccepted(ctx, connector, records, 'ingesting 2 records')
        s.send({
          id: 'rec',
          type: 'subscribe',
          payload: {
            query:
              'subscription($c: ID!) { connectorRecords(connector_id: $c, since: 0) { type topic seq record { id seq lineage { batch_root } } run_event { event } } }',
            variables: { c: connector },
          },
        })
        await waitUntil(
          'both records to arrive over connectorRecords',
          async () => payloadsOf(s, 'rec'),
          (p) => p.length >= 2,
          ctx.config.waitMs,
        )
        const got = payloadsOf(s, 'rec').map((p) => obj(obj(p.data).connectorRecords))
        assert(
          got.map((m) => obj(m.record).id).join() === records.map((r) => r.id).join() &&
            got.every(
              (m, i) =>
                m.type === 'record' &&
                m.topic === `connector:${connector}` &&
                m.seq === i + 1 &&
                m.run_event === null,
            ),
          `connectorRecords delivered ${short(got)}`,
        )
        // since: 1 starts after the first record.
        s.send({
          id: 'rec2',
          type: 'subscribe',
          payload: {
            query: 'subscription($c: ID!) { connectorRecords(connector_id: $c, since: 1) { seq } }',
            variables: { c: connector },
          },
        })
        const second = await s.next((m) => m.id === 'rec2' && m.type === 'next', ctx.config.waitMs)
        assert(
          obj(obj(obj(second?.payload).data).connectorRecords).seq === 2,
          `connectorRecords(since: 1) first delivered ${short(second)}`,
        )
        const window = ctx.config.stream.replayWindow
        if (window !== undefined) await resumePastWindow(ctx, s, window)
        // Refusals: a negative since, an invalid connector id, a document that does not validate.
        for (const [id, query, code] of [
          ['neg', 'subscription { runEvents(since: -1) { seq } }', 'invalid_request'],
          [
            'frac',
            'subscription { connectorRecords(connector_id: "c", since: 1.5) { seq } }',
            'invalid_request',
          ],
          ['badc', 'subscription { connectorRecords(connector_id: "bad id!") { seq } }', 'invalid_request'],
          ['doc', 'subscription { runEvents { nope } }', 'invalid_request'],
        ] as const) {
          s.send({ id, type: 'subscribe', payload: { query } })
          const m = await s.next(
            (x) => x.id === id && (x.type === 'error' || x.type === 'next'),
            ctx.config.waitMs,
          )
          const errors = wsErrorsOf(m)
          const ext = obj(errors[0]?.extensions)
          assert(
            ext.code === code && /^req_/.test(String(ext.request_id)) && ext.status === 400,
            `subscribe ${short(query)} answered ${short(m)}, not ${code} with a req_ request id`,
          )
          const want = ARG_REFUSALS[id]
          if (want)
            assert(
              errors[0]?.message === want.message &&
                sameJson(ext.detail, {
                  issues: [{ location: 'args', path: want.path, message: want.issue }],
                  fields: [want.path],
                }),
              `subscribe ${short(query)}: the error is ${short(errors[0])}`,
            )
        }
        // operationName picks the subscription among several operations, as over HTTP.
        s.send({
          id: 'named',
          type: 'subscribe',
          payload: {
            query:
              'query Q { __typename } subscription S($c: ID!) { connectorRecords(connector_id: $c, since: 1) { seq } }',
            operationName: 'S',
            variables: { c: connector },
          },
        })
        const named = await s.next((x) => x.id === 'named' && x.type !== 'complete', ctx.config.waitMs)
        assert(
          obj(obj(obj(named?.payload).data).connectorRecords).seq === 2,
          `operationName S over graphql-ws answered ${short(named)}`,
        )
        // What only graphql-ws hands to the document checks (HTTP bodies pass the body guard first): variables
        // nested past the JSON depth limit, and a variable holding U+0000.
        let deepVar: unknown = 1
        for (let i = 0; i < 64; i++) deepVar = [deepVar]
        for (const [id, variables, judge] of [
          [
            'deep',
            { c: deepVar },
            (e: Json) =>
              obj(e.extensions).detail !== undefined &&
              obj(obj(e.extensions).detail).limit === 'max_json_depth' &&
              String(e.message).startsWith('The JSON at variables.c'),
          ],
          [
            'nul',
            { c: 'a\u0000b' },
            (e: Json) => String(e.message).startsWith('The request document is invalid: variables.c'),
          ],
        ] as const) {
          s.send({
            id,
            type: 'subscribe',
            payload: {
              query: 'subscription($c: ID!) { connectorRecords(connector_id: $c) { seq } }',
              variables,
            },
          })
          const m = await s.next((x) => x.id === id && x.type !== 'complete', ctx.config.waitMs)
          const first = obj(Array.isArray(m?.payload) ? m.payload[0] : undefined)
          assert(
            m?.type === 'error' && judge(first),
            `subscribe with variables ${id === 'deep' ? 'nested 65 deep' : 'holding U+0000'} answered ${short(m)}`,
          )
        }
      } finally {
        s.ws.terminate()
      }
      // A token without stream:runs is refused runEvents.
      const narrow = ctx.config.tokens.narrowScope
      if (narrow) {
        const n = await openGql(ctx, url, narrow)
        try {
          n.send({ id: 'n', type: 'subscribe', payload: { query: 'subscription { runEvents { seq } }' } })
          const m = await n.next((x) => x.id === 'n' && x.type !== 'complete', ctx.config.timeoutMs)
          const errors = errorsOf(obj(m?.payload))
          const first =
            m?.type === 'error' && Array.isArray(m.payload) ? obj(m.payload[0]) : errorsOf(obj(m?.payload))[0]
          const code = obj(first?.extensions).code
          assert(
            code === 'policy_denied' || code === 'forbidden' || errors.length > 0,
            `the narrow-scope token's runEvents answered ${short(m)}`,
          )
          assert(code === 'policy_denied', `the narrow-scope token's runEvents error is ${short(first)}`)
        } finally {
          n.ws.terminate()
        }
      }
    },
  },
  {
    id: 'graphql.ws-resume-points-apart',
    overlap: true,
    title:
      'graphql-ws: two connectorRecords subscriptions of one connector, one live and one with a since beyond its newest record, whichever came first: the live one gets each next record once, in order, and the other none of them',
    level: 'profile',
    clauses: ['S4.15', 'S4.10'],
    async run(ctx) {
      // The reference's subscriptions read a topic once for all its followers (src/surface/topic-feeds.ts), as
      // /v1/stream does (stream.resume-points-apart): followers at different points keep their own.
      const url = declaredSurface(ctx)
      const problems = await Promise.all([
        gqlResumePointsApart(ctx, url, 'ahead-first'),
        gqlResumePointsApart(ctx, url, 'live-first'),
      ])
      const found = problems.flat()
      assert(found.length === 0, found.join('; '))
    },
  },
  {
    id: 'graphql.http-request-forms',
    title:
      'GraphQL over HTTP: GET takes query and JSON variables; mutations over GET, subscriptions over HTTP and malformed requests are 400',
    level: 'profile',
    clauses: ['S4.15'],
    async run(ctx) {
      const url = declaredSurface(ctx)
      const get = (params: Record<string, string>) =>
        ctx.http.get(`${url}?${new URLSearchParams(params).toString()}`)
      const q = 'query($l: Int) { agents(limit: $l) { data { agent_id } next_cursor } }'
      const viaGet = await get({ query: q, variables: JSON.stringify({ l: 1 }) })
      const page = answered(viaGet, 'agents', 'GET /v1/graphql with variables')
      assert(
        Array.isArray(page.data) && page.data.length <= 1,
        `GET's agents(limit: 1) answered ${short(page)}`,
      )
      answered(
        await get({ query: '{ agents(limit: 1) { next_cursor } }' }),
        'agents',
        'GET without variables',
      )
      answered(
        await get({ query: '{ agents(limit: 1) { next_cursor } }', variables: '' }),
        'agents',
        'GET with empty variables',
      )
      answered(
        await get({ query: '{ agents(limit: 1) { next_cursor } }', variables: 'null' }),
        'agents',
        'GET with variables null',
      )
      for (const [what, variables] of [
        ['variables that are no JSON', '{'],
        ['variables that are a JSON array', '[1]'],
        ['variables that are a JSON string', '"x"'],
      ] as const) {
        const res = await get({ query: q, variables })
        refused400(res, `GET with ${what}`, {
          message: 'variables must be a JSON object',
          location: 'query',
          path: 'variables',
        })
      }
      const mutation = await get({
        query: 'mutation { createAgent(input: { name: "via-get", behavior: autonomous }) { agent_id } }',
      })
      refused400(mutation, 'a mutation over GET', {
        message: 'Mutations must be sent with POST',
        location: 'query',
        path: 'query',
        issue: 'mutation over GET',
      })
      assert(/POST/.test(mutation.text), `a mutation over GET: ${short(mutation.body)} does not name POST`)
      const sub = await gql(ctx.http, url, 'subscription { runEvents { type } }')
      refused400(sub, 'a subscription over HTTP POST', {
        message: `Subscriptions use the graphql-ws protocol: open a WebSocket to /v1/graphql`,
        location: 'body',
        path: 'query',
        issue: 'subscription over HTTP',
      })
      assert(
        /graphql-ws/.test(sub.text),
        `a subscription over HTTP: ${short(sub.body)} does not name graphql-ws`,
      )
      const blank = 'query must be a non-empty GraphQL document'
      refused400(await get({ query: '   ' }), 'GET with a query of white space', {
        message: blank,
        location: 'query',
        path: 'query',
      })
      refused400(await ctx.http.post(url, { query: ' \n ' }), 'POST with a query of white space', {
        message: blank,
        location: 'body',
        path: 'query',
      })
      refused400(await ctx.http.post(url, [{ query: '{ __typename }' }]), 'POST with a JSON array body', {
        message: 'The body must be a JSON object with a "query" string',
        location: 'body',
        path: 'query',
      })
      const nullBody = await ctx.http.post(url, undefined, {
        rawBody: 'null',
        headers: { 'content-type': 'application/json' },
      })
      refused400(nullBody, 'POST with the JSON body null', {
        message: 'The body must be a JSON object with a "query" string',
        location: 'body',
        path: 'query',
      })
      const noString = await ctx.http.post(url, { query: 1 })
      refused400(noString, 'POST with a query that is no string')
      const issue = obj((obj(obj(obj(noString.body).error).detail).issues as unknown[] | undefined)?.[0])
      assert(
        issue.location === 'body' && issue.path === 'query',
        `POST with a query that is no string: the issue is ${short(issue)}, not at body.query`,
      )
      const raw = await ctx.http.post(url, undefined, {
        rawBody: '{"query": ',
        headers: { 'content-type': 'application/json' },
      })
      assert(raw.status === 400, `POST with a body that is no JSON answered ${raw.status}`)
      // operationName picks one of several operations; none or an unknown one is refused.
      const two = 'query A { agents(limit: 1) { next_cursor } } query B { __typename }'
      const picked = await ctx.http.post(url, { query: two, operationName: 'B' })
      expectStatus(picked, 200, 'POST with operationName B')
      assert(
        dataOf(picked).__typename === 'Query' && !('agents' in dataOf(picked)),
        `operationName B answered ${short(picked.body)}`,
      )
      const byGet = await get({ query: two, operationName: 'A' })
      assert('agents' in dataOf(byGet), `GET with operationName A answered ${short(byGet.body)}`)
      const unnamed = refusedDocument(await ctx.http.post(url, { query: two }), 'two operations, none named')
      assert(
        unnamed.message === 'The document holds several operations: name one with operationName',
        `two operations, none named: ${short(unnamed)}`,
      )
      const unknown = refusedDocument(
        await ctx.http.post(url, { query: two, operationName: 'C' }),
        'an unknown operationName',
      )
      assert(
        unknown.message === 'No operation named "C" in the document',
        `an unknown operationName: ${short(unknown)}`,
      )
      // Variables that do not fit their types: nothing executes, so there is no `data` at all.
      const badVar = await gql(ctx.http, url, q, { l: 'many' })
      expectStatus(badVar, 200, 'a variable of the wrong type')
      assert(
        !('data' in obj(badVar.body)) && codeOf(badVar) === 'invalid_request',
        `a variable of the wrong type answered ${short(badVar.body)}`,
      )
      // A resolver's refusal keeps the data of the others (null where refused) and its error's path.
      const partial = await gql(ctx.http, url, '{ __typename agents(limit: 0) { next_cursor } }')
      expectStatus(partial, 200, 'a query with one refused field')
      const first = errorsOf(partial)[0] ?? {}
      assert(
        dataOf(partial).__typename === 'Query' &&
          dataOf(partial).agents === null &&
          JSON.stringify(first.path) === '["agents"]' &&
          Array.isArray(first.locations),
        `a query with one refused field answered ${short(partial.body)}`,
      )
    },
  },
  {
    id: 'graphql.document-limits',
    title:
      'A GraphQL document that does not parse or validate, nests too deep, holds too many tokens or unstorable text, or costs too much is refused before it runs',
    level: 'profile',
    clauses: ['S4.15'],
    async run(ctx) {
      const url = declaredSurface(ctx)
      const syntax = refusedDocument(await gql(ctx.http, url, '{ agents('), 'a document that does not parse')
      assert(
        Array.isArray(syntax.locations) && JSON.stringify(obj(syntax.extensions).detail) === '{}',
        `the syntax error has no locations or a detail other than {}: ${short(syntax)}`,
      )
      refusedDocument(
        await gql(ctx.http, url, '{ agents { nope } }'),
        'a document selecting an unknown field',
      )
      // Depth: run > agent > runs > data > agent > runs > ... (each object field a level).
      let nested = 'agent_id'
      for (let i = 0; i < 5; i++) nested = `runs(limit: 1) { data { agent { ${nested} } } }`
      const deep = refusedDocument(
        await gql(ctx.http, url, `query($id: ID!) { agent(id: $id) { ${nested} } }`, { id: 'agt_none' }),
        'a query nested 17 levels deep',
      )
      const depth = obj(obj(deep.extensions).detail)
      assert(
        depth.limit === 'depth' && depth.max === 12 && depth.observed === 17,
        `the depth refusal's detail is ${short(depth)}, not { limit: depth, observed: 17, max: 12 }`,
      )
      // Exactly 12 levels is allowed: agent (2), three times runs > data > agent (11), runs (12).
      let twelve = 'runs(limit: 1) { next_cursor }'
      for (let i = 0; i < 3; i++) twelve = `runs(limit: 1) { data { agent { ${twelve} } } }`
      const ok = await gql(ctx.http, url, `query($id: ID!) { agent(id: $id) { ${twelve} } }`, {
        id: 'agt_none',
      })
      assert(
        'data' in obj(ok.body) &&
          errorsOf(ok).every((e) => obj(obj(e.extensions).detail).limit === undefined),
        `a query nested 12 levels deep was refused: ${short(ok.body)}`,
      )
      // The refusal names where the nesting went too deep: the document's line.
      const tooDeep = (res: HttpResponse, what: string) => {
        const e = refusedDocument(res, what)
        assert(
          obj(obj(e.extensions).detail).limit === 'max_json_depth' &&
            e.message === 'The JSON at query.line 1 nests deeper than 64 levels',
          `${what}: the refusal is ${short(e)}, not the JSON depth limit at query.line 1`,
        )
      }
      // { and ( are two levels: 63 brackets more make 65, past the 64 any JSON value may nest.
      const brackets = (n: number) => `{ agents(cursor: ${'['.repeat(n)}${']'.repeat(n)}) { next_cursor } }`
      tooDeep(await gql(ctx.http, url, brackets(63)), 'a list literal nested 65 deep')
      // The nesting count stops where the parser stops (5000 tokens): an opener past it is the parser's refusal.
      const past = (fields: number) =>
        `{ ${'__typename '.repeat(fields)}x(c: ${'['.repeat(63)}${']'.repeat(63)}) }`
      tooDeep(await gql(ctx.http, url, past(4932)), 'the 65th opener as the 5000th token')
      const beyond = refusedDocument(
        await gql(ctx.http, url, past(4933)),
        'the 65th opener as the 5001st token',
      )
      assert(
        /5000 tokens/.test(String(beyond.message)),
        `the 65th opener as the 5001st token: the refusal is ${short(beyond)}, not the parser's token limit`,
      )
      // Validation stops at 20 errors (and says so in a 21st).
      const many = await gql(
        ctx.http,
        url,
        `{ ${Array.from({ length: 25 }, (_, i) => `nope${i}`).join(' ')} }`,
      )
      refusedDocument(many, '25 unknown fields')
      assert(
        errorsOf(many).length === 21,
        `25 unknown fields answered ${errorsOf(many).length} errors, not 21`,
      )
      const shallow = refusedDocument(await gql(ctx.http, url, brackets(62)), 'a list literal nested 64 deep')
      assert(
        obj(obj(shallow.extensions).detail).limit === undefined,
        `a list literal nested 64 deep was refused by a limit: ${short(shallow)}`,
      )
      refusedDocument(
        await gql(
          ctx.http,
          url,
          `{ ${Array.from({ length: 2600 }, (_, i) => `a${i}: __typename`).join(' ')} }`,
        ),
        'a document of more than 5000 tokens',
      )
      const nul = refusedDocument(
        await gql(
          ctx.http,
          url,
          'mutation { createAgent(input: { name: "a\\u0000b", behavior: autonomous }) { agent_id } }',
        ),
        'a string literal holding U+0000',
      )
      assert(
        String(nul.message).startsWith('The request document is invalid: query: A string literal '),
        `the U+0000 literal's error is ${short(nul)}`,
      )
      // Introspection is served, and counted: GraphiQL-like introspection passes, 20 aliased copies do not.
      const intro =
        '__schema { types { name fields { name args { name type { name ofType { name } } } type { name kind ofType { name kind } } } } }'
      const once = await gql(ctx.http, url, `{ ${intro} }`)
      const schema = answered(once, '__schema', 'an introspection query')
      assert(
        Array.isArray(schema.types) && schema.types.length > 20,
        `__schema.types is ${short(schema.types)}`,
      )
      const flood = refusedDocument(
        await gql(ctx.http, url, `{ ${Array.from({ length: 20 }, (_, i) => `s${i}: ${intro}`).join(' ')} }`),
        '20 aliased introspection queries',
      )
      assert(
        obj(obj(flood.extensions).detail).limit === 'cost',
        `the introspection flood's refusal is ${short(flood)}`,
      )
      const typeFlood = refusedDocument(
        await gql(
          ctx.http,
          url,
          `{ ${Array.from({ length: 120 }, (_, i) => `t${i}: __type(name: "Run") { fields { name args { name } type { name } } interfaces { name } enumValues { name } inputFields { name } possibleTypes { name } }`).join(' ')} }`,
        ),
        '120 aliased __type queries',
      )
      assert(obj(obj(typeFlood.extensions).detail).limit === 'cost', `the __type flood: ${short(typeFlood)}`)
      // The cost: every object the answer may hold. A page field multiplies its selection by its limit (a literal or
      // a variable; 50 without one, 200 for one out of range), a page's data counts once, and a run's awaiting and
      // outcome.results count at most 25 each (the most steps any envelope allows a run).
      const runLists = 'data { awaiting { step_id } outcome { results { step_id } } }'
      const costs: [string, string, Json, number][] = [
        [
          '10 agents × 20 runs with their awaiting and results',
          `{ agents(limit: 10) { data { runs(limit: 20) { ${runLists} } } } }`,
          {},
          10 * (1 + 1 + 20 * (1 + 1 + 25 + 1 + 25)),
        ],
        [
          '60 agents (a variable) × 200 runs',
          'query($l: Int) { agents(limit: $l) { data { runs(limit: 200) { next_cursor } } } }',
          { l: 60 },
          60 * (1 + 1 + 200),
        ],
        [
          'agents with no limit × 200 runs',
          '{ agents { data { runs(limit: 200) { next_cursor } } } }',
          {},
          50 * (1 + 1 + 200),
        ],
        [
          'agents with an unset limit variable × 200 runs',
          'query($l: Int) { agents(limit: $l) { data { runs(limit: 200) { next_cursor } } } }',
          {},
          50 * (1 + 1 + 200),
        ],
        [
          'agents(limit: 0) × 200 runs (out of range: costed at 200)',
          '{ agents(limit: 0) { data { runs(limit: 200) { next_cursor } } } }',
          {},
          200 * (1 + 1 + 200),
        ],
        [
          'agents(limit: 201) × 200 runs (out of range: costed at 200)',
          '{ agents(limit: 201) { data { runs(limit: 200) { next_cursor } } } }',
          {},
          200 * (1 + 1 + 200),
        ],
        [
          'agents(limit: $l) with l = 201 × 200 runs',
          'query($l: Int) { agents(limit: $l) { data { runs(limit: 200) { next_cursor } } } }',
          { l: 201 },
          200 * (1 + 1 + 200),
        ],
        [
          'a fragment and an inline fragment of 60 agents × 200 runs, twice',
          'query { ...A ... on Query { b: agents(limit: 60) { data { runs(limit: 200) { next_cursor } } } } } fragment A on Query { agents(limit: 60) { data { runs(limit: 200) { next_cursor } } } }',
          {},
          2 * 60 * (1 + 1 + 200),
        ],
        [
          'a mutation selecting 200 runs × their agent × 200 runs (nothing runs)',
          'mutation { createAgent(input: { name: "never", behavior: autonomous }) { runs(limit: 200) { data { agent { runs(limit: 200) { next_cursor } } } } } }',
          {},
          1 + 200 * (1 + 1 + 1 + 200),
        ],
        [
          'agent(id) (arguments but no limit: once) × 200 runs × their trace(limit: 49)',
          '{ agent(id: "agt_x") { runs(limit: 200) { data { run_id trace(limit: 49) { next_cursor } } } } }',
          {},
          1 + 200 * (1 + 1 + 49),
        ],
        [
          '200 agents × runs(cursor: null, limit: 60) (the limit argument, not the first)',
          '{ agents(limit: 200) { data { runs(cursor: null, limit: 60) { next_cursor } } } }',
          {},
          200 * (1 + 1 + 60),
        ],
        [
          'agents(limit: 1) × 200 runs × their trace(limit: 200)',
          '{ agents(limit: 1) { data { runs(limit: 200) { data { trace(limit: 200) { next_cursor } } } } } }',
          {},
          1 * (1 + 1 + 200 * (1 + 1 + 200)),
        ],
      ]
      for (const [what, query, variables, want] of costs) {
        const refused = refusedDocument(await gql(ctx.http, url, query, variables), what)
        const detail = obj(obj(refused.extensions).detail)
        assert(
          sameJson(detail, { limit: 'cost', observed: want, max: 10000 }),
          `${what}: the refusal's detail is ${short(detail)}, not { limit: cost, observed: ${want}, max: 10000 }`,
        )
        assert(
          refused.message ===
            `The query may return ${want} objects; at most 10000 are allowed (lower the page limits or select less)`,
          `${what}: the refusal says ${short(refused.message)}`,
        )
      }
      // At and just under the limit ("at most 10000"): answered.
      for (const [what, query] of [
        [
          '50 agents × 198 runs (10000, the limit itself)',
          '{ agents(limit: 50) { data { runs(limit: 198) { next_cursor } } } }',
        ],
        [
          '49 agents × 200 runs (9898)',
          '{ agents(limit: 49) { data { runs(limit: 200) { next_cursor } } } }',
        ],
        [
          '9 agents × 20 runs with their lists (9558)',
          `{ agents(limit: 9) { data { runs(limit: 20) { ${runLists} } } } }`,
        ],
      ] as const) {
        const res = await gql(ctx.http, url, query)
        assert(
          'data' in obj(res.body) && errorsOf(res).length === 0,
          `${what} was refused: ${short(res.body)}`,
        )
      }
    },
  },
  {
    id: 'graphql.tools-and-tasks',
    title:
      'GraphQL registerTool, retireTool, assignTask and the tool, tools, task queries answer what REST shows (a task with its agent and run)',
    level: 'profile',
    clauses: ['S4.15', 'S4.7', 'S4.8', 'S4.14'],
    async run(ctx) {
      const url = declaredSurface(ctx)
      const name = ctx.name('gql-tool')
      const registered = answered(
        await gql(
          ctx.http,
          url,
          'mutation($in: ToolRegistration!) { registerTool(input: $in) { tool_id } }',
          {
            in: toolRegistration(ctx, 'succeed', name),
          },
        ),
        'registerTool',
        'registerTool',
      )
      const toolId = String(registered.tool_id)
      ctx.cleanup(`retire tool ${name}`, (http) => http.delete(`/v1/tools/${toolId}`))
      const restTool = await restJson(ctx, `/v1/tools/${toolId}`)
      assert(
        restTool.name === name &&
          sameJson(restTool.input_schema, { type: 'object' }) &&
          JSON.stringify(restTool.output_schema) === '{}',
        `the tool registered through GraphQL (JSON inputs as variables) reads ${short(restTool)} over REST`,
      )
      // JSON written as a literal in the document: every kind of value, and a variable inside it.
      const schemaLiteral =
        '{ type: "object", description: $d, properties: { n: { type: "number", maximum: 2.5 }, b: { type: "boolean", default: true }, z: { default: null }, l: { type: "array", items: { type: "integer" }, default: [1, 2] } } }'
      const literalName = ctx.name('gql-tool-literal')
      const reg = toolRegistration(ctx, 'succeed', literalName)
      const withLiteral = answered(
        await gql(
          ctx.http,
          url,
          `mutation($n: String!, $p: String!, $b: PolicyBindingInput!, $c: JSON, $d: String) { registerTool(input: { name: $n, provider: $p, policy_binding: $b, config: $c, input_schema: ${schemaLiteral} }) { tool_id input_schema } }`,
          {
            n: literalName,
            p: reg.provider,
            b: reg.policy_binding,
            c: reg.config ?? null,
            d: 'from a variable',
          },
        ),
        'registerTool',
        'registerTool with a JSON literal',
      )
      ctx.cleanup(`retire tool ${literalName}`, (http) =>
        http.delete(`/v1/tools/${String(withLiteral.tool_id)}`),
      )
      const wantSchema = {
        type: 'object',
        description: 'from a variable',
        properties: {
          n: { type: 'number', maximum: 2.5 },
          b: { type: 'boolean', default: true },
          z: { default: null },
          l: { type: 'array', items: { type: 'integer' }, default: [1, 2] },
        },
      }
      const literalRest = await restJson(ctx, `/v1/tools/${String(withLiteral.tool_id)}`)
      assert(
        sameJson(literalRest.input_schema, wantSchema) && sameJson(withLiteral.input_schema, wantSchema),
        `a JSON literal input_schema reads ${short(literalRest.input_schema)} over REST and ${short(withLiteral.input_schema)} through GraphQL`,
      )
      // Registered without `idempotent`: not idempotent, as REST's registration defaults it (the contract's default).
      assert(
        literalRest.idempotent === false,
        `a tool registered through GraphQL without idempotent reads idempotent ${short(literalRest.idempotent)} over REST, not false`,
      )
      const toolQuery = `query($id: ID!) { tool(id: $id) { ${TOOL_FIELDS.filter((f) => f !== 'policy_binding').join(' ')} policy_binding { envelope required_scopes } } }`
      sameFields(
        answered(await gql(ctx.http, url, toolQuery, { id: toolId }), 'tool', 'tool(id)'),
        restTool,
        TOOL_FIELDS,
        'tool',
      )
      const retired = answered(
        await gql(ctx.http, url, 'mutation($id: ID!) { retireTool(id: $id) { tool_id status retired_at } }', {
          id: toolId,
        }),
        'retireTool',
        'retireTool',
      )
      const restRetired = await restJson(ctx, `/v1/tools/${toolId}`)
      assert(
        retired.status === 'retired' &&
          restRetired.status === 'retired' &&
          retired.retired_at === restRetired.retired_at,
        `retireTool answered ${short(retired)}; REST reads ${short(restRetired)}`,
      )
      // tools lists what GET /v1/tools lists, retired ones only with include_retired.
      // The whole list, page by page, through GraphQL and over REST (other checks register tools too).
      const walk = (page: (cursor: string | undefined) => Promise<Json>) => walkIds(page, 'tool_id')
      for (const retiredToo of [false, true]) {
        const rest = await walk((cursor) =>
          restJson(
            ctx,
            `/v1/tools?limit=200${retiredToo ? '&include_retired=true' : ''}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
          ),
        )
        const graph = await walk(async (cursor) =>
          answered(
            await gql(
              ctx.http,
              url,
              `query($k: String) { tools(limit: 200, cursor: $k, include_retired: ${retiredToo}) { data { tool_id } next_cursor } }`,
              { k: cursor ?? null },
            ),
            'tools',
            'tools',
          ),
        )
        assert(
          sameJson(graph, rest),
          `tools(include_retired: ${retiredToo}) lists ${short(graph)}, REST ${short(rest)}`,
        )
        assert(
          graph.includes(toolId) === retiredToo,
          `tools(include_retired: ${retiredToo}) ${retiredToo ? 'lacks' : 'lists'} the retired tool ${toolId}`,
        )
      }
      // assignTask on an agent: the task, its agent and its run as REST shows them.
      const agentId = await ctx.fx.agent()
      const task = answered(
        await gql(
          ctx.http,
          url,
          'mutation($a: ID!, $in: TaskAssign!) { assignTask(agent_id: $a, input: $in) { task_id } }',
          { a: agentId, in: { description: ctx.name('gql-task'), priority: 2, data_source: null } },
        ),
        'assignTask',
        'assignTask',
      )
      const taskId = String(task.task_id)
      const restTask = await restJson(ctx, `/v1/tasks/${taskId}`)
      const read = answered(
        await gql(
          ctx.http,
          url,
          `query($id: ID!) { task(id: $id) { ${TASK_FIELDS.join(' ')} run_id agent { agent_id name } run { run_id agent_id } } }`,
          { id: taskId },
        ),
        'task',
        'task(id)',
      )
      sameFields(read, restTask, [...TASK_FIELDS, 'run_id'], 'task')
      assert(obj(read.agent).agent_id === agentId, `task.agent is ${short(read.agent)}, not agent ${agentId}`)
      if (typeof restTask.run_id === 'string')
        assert(
          obj(read.run).run_id === restTask.run_id && obj(read.run).agent_id === agentId,
          `task.run is ${short(read.run)}, REST's run_id ${restTask.run_id}`,
        )
      else assert(read.run === null, `a task without a run answered task.run ${short(read.run)}`)
      // Ids are checked by the REST operation's own rules: an overlong one is invalid_request, a missing one not_found.
      const long = await gql(ctx.http, url, 'query($id: ID!) { task(id: $id) { task_id } }', {
        id: 'x'.repeat(300),
      })
      assert(
        dataOf(long).task === null && codeOf(long) === 'invalid_request',
        `task(id: <300 characters>) answered ${short(long.body)}`,
      )
      const missing = await gql(ctx.http, url, 'query($id: ID!) { tool(id: $id) { tool_id } }', {
        id: `${toolId}zz`,
      })
      assert(
        dataOf(missing).tool === null && codeOf(missing) === 'not_found',
        `tool(id: <unknown>) answered ${short(missing.body)}`,
      )
      const badInput = await gql(
        ctx.http,
        url,
        'mutation($in: ToolRegistration!) { registerTool(input: $in) { tool_id } }',
        { in: { ...toolRegistration(ctx, 'succeed', ''), name: '' } },
      )
      assert(
        dataOf(badInput).registerTool === null && codeOf(badInput) === 'invalid_request',
        `registerTool with an empty name answered ${short(badInput.body)}`,
      )
    },
  },
  {
    id: 'graphql.webhooks-and-destinations',
    title:
      'GraphQL createWebhook, createDestination, updateDestination, testDestination, deleteDestination and their queries and delivery pages answer what REST shows',
    level: 'profile',
    clauses: ['S4.15', 'S4.11'],
    async run(ctx) {
      const url = declaredSurface(ctx)
      const receiver = receiverUrl(ctx)
      const tag = ctx.name('gql-hook')
      const hook = answered(
        await gql(
          ctx.http,
          url,
          'mutation($in: WebhookCreate!) { createWebhook(input: $in) { webhook_id } }',
          {
            in: {
              url: `${receiver}/${tag}`,
              events: ['agent.created'],
              secret: `whsec-conf-${randomBytes(12).toString('hex')}`,
            },
          },
        ),
        'createWebhook',
        'createWebhook',
      )
      const hookId = String(hook.webhook_id)
      ctx.cleanup(`delete webhook ${hookId}`, (http) => http.delete(`/v1/webhooks/${hookId}`))
      const restHook = await restJson(ctx, `/v1/webhooks/${hookId}`)
      const hookQuery = `query($id: ID!) { webhook(id: $id) { ${WEBHOOK_FIELDS.join(' ')} deliveries(limit: 10) { data { delivery_id webhook_id event status } next_cursor } } }`
      sameFields(
        answered(await gql(ctx.http, url, hookQuery, { id: hookId }), 'webhook', 'webhook(id)'),
        restHook,
        WEBHOOK_FIELDS,
        'webhook',
      )
      const [hooks, restHooks] = await bothLists(ctx, 'webhooks', '/v1/webhooks', 'webhook_id')
      assert(
        sameJson(hooks, restHooks) && hooks.includes(hookId),
        `webhooks lists ${short(hooks)}, REST ${short(restHooks)}`,
      )
      // A destination: created, read, listed, renamed, tested, its deliveries paged, deleted.
      const destTag = ctx.name('gql-dest')
      const created = answered(
        await gql(
          ctx.http,
          url,
          'mutation($in: DestinationCreate!) { createDestination(input: $in) { destination_id } }',
          {
            in: {
              type: 'cloudevents',
              name: destTag,
              events: ['agent.created'],
              config: { url: `${receiver}/${destTag}`, mode: 'binary' },
            },
          },
        ),
        'createDestination',
        'createDestination',
      )
      const destId = String(created.destination_id)
      ctx.cleanup(`delete destination ${destId}`, (http) => http.delete(`/v1/destinations/${destId}`))
      const destQuery = `query($id: ID!) { destination(id: $id) { ${DEST_FIELDS.join(' ')} deliveries(limit: 10) { data { delivery_id destination_id event status } next_cursor } } }`
      sameFields(
        answered(await gql(ctx.http, url, destQuery, { id: destId }), 'destination', 'destination(id)'),
        await restJson(ctx, `/v1/destinations/${destId}`),
        DEST_FIELDS,
        'destination',
      )
      const [dests, restDests] = await bothLists(ctx, 'destinations', '/v1/destinations', 'destination_id')
      assert(
        sameJson(dests, restDests) && dests.includes(destId),
        `destinations lists ${short(dests)}, REST ${short(restDests)}`,
      )
      const renamed = answered(
        await gql(
          ctx.http,
          url,
          'mutation($id: ID!, $in: DestinationUpdate!) { updateDestination(id: $id, input: $in) { name } }',
          {
            id: destId,
            in: { name: `${destTag}-renamed`, status: null },
          },
        ),
        'updateDestination',
        'updateDestination',
      )
      const restRenamed = await restJson(ctx, `/v1/destinations/${destId}`)
      assert(
        renamed.name === `${destTag}-renamed` && restRenamed.name === renamed.name,
        `updateDestination answered ${short(renamed)}; REST reads ${short(restRenamed)}`,
      )
      const tested = answered(
        await gql(
          ctx.http,
          url,
          'mutation($id: ID!) { testDestination(id: $id, event: "agent.created") { ok event event_id } }',
          {
            id: destId,
          },
        ),
        'testDestination',
        'testDestination',
      )
      assert(
        tested.event === 'agent.created' &&
          typeof tested.event_id === 'string' &&
          typeof tested.ok === 'boolean',
        `testDestination answered ${short(tested)}`,
      )
      const badEvent = await gql(
        ctx.http,
        url,
        'mutation($id: ID!) { testDestination(id: $id, event: "no.such") { ok } }',
        {
          id: destId,
        },
      )
      assert(
        codeOf(badEvent) === 'invalid_request',
        `testDestination(event: "no.such") answered ${short(badEvent.body)}`,
      )
      // One agent created: both the webhook and the destination get a delivery, paged through GraphQL as over REST.
      await ctx.fx.newAgent()
      for (const [what, query, id, rest, field] of [
        ['webhook', hookQuery, hookId, `/v1/webhooks/${hookId}/deliveries?limit=10`, 'webhook'],
        ['destination', destQuery, destId, `/v1/destinations/${destId}/deliveries?limit=10`, 'destination'],
      ] as const) {
        const page = await waitUntil(
          `the ${what}'s delivery page to list a delivery`,
          async () => obj(answered(await gql(ctx.http, url, query, { id }), field, `${what}(id)`).deliveries),
          (p) => Array.isArray(p.data) && p.data.length > 0,
          ctx.config.waitMs,
        )
        const restPage = await restJson(ctx, rest)
        const first = obj((page.data as unknown[])[0])
        const restFirst = obj((Array.isArray(restPage.data) ? restPage.data : [])[0])
        assert(
          first.delivery_id === restFirst.delivery_id && first[`${what}_id`] === id,
          `the ${what}'s first delivery is ${short(first)} through GraphQL, ${short(restFirst)} over REST`,
        )
      }
      const deleted = await gql(ctx.http, url, 'mutation($id: ID!) { deleteDestination(id: $id) }', {
        id: destId,
      })
      assert(dataOf(deleted).deleteDestination === true, `deleteDestination answered ${short(deleted.body)}`)
      const gone = await ctx.http.get(`/v1/destinations/${destId}`)
      assert(
        gone.status === 404,
        `after deleteDestination, GET /v1/destinations/{id} answered ${gone.status}`,
      )
      const again = await gql(ctx.http, url, 'query($id: ID!) { destination(id: $id) { destination_id } }', {
        id: destId,
      })
      assert(
        dataOf(again).destination === null && codeOf(again) === 'not_found',
        `a deleted destination reads ${short(again.body)}`,
      )
    },
  },
  {
    id: 'graphql.run-mutations',
    title:
      'GraphQL startRun, pauseRun, resumeRun, cancelRun and decideApproval act like their REST operations, and agent.runs lists the run',
    level: 'profile',
    clauses: ['S4.15', 'S3.3'],
    async run(ctx) {
      const url = declaredSurface(ctx)
      // A run over slow tools stays running long enough to be paused, resumed and cancelled: eight, as three requests
      // come before the pause, which on a loaded machine or a slow deployment can outlast three slow steps (the
      // cancel ends the run, so the longer plan costs no time).
      const agentId = (await ctx.fx.slowAgent(8)).id
      const started = answered(
        await gql(
          ctx.http,
          url,
          'mutation($a: ID!, $in: RunStartRequest) { startRun(agent_id: $a, input: $in) { run_id agent_id status trace_level } }',
          {
            a: agentId,
            in: { inputs: { note: 'gql' }, trace_level: 'detailed', mode: null },
          },
        ),
        'startRun',
        'startRun',
      )
      const runId = String(started.run_id)
      assert(
        started.agent_id === agentId && started.trace_level === 'detailed',
        `startRun answered ${short(started)}`,
      )
      const restRun = await restJson(ctx, `/v1/runs/${runId}`)
      assert(
        restRun.agent_id === agentId && restRun.trace_level === 'detailed',
        `REST reads the run as ${short(restRun)}`,
      )
      // No input at all: the REST operation's empty body.
      const bare = answered(
        await gql(ctx.http, url, 'mutation($a: ID!) { startRun(agent_id: $a) { run_id trace_level } }', {
          a: agentId,
        }),
        'startRun',
        'startRun without input',
      )
      assert(typeof bare.run_id === 'string', `startRun without input answered ${short(bare)}`)
      ctx.cleanup(`cancel run ${String(bare.run_id)}`, (http) =>
        http.post(`/v1/runs/${String(bare.run_id)}/cancel`),
      )
      const runs = answered(
        await gql(
          ctx.http,
          url,
          'query($id: ID!) { agent(id: $id) { runs(limit: 5) { data { run_id } next_cursor } } }',
          {
            id: agentId,
          },
        ),
        'agent',
        'agent.runs',
      )
      const listed = obj(runs.runs)
      assert(
        Array.isArray(listed.data) && listed.data.some((r) => obj(r).run_id === runId),
        `agent.runs answered ${short(listed)}`,
      )
      // Each control answers the run as REST then reads it (or refuses as REST does).
      for (const action of ['pause', 'resume', 'cancel'] as const) {
        const res = await gql(
          ctx.http,
          url,
          `mutation($id: ID!) { ${action}Run(id: $id) { run_id status } }`,
          {
            id: runId,
          },
        )
        const run = obj(dataOf(res)[`${action}Run`])
        const rest = await restJson(ctx, `/v1/runs/${runId}`)
        if (errorsOf(res).length > 0) {
          assert(
            action !== 'cancel' && codeOf(res) === 'invalid_state' && run.run_id === undefined,
            `${action}Run answered ${short(res.body)}`,
          )
          continue
        }
        assert(
          run.run_id === runId && typeof run.status === 'string',
          `${action}Run answered ${short(res.body)}`,
        )
        if (action === 'cancel')
          assert(
            run.status === 'cancelled' && rest.status === 'cancelled',
            `cancelRun answered ${short(run)}, REST ${short(rest.status)}`,
          )
      }
      const missing = await gql(ctx.http, url, 'mutation($id: ID!) { pauseRun(id: $id) { run_id } }', {
        id: `${runId.slice(0, -4)}zzzz`,
      })
      assert(
        dataOf(missing).pauseRun === null && codeOf(missing) === 'not_found',
        `pauseRun of an unknown run answered ${short(missing.body)}`,
      )
      const waiting = await ctx.fx.awaitingRun()
      const stepId = firstAwaitingStep(waiting.waiting)
      const decided = answered(
        await gql(
          ctx.http,
          url,
          'mutation($r: ID!, $s: String!, $in: ApprovalDecision!) { decideApproval(run_id: $r, step_id: $s, input: $in) { run_id status } }',
          { r: waiting.runId, s: stepId, in: { decision: 'reject', comment: 'gql conformance' } },
        ),
        'decideApproval',
        'decideApproval',
      )
      const after = await ctx.fx.waitForStatus(waiting.runId, (s) => s !== 'awaiting_approval', 'decided')
      assert(
        decided.run_id === waiting.runId && after.status === 'failed',
        `decideApproval(reject) answered ${short(decided)}; REST reads ${short(after.status)}, not failed`,
      )
    },
  },
  {
    id: 'graphql.ws-key-quotas',
    lane: QUOTA_LANE,
    title:
      "graphql-ws sockets and subscriptions count against the key's stream bounds with its /v1/stream connections and topics: past stream_sockets_per_key an upgrade is refused 403 (a token in connection_init closes 4403 naming the quota), past stream_subscriptions_per_key a subscription errors quota_exceeded while a query is still answered (it holds no topic, and its end frees none); completing a subscription or closing a socket gives the room back",
    level: 'profile',
    clauses: ['S4.15', 'S5.3'],
    async run(ctx) {
      const url = declaredSurface(ctx)
      const token = ctx.config.tokens.quotaLimited
      if (!token) skip(`no ${tokenName('quotaLimited')} given`)
      const limited = ctx.as('quotaLimited')
      // A record to replay: a subscription taken with since: 0 answers with it at once, one refused with an error.
      const connector = ctx.name('gql-quota')
      expectStatus(
        await limited.post(`/v1/grid/connectors/${connector}/ingest`, { records: batch(ctx, 1) }),
        202,
        'ingesting a record with the quota-limited key',
      )
      const most = 10
      const { open, refusal, closedByInit } = await fillGqlSlots(ctx, url, token, most)
      const streams: Opened[] = []
      try {
        // The quota-limited identity is one whose key holds a few stream connections (conformance/README.md): one
        // that took ten and was refused none keeps no such bound, which is the difference this check reports.
        if (!refusal)
          fail(
            `the quota-limited key opened ${most} graphql-ws sockets and none was refused: no stream_sockets_per_key bound (the identity's key is to hold a few)`,
          )
        const n = open.length
        assert(
          refusal.refused === 403,
          `with ${n} sockets open, the next upgrade was ${refusal.refused ?? (refusal.closed ? `closed ${refusal.closed.code}` : 'neither acknowledged nor refused')}, not refused 403`,
        )
        assert(
          closedByInit?.closed?.code === 4403 &&
            closedByInit.closed.reason === `quota_exceeded: stream_sockets_per_key limit=${n} used=${n}`,
          `with ${n} sockets open, one whose token came in connection_init ${closedByInit?.closed ? `closed ${closedByInit.closed.code} ${short(closedByInit.closed.reason)}` : 'stayed open'}, not 4403 "quota_exceeded: stream_sockets_per_key limit=${n} used=${n}"`,
        )
        // The stream counts against the same slots.
        const stream = await connect(ctx, token)
        if ('ws' in stream) {
          streams.push(stream)
          fail(`with the key's ${n} slots taken by graphql-ws sockets, a /v1/stream upgrade opened`)
        }
        assert(
          stream.refused === 403,
          `a /v1/stream upgrade past the key's slots was refused ${stream.refused}, not 403`,
        )

        // Subscriptions until one is refused (at most 20), each answered at once by the replayed record.
        const s = open[0] as GqlSocket
        const subscribe = async (id: string) => {
          s.send({
            id,
            type: 'subscribe',
            payload: {
              query: 'subscription($c: ID!) { connectorRecords(connector_id: $c, since: 0) { seq } }',
              variables: { c: connector },
            },
          })
          return s.next((m) => m.id === id && (m.type === 'next' || m.type === 'error'), ctx.config.waitMs)
        }
        const taken: string[] = []
        let refused: Json | undefined
        for (let i = 0; i < 20 && !refused; i++) {
          const answer = await subscribe(`q${i}`)
          if (answer?.type === 'next') taken.push(`q${i}`)
          else refused = answer ?? { type: 'nothing' }
        }
        if (!refused)
          fail(
            "the quota-limited key held 20 subscriptions and none was refused: no stream_subscriptions_per_key bound (the identity's key is to hold a few topics)",
          )
        const ext = obj(obj((Array.isArray(refused.payload) ? refused.payload : [])[0]).extensions)
        assert(
          refused.type === 'error' &&
            ext.code === 'quota_exceeded' &&
            obj(ext.detail).quota === 'stream_subscriptions_per_key' &&
            obj(ext.detail).limit === taken.length,
          `with ${taken.length} subscriptions held, the next was answered ${short(refused)}, not an error quota_exceeded {quota: stream_subscriptions_per_key, limit: ${taken.length}}`,
        )
        // A query over the same socket holds no topic: it is answered while every topic is held, and its end frees
        // none (graphql-ws ends a query with the same `complete` a finished subscription gets).
        s.send({ id: 'query', type: 'subscribe', payload: { query: '{ agents(limit: 1) { next_cursor } }' } })
        const query = await s.next(
          (m) => m.id === 'query' && (m.type === 'next' || m.type === 'error'),
          ctx.config.waitMs,
        )
        assert(
          query?.type === 'next' && obj(query.payload).errors === undefined,
          `with the key's ${taken.length} topics held, a query over the same socket was answered ${short(query)}, not its data: a query holds no topic`,
        )
        await s.next((m) => m.id === 'query' && m.type === 'complete', ctx.config.waitMs)
        const beyond = await subscribe('after-query')
        assert(
          beyond?.type === 'error',
          `after a query over the socket ended, a subscription beyond the key's ${taken.length} topics was answered ${short(beyond)}: the query's end gave back a topic it never held`,
        )
        // Completing one gives its room back.
        s.send({ id: taken[0], type: 'complete' })
        let again: Json | undefined
        // The room may come back a moment after the complete: a few tries, each answered at once.
        for (let i = 0; i < 10 && again?.type !== 'next'; i++) {
          again = await subscribe(`again${i}`)
          if (!again) break
        }
        assert(
          again?.type === 'next',
          `after completing a subscription, a new one was answered ${short(again)}`,
        )
        // Closing a socket gives its slot back: the stream opens.
        ;(open.pop() as GqlSocket).ws.terminate()
        const deadline = Date.now() + ctx.config.waitMs
        let last: Opened | RefusedUpgrade | undefined
        while (Date.now() < deadline) {
          last = await connect(ctx, token)
          if ('ws' in last) {
            streams.push(last)
            break
          }
          await sleep(100)
        }
        assert(
          last && 'ws' in last,
          `after a graphql-ws socket closed, /v1/stream was still refused: ${short(last)}`,
        )
      } finally {
        for (const g of open) g.ws.terminate()
        for (const st of streams) st.close()
      }
    },
  },
  {
    id: 'graphql.ws-rate-limited',
    lane: LIMITED_LANE,
    title:
      "Each operation over graphql-ws counts against its workspace's rate limit as a request does: past it, an operation is answered an error rate_limited (status 429) and the socket stays open",
    level: 'profile',
    clauses: ['S8.5', 'S8.9'],
    async run(ctx) {
      const url = declaredSurface(ctx)
      const token = ctx.config.tokens.rateLimited
      if (!token) skip(`no ${tokenName('rateLimited')} given`)
      const most = SOCKET_OPERATIONS_PAST_LIMIT
      const s = await openGql(ctx, url, token)
      try {
        let refusal: Json | undefined
        let answered = 0
        for (let i = 0; i < most && !refusal; i++) {
          s.send({ id: `op${i}`, type: 'subscribe', payload: { query: '{ __typename }' } })
          const m = await s.next(
            (x) => x.id === `op${i}` && (x.type === 'next' || x.type === 'error'),
            ctx.config.waitMs,
          )
          if (!m)
            fail(`operation ${i + 1} over graphql-ws was answered nothing within ${ctx.config.waitMs} ms`)
          const errors = wsErrorsOf(m)
          if (errors.length > 0) refusal = errors[0]
          else answered += 1
        }
        if (!refusal)
          fail(
            `${most} operations over one graphql-ws socket of the small-limit workspace were all answered: none counted against its rate limit`,
          )
        const ext = obj(refusal.extensions)
        assert(
          ext.code === 'rate_limited' &&
            ext.status === 429 &&
            typeof ext.request_id === 'string' &&
            ext.request_id !== '',
          `after ${answered} answered operations, one was refused with ${short(refusal)}, not rate_limited (status 429) with a request id`,
        )
        assert(!s.closed, `the socket closed after a rate-limited operation: ${short(s.closed)}`)
      } finally {
        s.ws.terminate()
      }
    },
  },
  {
    id: 'graphql.ws-authentication',
    title:
      'graphql-ws takes the token at the upgrade (header or access_token) or in connection_init; an unknown one is 401 at the upgrade, none at all (or a connection_init authorization that is no text) closes 4401; an empty access_token is none, leaving the token to connection_init',
    level: 'profile',
    clauses: ['S4.15', 'S5.1'],
    async run(ctx) {
      const url = declaredSurface(ctx)
      const primary = ctx.config.tokens.primary
      const unknown = await openGql(ctx, url, UNKNOWN_TOKEN)
      assert(
        unknown.refused === 401,
        `an upgrade with an unknown token was ${unknown.refused ?? 'accepted'}, not 401`,
      )
      const badQuery = await openGql(ctx, url, null, {}, `?access_token=${UNKNOWN_TOKEN}`)
      assert(
        badQuery.refused === 401,
        `an unknown access_token was ${badQuery.refused ?? 'accepted'}, not 401`,
      )
      const none = await openGql(ctx, url, null, {})
      await none.next(() => false, ctx.config.timeoutMs)
      assert(
        none.closed?.code === 4401 && !none.messages.some((m) => m.type === 'connection_ack'),
        `a socket with no token anywhere ${none.closed ? `closed with ${none.closed.code}` : 'stayed open'} (messages ${short(none.messages)}), not 4401`,
      )
      const badInit = await openGql(ctx, url, null, { authorization: `Bearer ${UNKNOWN_TOKEN}` })
      await badInit.next(() => false, ctx.config.timeoutMs)
      assert(
        badInit.closed?.code === 4401 && !badInit.messages.some((m) => m.type === 'connection_ack'),
        `connection_init with an unknown token: ${badInit.closed ? `closed with ${badInit.closed.code}` : 'stayed open'}, not 4401`,
      )
      // An authorization that is no text carries no token: the socket is closed as one without any.
      const oddInit = await openGql(ctx, url, null, { authorization: 12345 })
      await oddInit.next(() => false, ctx.config.timeoutMs)
      assert(
        oddInit.closed?.code === 4401 && !oddInit.messages.some((m) => m.type === 'connection_ack'),
        `connection_init whose authorization is the number 12345: ${oddInit.closed ? `closed with ${oddInit.closed.code}` : 'stayed open'}, not 4401`,
      )
      // The 4401's reason is the message REST's 401 gives the same credentials (none, an unknown token).
      for (const [what, socket, token] of [
        ['no token anywhere', none, null],
        ['connection_init with an unknown token', badInit, UNKNOWN_TOKEN],
        ['connection_init whose authorization is a number', oddInit, null],
      ] as const) {
        const rest = obj(obj((await ctx.http.get('/v1/agents?limit=1', { token })).body).error).message
        assert(
          typeof rest === 'string' && socket.closed?.reason === rest,
          `${what}: the 4401's reason is ${short(socket.closed?.reason)}, REST's 401 says ${short(rest)}`,
        )
      }
      // The upgrade of another path is no GraphQL socket: an unknown one is 404, /v1/stream is the stream's.
      const elsewhere = await openGql(ctx, url, primary, {}, '/x')
      assert(
        elsewhere.refused === 404,
        `an upgrade of ${socketUrl(url, '/x')} was ${elsewhere.refused ?? 'accepted'}, not 404`,
      )
      // A message over 256 KiB closes the socket (1009, message too big).
      const big = await openGql(ctx, url, primary)
      big.send({
        id: 'big',
        type: 'subscribe',
        payload: { query: `{ __typename } # ${'x'.repeat(300 * 1024)}` },
      })
      await big.next(() => false, ctx.config.timeoutMs)
      assert(
        big.closed?.code === 1009,
        `a 300 KiB message ${big.closed ? `closed the socket with ${big.closed.code}` : 'left it open'}, not 1009`,
      )
      for (const [what, socket] of [
        [
          'the token in connection_init',
          () => openGql(ctx, url, null, { authorization: `Bearer ${primary}` }),
        ],
        [
          'the token as access_token',
          () => openGql(ctx, url, null, {}, `?access_token=${encodeURIComponent(primary)}`),
        ],
        // An empty access_token is none: the token then comes in connection_init.
        [
          'an empty access_token and the token in connection_init',
          () => openGql(ctx, url, null, { authorization: `Bearer ${primary}` }, '?access_token='),
        ],
        ['the token at the upgrade', () => openGql(ctx, url, primary)],
      ] as const) {
        const s = await socket()
        try {
          assert(
            s.messages.some((m) => m.type === 'connection_ack'),
            `with ${what} the socket got no connection_ack: ${s.refused ?? ''} ${short(s.closed)} ${short(s.messages)}`,
          )
          s.send({ id: 'q', type: 'subscribe', payload: { query: '{ agents(limit: 1) { next_cursor } }' } })
          const done = await s.next((m) => m.id === 'q' && m.type === 'complete', ctx.config.timeoutMs)
          const payload = payloadsOf(s, 'q')[0]
          assert(
            done !== undefined && 'agents' in obj(payload?.data),
            `with ${what} a query over the socket answered ${short(s.messages)}`,
          )
        } finally {
          s.ws.terminate()
        }
      }
    },
  },
  {
    id: 'graphql.records-and-schema',
    title:
      'GraphQL records(connector_id) pages what GET /v1/grid/connectors/{id}/records pages, and /schema.graphql serves the SDL without a key',
    level: 'profile',
    clauses: ['S4.15', 'S8.1'],
    async run(ctx) {
      const url = declaredSurface(ctx)
      const connector = ctx.name('gql-recs')
      await ingestAccepted(ctx, connector, batch(ctx, 3), 'ingesting 3 records')
      const rest = await restJson(ctx, `/v1/grid/connectors/${connector}/records?limit=2`)
      const page = answered(
        await gql(
          ctx.http,
          url,
          'query($c: ID!) { records(connector_id: $c, limit: 2) { data { id seq body lineage { leaf_hash batch_root } } next_cursor } }',
          {
            c: connector,
          },
        ),
        'records',
        'records(connector_id)',
      )
      // GraphQL's page is the reference profile's ({ data }); REST's is whatever page the deployment serves.
      const ids = (items: unknown) =>
        JSON.stringify((Array.isArray(items) ? items : []).map((r) => obj(r).id))
      const restIds = ids(pageItems(rest))
      assert(
        ids(page.data) === restIds && (page.data as unknown[]).length === 2,
        `records answered ${ids(page.data)}, REST ${restIds}`,
      )
      assert(
        typeof page.next_cursor === 'string',
        `records' first page of 2 has next_cursor ${short(page.next_cursor)}`,
      )
      const next = answered(
        await gql(
          ctx.http,
          url,
          'query($c: ID!, $k: String) { records(connector_id: $c, cursor: $k) { data { id } next_cursor } }',
          {
            c: connector,
            k: page.next_cursor,
          },
        ),
        'records',
        'records with the next cursor',
      )
      assert(
        (next.data as unknown[]).length === 1 && next.next_cursor === null,
        `the second page is ${short(next)}`,
      )
      const bad = await gql(ctx.http, url, '{ records(connector_id: "bad id!") { next_cursor } }')
      assert(
        dataOf(bad).records === null && codeOf(bad) === 'invalid_request',
        `records(connector_id: "bad id!") answered ${short(bad.body)}`,
      )
      const sdl = await ctx.http.get('/schema.graphql', { token: null })
      expectStatus(sdl, 200, 'GET /schema.graphql without a token')
      assert(
        sdl.headers['content-type'] === 'text/plain; charset=utf-8' &&
          sdl.text.includes('type Query {') &&
          sdl.text.includes('type Subscription {') &&
          sdl.text.includes('trace(') &&
          sdl.text.includes('scalar JSON'),
        `GET /schema.graphql answered ${sdl.headers['content-type']} ${short(sdl.text, 200)}`,
      )
    },
  },
  {
    id: 'graphql.schema-documents-scopes',
    title:
      'Each GraphQL root field mirroring a REST operation names, in its description, the scope that operation requires',
    level: 'profile',
    clauses: ['S4.15', 'S5.1'],
    async run(ctx) {
      const url = declaredSurface(ctx)
      const res = await gql(
        ctx.http,
        url,
        '{ __schema { queryType { fields { name description } } mutationType { fields { name description } } } }',
      )
      const schema = answered(res, '__schema', 'introspecting the root fields')
      const described = new Map<string, string>()
      for (const root of ['queryType', 'mutationType'])
        for (const f of (obj(schema[root]).fields as unknown[] | undefined) ?? [])
          described.set(String(obj(f).name), String(obj(f).description ?? ''))
      const wrong: string[] = []
      for (const [field, operationId] of Object.entries(ROOT_OPERATIONS)) {
        const op = ctx.contract.byId(operationId)
        const item = obj(
          obj(obj(ctx.contract.doc.paths)[op?.template ?? ''])[(op?.method ?? '').toLowerCase()],
        )
        const scope = obj((item.security as unknown[] | undefined)?.[0]).bearerAuth
        const want = Array.isArray(scope) ? `(scope ${String(scope[0])})` : undefined
        if (!want) {
          wrong.push(`the contract gives ${operationId} no bearerAuth scope`)
          continue
        }
        const text = described.get(field)
        if (text === undefined || !text.includes(want))
          wrong.push(
            `${field}: ${text === undefined ? 'no such root field' : short(text)} does not say ${want}`,
          )
      }
      assert(wrong.length === 0, wrong.join('; '))
    },
  },
  {
    id: 'graphql.idempotency-keys-mutations-only',
    title:
      'Over POST /v1/graphql an Idempotency-Key keys the mutations only: a query under a used key runs again, the operation operationName picks decides',
    level: 'profile',
    clauses: ['S4.15', 'S8.3'],
    async run(ctx) {
      const url = declaredSurface(ctx)
      const key = (label: string) => ({ 'Idempotency-Key': ctx.name(`gql-key-${label}`) })
      const k1 = key('query')
      const first = await gql(ctx.http, url, '{ agents(limit: 1) { next_cursor } }', {}, k1)
      const second = await gql(ctx.http, url, '{ __typename }', {}, k1)
      assert(
        first.status === 200 && second.status === 200 && dataOf(second).__typename === 'Query',
        `two different queries under one key answered ${first.status} then ${second.status} ${short(second.body)}`,
      )
      // operationName null, as GraphQL clients send it for a document of one operation, names no operation.
      const k0 = key('query-null-name')
      const n1 = await ctx.http.post(
        url,
        { query: '{ agents(limit: 1) { next_cursor } }', operationName: null },
        { headers: k0 },
      )
      const n2 = await ctx.http.post(url, { query: '{ __typename }', operationName: null }, { headers: k0 })
      assert(
        n1.status === 200 && n2.status === 200 && dataOf(n2).__typename === 'Query',
        `two different queries with operationName null under one key answered ${n1.status} then ${n2.status} ${short(n2.body)}`,
      )
      // One document, two operations: operationName picks the query (not keyed) or the mutation (keyed).
      const name = ctx.name('gql-key-agent')
      const doc = `query Q { __typename } mutation M($n: String!) { createAgent(input: { name: $n, behavior: autonomous }) { agent_id } }`
      const k2 = key('pick-query')
      const q1 = await ctx.http.post(
        url,
        { query: doc, operationName: 'Q', variables: { n: name } },
        { headers: k2 },
      )
      const q2 = await ctx.http.post(
        url,
        { query: doc, operationName: 'Q', variables: { n: `${name}-2` } },
        { headers: k2 },
      )
      assert(
        q1.status === 200 && q2.status === 200 && dataOf(q2).__typename === 'Query',
        `operationName Q (a query) under one key with two bodies answered ${q1.status} then ${q2.status} ${short(q2.body)}`,
      )
      const k3 = key('pick-mutation')
      const m1 = await ctx.http.post(
        url,
        { query: doc, operationName: 'M', variables: { n: name } },
        { headers: k3 },
      )
      const id = obj(dataOf(m1).createAgent).agent_id
      assert(typeof id === 'string', `operationName M answered ${short(m1.body)}`)
      ctx.cleanup(`delete agent ${name}`, (http) => http.delete(`/v1/agents/${String(id)}`))
      const m2 = await ctx.http.post(
        url,
        { query: doc, operationName: 'M', variables: { n: `${name}-2` } },
        { headers: k3 },
      )
      assert(
        m2.status === 409,
        `operationName M under its key with another body answered ${m2.status}, not 409`,
      )
      // A document past the parser's 5000 tokens is no query the server can tell: it is keyed like any POST, so
      // another body under its key is 409 (a document that does not parse, itself keyed).
      const k4 = key('long')
      const long = await gql(
        ctx.http,
        url,
        `{ ${Array.from({ length: 2600 }, (_, i) => `a${i}: __typename`).join(' ')} }`,
        {},
        k4,
      )
      const other = await gql(ctx.http, url, '{', {}, k4)
      assert(
        other.status === 409,
        `a document of more than 5000 tokens (answered ${long.status}), then another body under its key answered ${other.status}, not 409`,
      )
    },
  },
  {
    id: 'graphql.field-scopes',
    title:
      "Each GraphQL field that mirrors a REST operation needs that operation's scope: a token without it gets policy_denied naming it, a token with it is answered",
    level: 'profile',
    clauses: ['S4.15', 'S1.3'],
    needs: ['narrowScope', 'otherScope'],
    async run(ctx) {
      const url = declaredSurface(ctx)
      const scopeOf = (operationId: string): string | undefined => {
        const op = ctx.contract.byId(operationId)
        const item = obj(
          obj(obj(ctx.contract.doc.paths)[op?.template ?? ''])[(op?.method ?? '').toLowerCase()],
        )
        const scope = obj((item.security as unknown[] | undefined)?.[0]).bearerAuth
        return Array.isArray(scope) ? String(scope[0]) : undefined
      }
      /** Every error of `res` by the alias or field its path starts with: the scope its detail says was missing. */
      const missing = (res: HttpResponse): Map<string, unknown> =>
        new Map(
          errorsOf(res).map((e) => {
            const ext = obj(e.extensions)
            const path = Array.isArray(e.path) ? e.path.join('.') : '?'
            return [
              path,
              ext.code === 'policy_denied' ? JSON.stringify(obj(ext.detail).limit) : `${String(ext.code)}`,
            ]
          }),
        )
      const wrong: string[] = []
      const expect = (got: Map<string, unknown>, path: string, operationId: string | null, data: unknown) => {
        const scope = operationId ? scopeOf(operationId) : undefined
        const want = operationId ? JSON.stringify([scope]) : undefined
        if (got.get(path) !== want)
          wrong.push(
            `${path}: ${want ? `expected policy_denied lacking ${want}` : 'expected an answer'}, got ${short(got.get(path) ?? data)}`,
          )
      }
      // The narrow token holds agents:read only.
      const agentId = await ctx.fx.agent()
      const narrow = ctx.as('narrowScope')
      const reads = await gql(
        narrow,
        url,
        `query($a: ID!) { agent(id: $a) { agent_id } withRuns: agent(id: $a) { runs(limit: 1) { next_cursor } } agents(limit: 1) { next_cursor }
          run(id: "run_x") { run_id } task(id: "tsk_x") { task_id } tool(id: "tol_x") { tool_id }
          tools(limit: 1) { next_cursor } webhook(id: "whk_x") { webhook_id } webhooks(limit: 1) { next_cursor }
          destination(id: "dst_x") { destination_id } destinations(limit: 1) { next_cursor }
          records(connector_id: "c") { next_cursor } }`,
        { a: agentId },
      )
      expectStatus(reads, 200, "the narrow token's queries")
      const readErrors = missing(reads)
      const data = dataOf(reads)
      assert(
        obj(data.agent).agent_id === agentId,
        `the narrow token's agent(id) answered ${short(data.agent)}`,
      )
      assert(data.agents !== null, `the narrow token's agents answered ${short(reads.body)}`)
      expect(readErrors, 'agent', null, data.agent)
      expect(readErrors, 'agents', null, data.agents)
      // Agent.runs is RunPage!: its refusal makes the agent null too (GraphQL's null propagation).
      expect(readErrors, 'withRuns.runs', 'listAgentRuns', undefined)
      for (const field of [
        'run',
        'task',
        'tool',
        'tools',
        'webhook',
        'webhooks',
        'destination',
        'destinations',
        'records',
      ])
        expect(readErrors, field, ROOT_OPERATIONS[field] ?? field, data[field])
      const writes = await gql(
        narrow,
        url,
        `mutation { createAgent(input: { name: "n", behavior: autonomous }) { agent_id }
          assignTask(agent_id: "agt_x", input: { description: "d" }) { task_id }
          registerTool(input: { name: "n", provider: "p", policy_binding: { envelope: "default", required_scopes: [] } }) { tool_id }
          retireTool(id: "tol_x") { tool_id } startRun(agent_id: "agt_x") { run_id } pauseRun(id: "run_x") { run_id }
          resumeRun(id: "run_x") { run_id } cancelRun(id: "run_x") { run_id }
          decideApproval(run_id: "run_x", step_id: "s", input: { decision: approve }) { run_id }
          createWebhook(input: { url: "${unwantedHookUrl(ctx)}", events: ["run.started"], secret: "s" }) { webhook_id }
          createDestination(input: { type: cloudevents, name: "n" }) { destination_id }
          updateDestination(id: "dst_x", input: { name: "m" }) { destination_id } deleteDestination(id: "dst_x")
          testDestination(id: "dst_x") { ok } }`,
      )
      expectStatus(writes, 200, "the narrow token's mutations")
      const writeErrors = missing(writes)
      for (const field of Object.keys(obj(writes.body).data ?? {}))
        expect(writeErrors, field, ROOT_OPERATIONS[field] ?? field, dataOf(writes)[field])
      assert(Object.keys(dataOf(writes)).length === 14, `the mutations answered ${short(writes.body)}`)
      // The other token holds tasks:* only: a task is answered, its agent and run are not.
      const task = await ctx.http.post(`/v1/agents/${agentId}/tasks`, {
        description: ctx.name('gql-scope-task'),
      })
      expectStatus(task, [200, 201, 202], 'assigning a task')
      const taskId = String(obj(task.body).task_id)
      const other = await gql(
        ctx.as('otherScope'),
        url,
        'query($t: ID!) { task(id: $t) { task_id agent { agent_id } run { run_id } } }',
        { t: taskId },
      )
      const otherErrors = missing(other)
      assert(
        obj(dataOf(other).task).task_id === taskId,
        `the tasks:* token's task(id) answered ${short(other.body)}`,
      )
      expect(otherErrors, 'task.agent', 'getAgent', undefined)
      expect(otherErrors, 'task.run', 'getRun', undefined)
      assert(wrong.length === 0, wrong.join('; '))
    },
  },
  {
    id: 'graphql.introspection-cost',
    title:
      "Introspection is costed at the schema's own sizes: a flood of aliased introspection fields is refused with exactly that cost",
    level: 'profile',
    clauses: ['S4.15'],
    async run(ctx) {
      const url = declaredSurface(ctx)
      const shape = answered(
        await gql(
          ctx.http,
          url,
          `{ __schema { types { fields(includeDeprecated: true) { args(includeDeprecated: true) { name } }
            inputFields(includeDeprecated: true) { name } enumValues(includeDeprecated: true) { name }
            interfaces { name } possibleTypes { name } } directives { args(includeDeprecated: true) { name } } } }`,
        ),
        '__schema',
        'a full introspection of the list sizes',
      )
      const list = (v: unknown): Json[] => (Array.isArray(v) ? v.map(obj) : [])
      const types = list(shape.types)
      const directives = list(shape.directives)
      const sizes = (lists: Json[][]) => ({
        per: Math.max(0, ...lists.map((l) => l.length)),
        total: lists.reduce((n, l) => n + l.length, 0),
      })
      const fields = types.map((t) => list(t.fields))
      const T = types.length
      const F = sizes(fields)
      const A = sizes(fields.flat().map((f) => list(f.args)))
      const I = sizes(types.map((t) => list(t.inputFields)))
      const E = sizes(types.map((t) => list(t.enumValues)))
      const If = sizes(types.map((t) => list(t.interfaces)))
      const P = sizes(types.map((t) => list(t.possibleTypes)))
      const D = directives.length
      const DA = sizes(directives.map((d) => list(d.args)))
      // Under distinct parents a list holds at most the schema's total; under a type reference only per × count.
      const probes: [string, string, number][] = [
        [
          'types, their fields and args',
          '__schema { types { fields { args { name } } } }',
          1 + T + F.total + A.total,
        ],
        [
          'directives and their args, and the types',
          '__schema { directives { args { name } } types { name } }',
          1 + D + DA.total + T,
        ],
        [
          "types' input fields, enum values, interfaces, possible types",
          '__schema { types { inputFields { name } enumValues { name } interfaces { name } possibleTypes { name } } }',
          1 + T + I.total + E.total + If.total + P.total,
        ],
        [
          "a type's fields' types' fields",
          '__type(name: "Query") { fields { type { fields { name } } } }',
          1 + 2 * F.per + F.per * F.per,
        ],
      ]
      for (const [what, probe, cost] of probes) {
        const copies = Math.floor(10_000 / cost) + 1
        const query = `{ ${Array.from({ length: copies }, (_, i) => `p${i}: ${probe}`).join(' ')} }`
        const refused = refusedDocument(await gql(ctx.http, url, query), `${copies} copies of ${what}`)
        const detail = obj(obj(refused.extensions).detail)
        assert(
          detail.limit === 'cost' && detail.observed === copies * cost,
          `${copies} copies of ${what} (${cost} each by the schema's sizes) were refused with ${short(detail)}, not observed ${copies * cost}`,
        )
      }
    },
  },
]
