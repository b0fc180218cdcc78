/**
 * The GraphQL surface (spec §4 mentions one without a shape): core checks of the spec's own rules when the
 * deployment declares the surface (graphqlSpecChecks), and profile checks of the reference's answer, POST
 * /v1/graphql with the contract's types and snake_case fields and REST's auth, tenancy, limits and idempotency.
 */

import WebSocket from 'ws'
import { sameJson } from '../canonical.js'
import type { Check, CheckContext } from '../check.js'
import { settingName, TOKENS, tokenName } from '../config.js'
import { expectStatus, ownId } from '../fixtures.js'
import { type HttpClient, type HttpResponse, obj } from '../http.js'
import { rateWindows } from '../ratewindows.js'
import { assert, fail, notApplicable, skip } from '../types.js'
import { short, waitUntil } from '../wait.js'

/** Well-formed for the reference (`aok_<26>_<43>`) but never issued; any deployment must refuse it. */
const UNKNOWN_TOKEN = `aok_${'0'.repeat(26)}_${'x'.repeat(43)}`

type Json = Record<string, unknown>
interface GqlError {
  message?: unknown
  extensions?: Json
}

export function gql(
  client: HttpClient,
  url: string,
  query: string,
  variables: Json = {},
  headers: Record<string, string> = {},
): Promise<HttpResponse> {
  return client.post(url, { query, variables }, { headers })
}

function errorsOf(res: HttpResponse): GqlError[] {
  const errors = obj(res.body).errors
  return Array.isArray(errors) ? (errors as GqlError[]) : []
}

function firstCode(res: HttpResponse): unknown {
  return errorsOf(res)[0]?.extensions?.code
}

/** The errors of an answer without their request ids, which differ between any two requests. */
function comparable(res: HttpResponse): unknown {
  return {
    data: obj(res.body).data,
    errors: errorsOf(res).map((e) => ({ ...e, extensions: { ...e.extensions, request_id: null } })),
  }
}

/** The graphql-ws socket's URL: the declared surface's, over ws(s). */
export function socketUrl(url: string, suffix = ''): string {
  const u = new URL(url)
  u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:'
  if (suffix.startsWith('?')) for (const [k, v] of new URLSearchParams(suffix)) u.searchParams.append(k, v)
  else if (suffix) u.pathname = `${u.pathname.replace(/\/+$/, '')}${suffix}`
  return u.toString()
}

async function startedRunId(ctx: CheckContext): Promise<string> {
  const agent = await ctx.fx.agent()
  return (await ctx.fx.startRun(agent)).runId
}

/**
 * One subscription over graphql-ws (the graphql-transport-ws subprotocol) on the primary token: collects the
 * `next` payloads until `match` finds one or `timeoutMs` passes; every wait ends. With `afterFirst`, that runs once
 * the first payload has come (the subscription has begun reading) and `match` is asked only after it resolved, of
 * every payload so far as well.
 */
function subscribeUntil(
  ctx: CheckContext,
  url: string,
  query: string,
  match: (payload: Json) => boolean,
  timeoutMs: number,
  afterFirst?: () => Promise<void>,
): Promise<{ protocol: string; payloads: Json[]; matched: boolean; problem?: string }> {
  ctx.http.budget.take()
  return new Promise((resolve) => {
    const payloads: Json[] = []
    const ws = new WebSocket(socketUrl(url), 'graphql-transport-ws', {
      headers: { authorization: `Bearer ${ctx.config.tokens.primary}` },
      handshakeTimeout: ctx.config.timeoutMs,
    })
    ctx.opened(ws)
    let settled = false
    let ready = !afterFirst
    const finish = (matched: boolean, problem?: string) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      ws.terminate()
      resolve({ protocol: ws.protocol, payloads, matched, ...(problem ? { problem } : {}) })
    }
    const timer = setTimeout(() => finish(false), timeoutMs)
    ws.once('unexpected-response', (_req, res) => {
      res.resume()
      finish(false, `the upgrade was refused with ${res.statusCode}`)
    })
    ws.once('error', (err) => finish(false, err.message))
    ws.once('close', (code) => finish(false, `the socket closed with ${code}`))
    ws.once('open', () => ws.send(JSON.stringify({ type: 'connection_init', payload: {} })))
    ws.on('message', (data) => {
      let m: Json
      try {
        m = JSON.parse(String(data)) as Json
      } catch {
        return finish(false, `an unparseable message: ${short(String(data))}`)
      }
      if (m.type === 'connection_ack')
        ws.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query } }))
      else if (m.type === 'next') {
        payloads.push(obj(m.payload))
        if (payloads.length === 1 && afterFirst)
          afterFirst().then(
            () => {
              ready = true
              if (payloads.some(match)) finish(true)
            },
            (err: unknown) => finish(false, err instanceof Error ? err.message : String(err)),
          )
        else if (ready && match(obj(m.payload))) finish(true)
      } else if (m.type === 'error' || m.type === 'complete')
        finish(false, `a ${String(m.type)} message: ${short(m)}`)
    })
  })
}

export const graphqlChecks: Check[] = [
  {
    id: 'graphql.agent-matches-rest',
    title:
      'GraphQL agent(id) answers the contract fields (snake_case) with the same values as GET /v1/agents/{id}',
    level: 'profile',
    clauses: ['S4.15', 'S4.13'],
    async run(ctx) {
      const url = declaredSurface(ctx)
      const id = await ctx.fx.agent()
      const rest = await ctx.http.get(`/v1/agents/${id}`)
      expectStatus(rest, 200, 'GET /v1/agents/{agent_id}')
      const res = await gql(
        ctx.http,
        url,
        'query($id: ID!) { agent(id: $id) { agent_id name behavior capabilities policy_envelope created_at } }',
        { id },
      )
      expectStatus(res, 200, 'POST /v1/graphql')
      assert(errorsOf(res).length === 0, `errors: ${short(errorsOf(res))}`)
      const agent = obj(obj(obj(res.body).data).agent)
      for (const key of ['agent_id', 'name', 'behavior', 'capabilities', 'policy_envelope', 'created_at']) {
        const want = JSON.stringify(obj(rest.body)[key])
        assert(JSON.stringify(agent[key]) === want, `agent.${key} is ${short(agent[key])}, REST says ${want}`)
      }
    },
  },
  {
    id: 'graphql.run-with-agent-and-trace',
    title: 'One GraphQL query returns a run with its agent, plan and first trace page',
    level: 'profile',
    clauses: ['S4.15', 'S4.4', 'S4.6'],
    async run(ctx) {
      const url = declaredSurface(ctx)
      const runId = await startedRunId(ctx)
      // A run just started may not have a frame yet: wait (bounded) for REST to show the first one, then ask for it.
      await waitUntil(
        'the run to record its first trace frame',
        () => ctx.fx.readTrace(runId, 5),
        (read) => read.frames.length >= 1,
        ctx.config.waitMs,
      )
      const res = await gql(
        ctx.http,
        url,
        `query($id: ID!) { run(id: $id) { run_id status plan { steps_total } awaiting { step_id }
          agent { agent_id } trace(limit: 5) { data { seq kind } next_cursor run_status } } }`,
        { id: runId },
      )
      expectStatus(res, 200, 'POST /v1/graphql')
      const run = obj(obj(obj(res.body).data).run)
      assert(run.run_id === runId, `run.run_id is ${short(run.run_id)}`)
      assert(typeof obj(run.plan).steps_total === 'number', `run.plan is ${short(run.plan)}`)
      assert(typeof obj(run.agent).agent_id === 'string', `run.agent is ${short(run.agent)}`)
      const trace = obj(run.trace)
      const frames = Array.isArray(trace.data) ? (trace.data as Json[]) : []
      assert(frames.length >= 1 && frames[0]?.seq === 1, `trace.data starts with ${short(frames[0])}`)
    },
  },
  {
    id: 'graphql.foreign-id-like-missing',
    title: "Another workspace's run reads as null plus the same not_found error as an id that does not exist",
    level: 'profile',
    clauses: ['S4.15', 'S5.6'],
    async run(ctx) {
      const url = declaredSurface(ctx)
      const runId = await startedRunId(ctx)
      const other = ctx.as('secondWorkspace')
      const q = 'query($id: ID!) { run(id: $id) { run_id status } }'
      const foreign = await gql(other, url, q, { id: runId })
      const missing = await gql(other, url, q, { id: `${runId.slice(0, -4)}zzzz` })
      expectStatus(foreign, 200, 'POST /v1/graphql (foreign id)')
      assert(
        obj(obj(foreign.body).data).run === null,
        `foreign run answered ${short(obj(foreign.body).data)}`,
      )
      assert(firstCode(foreign) === 'not_found', `foreign run error code ${short(firstCode(foreign))}`)
      assert(
        sameJson(comparable(foreign), comparable(missing)),
        `foreign ${short(comparable(foreign))} differs from missing ${short(comparable(missing))}`,
      )
    },
  },
  {
    id: 'graphql.policy-denied-extensions',
    title: 'A mutation outside the key scopes is a policy_denied error with the spec §7 detail in extensions',
    level: 'profile',
    clauses: ['S4.15', 'S7.2'],
    async run(ctx) {
      const url = declaredSurface(ctx)
      const res = await gql(
        ctx.as('narrowScope'),
        url,
        'mutation($name: String!) { createAgent(input: { name: $name, behavior: autonomous }) { agent_id } }',
        { name: ctx.name('gql-denied') },
      )
      expectStatus(res, 200, 'POST /v1/graphql')
      const ext = errorsOf(res)[0]?.extensions ?? {}
      assert(ext.code === 'policy_denied', `error code ${short(ext.code)}`)
      const detail = obj(ext.detail)
      for (const key of ['envelope', 'violation', 'observed', 'limit', 'escalation_queue']) {
        assert(key in detail, `extensions.detail lacks ${key}: ${short(detail)}`)
      }
      assert(obj(obj(res.body).data).createAgent === null, 'the refused mutation answered data')
    },
  },
  {
    id: 'graphql.mutation-idempotency',
    title: 'A mutation repeated with its Idempotency-Key is replayed; the key with another body is 409',
    level: 'profile',
    clauses: ['S4.15', 'S8.3', 'S8.4'],
    async run(ctx) {
      const url = declaredSurface(ctx)
      const key = ctx.name('gql-idem')
      const name = ctx.name('gql-agent')
      const q =
        'mutation($name: String!) { createAgent(input: { name: $name, behavior: hybrid }) { agent_id } }'
      const first = await gql(ctx.http, url, q, { name }, { 'Idempotency-Key': key })
      expectStatus(first, 200, 'POST /v1/graphql')
      const id = obj(obj(obj(first.body).data).createAgent).agent_id
      assert(typeof id === 'string', `createAgent answered ${short(first.body)}`)
      ctx.cleanup(`delete agent ${name}`, (http) => http.delete(`/v1/agents/${id}`))
      const again = await gql(ctx.http, url, q, { name }, { 'Idempotency-Key': key })
      const againId = obj(obj(obj(again.body).data).createAgent).agent_id
      assert(againId === id, `the repeat created ${short(againId)} instead of replaying ${id}`)
      const other = await gql(ctx.http, url, q, { name: `${name}-2` }, { 'Idempotency-Key': key })
      assert(other.status === 409, `the key with another body answered ${other.status}`)
    },
  },
  {
    id: 'graphql.page-limits',
    title:
      'GraphQL lists take REST limits: limit above 200 or below 1 is refused with invalid_request, not served',
    level: 'profile',
    clauses: ['S4.15', 'S8.1', 'S8.2'],
    async run(ctx) {
      const url = declaredSurface(ctx)
      const res = await gql(ctx.http, url, '{ agents(limit: 201) { data { agent_id } next_cursor } }')
      expectStatus(res, 200, 'POST /v1/graphql')
      assert(
        obj(obj(res.body).data).agents === null,
        `agents(limit: 201) answered ${short(obj(res.body).data)}`,
      )
      assert(firstCode(res) === 'invalid_request', `error code ${short(firstCode(res))}`)
      // GraphQL's spec (§7.1.2): every error's `message` is "a string description of the error intended for the
      // developer"; an empty one describes nothing.
      const message = errorsOf(res)[0]?.message
      assert(
        typeof message === 'string' && message.trim() !== '',
        `agents(limit: 201)'s error has the message ${short(message)}`,
      )
      const zero = await gql(ctx.http, url, '{ agents(limit: 0) { data { agent_id } next_cursor } }')
      expectStatus(zero, 200, 'POST /v1/graphql')
      assert(
        obj(obj(zero.body).data).agents === null && firstCode(zero) === 'invalid_request',
        `agents(limit: 0) answered ${short(zero.body)}, not invalid_request (REST refuses limit=0)`,
      )
      const ok = await gql(ctx.http, url, '{ agents(limit: 1) { data { agent_id } next_cursor } }')
      const page = obj(obj(obj(ok.body).data).agents)
      assert(Array.isArray(page.data) && page.data.length <= 1, `agents(limit: 1) answered ${short(page)}`)
    },
  },
  {
    id: 'graphql.cost-limit',
    title: 'A query that could return more than 10000 objects is refused before it runs, with a clear error',
    level: 'profile',
    clauses: ['S4.15'],
    async run(ctx) {
      const url = declaredSurface(ctx)
      const res = await gql(
        ctx.http,
        url,
        '{ agents(limit: 200) { data { runs(limit: 200) { data { run_id } } } } }',
      )
      expectStatus(res, 200, 'POST /v1/graphql')
      assert(!('data' in obj(res.body)), `the refused query answered data ${short(obj(res.body).data)}`)
      const ext = errorsOf(res)[0]?.extensions ?? {}
      assert(ext.code === 'invalid_request', `error code ${short(ext.code)}`)
      assert(obj(ext.detail).limit === 'cost', `extensions.detail ${short(ext.detail)}`)
    },
  },
  {
    id: 'graphql.subscription-run-events',
    title:
      "A graphql-ws subscription to runEvents(since: 0) replays the workspace's run events (a gap first past the replay window) and then delivers a run started once it has begun",
    level: 'profile',
    clauses: ['S4.15', 'S1.8', 'S3.5'],
    async run(ctx) {
      const url = declaredSurface(ctx)
      // A run first, so that since: 0 has at least one event to replay (or, past the replay window, a gap): its
      // first message shows the subscription has begun, and the run started after it cannot fall before its start.
      await startedRunId(ctx)
      let runId: string | undefined
      const sub = await subscribeUntil(
        ctx,
        url,
        'subscription { runEvents(since: 0) { type topic seq event } }',
        (p) => {
          const event = obj(obj(obj(p.data).runEvents).event)
          return event.event === 'run.started' && event.run_id === runId
        },
        ctx.config.waitMs,
        async () => {
          runId = await startedRunId(ctx)
        },
      )
      assert(sub.protocol === 'graphql-transport-ws', `the socket negotiated ${short(sub.protocol)}`)
      assert(
        sub.matched,
        `no run.started for ${runId} arrived${sub.problem ? ` (${sub.problem})` : ''}; payloads: ${short(sub.payloads.slice(-3))}`,
      )
      const first = obj(obj(sub.payloads[0]?.data).runEvents)
      assert(
        (first.type === 'event' || first.type === 'gap') && first.topic === 'runs',
        `the first message is ${short(first)}, not an event or a gap of the runs topic`,
      )
    },
  },
  {
    id: 'graphql.requires-auth',
    title: 'POST /v1/graphql with a bearer token the service never issued is 401 with the error envelope',
    level: 'profile',
    clauses: ['S4.15', 'S5.1'],
    async run(ctx) {
      const url = declaredSurface(ctx)
      const res = await ctx.http.post(url, { query: '{ agents { next_cursor } }' }, { token: UNKNOWN_TOKEN })
      expectStatus(res, 401, 'POST /v1/graphql with an unknown token')
      assert(obj(obj(res.body).error).code === 'unauthenticated', `body ${short(res.body)}`)
    },
  },
]

/**
 * The declared GraphQL URL, or a skip saying it was not declared (the surface is optional, §4): every GraphQL check
 * sends there (`planFor` reads a check's call of it as its need of a declared surface).
 */
export function declaredSurface(ctx: CheckContext): string {
  const url = ctx.config.graphqlUrl
  if (!url) notApplicable('not declared: the deployment names no GraphQL surface (graphqlUrl in --config)')
  return url
}

/** The declared query reading one `kind` by id (graphqlQueries in --config), its "{id}" variable filled in. */
function declaredQuery(ctx: CheckContext, kind: 'run' | 'agent', id: string): Json {
  const { query, variables } = ctx.config.graphqlQueries[kind]
  const fillId = (v: unknown): unknown =>
    v === '{id}'
      ? id
      : Array.isArray(v)
        ? v.map(fillId)
        : v !== null && typeof v === 'object'
          ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, fillId(x)]))
          : v
  return { query, variables: fillId(variables) }
}

/**
 * A resource of the primary workspace to read through GraphQL, and a marker only a reader who was shown it can
 * know: the agent's run-unique name (never sent in a by-id query) and the run's agent id (never sent in a query of
 * the run). Judging the marker, not the id, keeps a correct answer that echoes the requested id in its error
 * message from failing, and judging it anywhere in the body keeps the schema's shape the deployment's.
 */
interface Probe {
  kind: 'run' | 'agent'
  id: string
  marker: string
  what: string
}

async function probes(ctx: CheckContext): Promise<Probe[]> {
  const name = ctx.name('gql-marker')
  const res = await ctx.http.post('/v1/agents', { name, behavior: 'autonomous' })
  expectStatus(res, [200, 201], 'creating an agent (spec fields only) to read through GraphQL')
  const agentId = ownId(res.body, 'agent')
  if (!agentId) fail(`agent creation answered no identifier: ${short(res.body)}`)
  ctx.cleanup(`delete agent ${name}`, (http) => http.delete(`/v1/agents/${agentId}`))
  const { runId } = await ctx.fx.startRun(agentId)
  return [
    { kind: 'agent', id: agentId, marker: name, what: `agent ${agentId} (its name ${name})` },
    { kind: 'run', id: runId, marker: agentId, what: `run ${runId} (its agent id ${agentId})` },
  ]
}

/**
 * The probes the owner's own declared query is shown (the path is proven before any absence is judged), or a skip
 * saying why none is, naming the declaration to correct.
 */
async function shownToOwner(ctx: CheckContext, url: string): Promise<Probe[]> {
  const proven: Probe[] = []
  const problems: string[] = []
  for (const p of await probes(ctx)) {
    const own = await ctx.http.post(url, declaredQuery(ctx, p.kind, p.id))
    if (own.text.includes(p.marker)) proven.push(p)
    else
      problems.push(
        `the primary token's own ${p.kind} query answered ${own.status} without ${p.what}: ${short(own.body)}`,
      )
  }
  if (proven.length === 0)
    skip(
      `${problems.join('; ')}. So an absence would prove nothing: declare queries that read a run and an agent by id on this surface, selecting the run's agent id and the agent's name (graphqlQueries.run and graphqlQueries.agent in --config)`,
    )
  return proven
}

/**
 * Checks of the spec's own rules on a declared GraphQL surface (§4: "A GraphQL surface is mentioned; its shape is
 * not shown"). The surface's schema is the deployment's, so these send only `{ __typename }`, which every GraphQL
 * server answers; what they judge is the spec's: §5.1-5.2 (a bearer token on every API request, 401 without),
 * §8 (both rate-limit windows on every response, errors included). Skipped as "not declared" without a URL.
 */
export const graphqlSpecChecks: Check[] = [
  {
    id: 'graphql.spec-401-without-token',
    title:
      'The declared GraphQL surface answers 401 to a request without a bearer token or with an unknown one',
    level: 'core',
    clauses: ['S5.1', 'S5.2'],
    async run(ctx) {
      // §5 "Every API request carries Authorization: Bearer <API_KEY>" and "A missing or expired bearer token
      // yields HTTP 401": a GraphQL request is an API request.
      const url = declaredSurface(ctx)
      const own = await ctx.http.post(url, { query: '{ __typename }' })
      if (own.status !== 200)
        skip(
          `the primary token's { __typename } answered ${own.status}, so a 401 would prove nothing: ${short(own.body)}`,
        )
      for (const [what, token] of [
        ['no token', null],
        ['a token the service never issued', UNKNOWN_TOKEN],
      ] as const) {
        const res = await ctx.http.post(url, { query: '{ __typename }' }, { token })
        assert(
          res.status === 401,
          `{ __typename } with ${what} answered ${res.status}, not 401: ${short(res.body)}`,
        )
      }
    },
  },
  {
    id: 'graphql.spec-tenancy',
    title:
      "Another workspace's run and agent are never shown through the declared GraphQL surface (the owner's same query shows them)",
    level: 'core',
    clauses: ['S5.6'],
    async run(ctx) {
      // §5.6 "A resource that does not exist, or is out of scope for the calling identity, yields 404": out of
      // scope on every surface. GraphQL's shape is the deployment's (§4 "its shape is not shown"), so what is
      // judged is only that nothing of the resource reaches another workspace, in whatever form it answers.
      const url = declaredSurface(ctx)
      const other = ctx.as('secondWorkspace')
      const leaks: string[] = []
      for (const p of await shownToOwner(ctx, url)) {
        const res = await other.post(url, declaredQuery(ctx, p.kind, p.id))
        if (res.text.includes(p.marker))
          leaks.push(`the second workspace's ${p.kind} query was shown ${p.what}: ${short(res.body)}`)
      }
      assert(leaks.length === 0, leaks.join('; '))
    },
  },
  {
    id: 'graphql.spec-scopes',
    title:
      'A token refused a run or agent read over REST never gets it through the declared GraphQL surface either',
    level: 'core',
    clauses: ['S1.3', 'S5.1'],
    async run(ctx) {
      // §1 "Every call is scoped by an agent identity and is checked by a policy gate": a GraphQL request is a call,
      // so an identity the gate refuses a read (REST's 403 shows it) is refused the same read through GraphQL.
      const url = declaredSurface(ctx)
      const roles = (['narrowScope', 'otherScope'] as const).filter((r) => ctx.config.tokens[r])
      if (roles.length === 0) skip(`no ${tokenName('narrowScope')} or ${tokenName('otherScope')} given`)
      const shown = await shownToOwner(ctx, url)
      const judged: string[] = []
      const leaks: string[] = []
      for (const role of roles) {
        const client = ctx.as(role)
        for (const p of shown) {
          const rest = await client.get(`/v1/${p.kind}s/${p.id}`)
          if (rest.status !== 403) continue
          judged.push(`${TOKENS[role].what} on the ${p.kind}`)
          const res = await client.post(url, declaredQuery(ctx, p.kind, p.id))
          if (res.text.includes(p.marker))
            leaks.push(
              `the ${TOKENS[role].what}, refused GET /v1/${p.kind}s/{id} with 403, was shown ${p.what} by the ${p.kind} query: ${short(res.body)}`,
            )
        }
      }
      if (judged.length === 0)
        skip(
          `neither the ${roles.map((r) => TOKENS[r].what).join(' nor the ')} is refused a ${shown.map((p) => p.kind).join(' or ')} read over REST (403), so no token lacking a read scope is known: give one whose scopes exclude runs or agents (${settingName('other-scope-token')})`,
        )
      assert(leaks.length === 0, leaks.join('; '))
    },
  },
  {
    id: 'graphql.spec-request-rules',
    title:
      'The declared GraphQL surface keeps GraphQL’s own request rules: a document that does not parse or fails validation is not run (errors, each with a message, and no data), operationName picks the operation that runs, and two operations with none named are refused',
    level: 'core',
    clauses: ['S4.15'],
    async run(ctx) {
      // §4 "A GraphQL surface is mentioned": whatever its schema, the surface is GraphQL, whose specification
      // (October 2021) holds for every schema. §5-§6.1: a document that does not parse, or fails validation, "must
      // fail without execution", its errors listed; GetOperation runs the operation operationName names, and
      // without a name a document of several operations is a request error. §7.1.2: every error has a message, and
      // an error raised before execution leaves no data. Only __typename is selected, which every schema answers on
      // its root type. A refusal may also come as a 4xx in the spec's error envelope (§7), the deployment's choice.
      const url = declaredSurface(ctx)
      const own = await ctx.http.post(url, { query: '{ __typename }' })
      if (own.status !== 200 || typeof obj(obj(own.body).data).__typename !== 'string')
        skip(
          `the primary token's { __typename } answered ${own.status} ${short(own.body)}, not its root type's name, so nothing the surface refuses would tell anything`,
        )
      const problems: string[] = []
      const refused = (res: HttpResponse, what: string) => {
        const body = obj(res.body)
        // A request the client got wrong is no transient failure of the server (§7: 5xx "Transient failure").
        if (res.status >= 500) {
          problems.push(`${what} answered ${res.status}: ${short(res.body)}`)
          return
        }
        if (res.status >= 400 && typeof obj(body.error).code === 'string') return
        const errors = errorsOf(res)
        if (errors.length === 0)
          problems.push(`${what} answered ${res.status} without errors: ${short(res.body)}`)
        else if (!errors.every((e) => typeof e.message === 'string' && e.message !== ''))
          problems.push(`${what}: an error without a message in ${short(body.errors)}`)
        if (body.data !== undefined && body.data !== null)
          problems.push(`${what} was run: it answered data ${short(body.data)}`)
      }
      refused(await ctx.http.post(url, { query: '{ __typename' }), 'a document that does not parse')
      const field = `noSuchField${ctx.name('x').replace(/[^A-Za-z0-9]/g, '')}`
      refused(
        await ctx.http.post(url, { query: `{ __typename ${field} }` }),
        `a document selecting ${field}, a field no schema of this service has`,
      )
      const two = 'query First { first: __typename } query Second { second: __typename }'
      const picked = await ctx.http.post(url, { query: two, operationName: 'Second' })
      const data = obj(obj(picked.body).data)
      if (picked.status !== 200 || typeof data.second !== 'string' || 'first' in data)
        problems.push(
          `two operations with operationName Second answered ${picked.status} ${short(picked.body)}, not the data of Second alone`,
        )
      refused(await ctx.http.post(url, { query: two }), 'two operations with none named')
      assert(problems.length === 0, problems.join('; '))
    },
  },
  {
    id: 'graphql.spec-ratelimit-headers',
    title:
      'Every answer of the declared GraphQL surface, success and error alike, carries both rate-limit windows',
    level: 'core',
    clauses: ['S8.6'],
    async run(ctx) {
      // §8 "Burst and sustained headers are present on every response".
      const url = declaredSurface(ctx)
      for (const [what, query] of [
        ['a valid query', '{ __typename }'],
        ['a query that does not parse', '{'],
      ] as const) {
        const res = await ctx.http.post(url, { query })
        const windows = rateWindows(res.headers, ctx.config.rateLimitHeaders)
        assert(
          windows.length >= 2,
          `the answer to ${what} (${res.status}) announces ${windows.length} rate-limit window(s) (${windows.map((w) => w.name).join(', ') || 'none'}), not a burst and a sustained one`,
        )
      }
    },
  },
]
