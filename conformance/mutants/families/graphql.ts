/**
 * Mutants of the GraphQL surface: each simulates one plausible bug of a GraphQL layer bolted onto a REST service
 * (its own field names, a tenancy leak, lost error detail, ignored idempotency, unbounded lists and queries,
 * no auth on the new path).
 */
import {
  editJson,
  header,
  type Json,
  type Mutant,
  type ProxiedRequest,
  parseJson,
  pathOnly,
} from '../proxy.js'
import { PAST_ANY_HEAD } from './tenancy.js'

const isGraphql = (req: ProxiedRequest) => pathOnly(req.path) === '/v1/graphql'
const queryOf = (req: ProxiedRequest): string => String(parseJson(req.body)?.query ?? '')
type GqlError = { extensions?: Json }
/** The message of an answer's first GraphQL error, '' without one. */
const firstErrorMessage = (body: Json | undefined): string =>
  String(((body?.errors ?? []) as { message?: unknown }[])[0]?.message ?? '')
/** The body first sent under each Idempotency-Key (graphql-queries-keyed). */
const keyedQueries = new Map<string, string>()

export function graphqlMutants(): Mutant[] {
  return [
    {
      id: 'graphql-subscriptions-silent',
      description: 'GraphQL subscriptions accept the subscribe and never deliver anything',
      targets: ['graphql.subscription-run-events'],
      streamMessage(message) {
        return message.type === 'next' ? { type: 'ping' } : message
      },
    },
    {
      id: 'graphql-camel-case-fields',
      description: 'The GraphQL layer answers camelCase field names instead of the contract’s snake_case',
      targets: ['graphql.agent-matches-rest'],
      response(req, res) {
        if (!isGraphql(req)) return res
        const camel = (v: unknown): unknown =>
          Array.isArray(v)
            ? v.map(camel)
            : v && typeof v === 'object'
              ? Object.fromEntries(
                  Object.entries(v).map(([k, x]) => [
                    k.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase()),
                    camel(x),
                  ]),
                )
              : v
        return editJson(res, (b) => ({ ...b, data: camel(b.data) }))
      },
    },
    {
      id: 'graphql-relations-unresolved',
      description: 'Relations are not resolved: run.agent and run.trace come back null',
      targets: ['graphql.run-with-agent-and-trace'],
      response(req, res) {
        if (!isGraphql(req)) return res
        return editJson(res, (b) => {
          const run = (b.data as Json | null | undefined)?.run as Json | null | undefined
          if (!run) return undefined
          return { ...b, data: { ...(b.data as Json), run: { ...run, agent: null, trace: null } } }
        })
      },
    },
    {
      id: 'graphql-cross-workspace-leak',
      description: 'GraphQL reads by id ignore the workspace: another workspace gets the run',
      targets: ['graphql.foreign-id-like-missing'],
      async response(req, res, ctx) {
        const second = ctx.tokens.secondWorkspace
        if (!isGraphql(req) || !second || header(req, 'authorization') !== `Bearer ${second}`) return res
        const errors = (parseJson(res.body)?.errors ?? []) as GqlError[]
        if (errors[0]?.extensions?.code !== 'not_found') return res
        const leaked = await ctx.upstream({
          ...req,
          headers: { ...req.headers, authorization: `Bearer ${ctx.tokens.primary}` },
        })
        return parseJson(leaked.body)?.errors ? res : leaked
      },
    },
    {
      id: 'graphql-error-detail-dropped',
      description: 'GraphQL errors keep only a message and code: the policy_denied detail is lost',
      targets: ['graphql.policy-denied-extensions'],
      response(req, res) {
        if (!isGraphql(req)) return res
        return editJson(res, (b) => {
          if (!Array.isArray(b.errors)) return undefined
          const errors = (b.errors as GqlError[]).map((e) => ({
            ...e,
            extensions: { code: e.extensions?.code },
          }))
          return { ...b, errors }
        })
      },
    },
    {
      id: 'graphql-ignores-idempotency-key',
      description: 'The GraphQL route is outside the idempotency middleware: every repeat executes again',
      targets: ['graphql.mutation-idempotency'],
      request(req) {
        if (!isGraphql(req) || req.method !== 'POST' || !header(req, 'idempotency-key')) return req
        const { 'idempotency-key': _dropped, ...headers } = req.headers
        return { ...req, headers }
      },
    },
    {
      id: 'graphql-limit-unchecked',
      description: 'GraphQL lists serve any limit instead of refusing more than 200',
      targets: ['graphql.page-limits'],
      async request(req, ctx) {
        if (!isGraphql(req) || !/limit:\s*201/.test(queryOf(req))) return req
        const body = parseJson(req.body) ?? {}
        const capped = { ...body, query: queryOf(req).replace(/limit:\s*201/g, 'limit: 200') }
        return ctx.upstream({ ...req, body: JSON.stringify(capped) })
      },
    },
    {
      id: 'graphql-no-cost-limit',
      description: 'No cost limit: a query over 200 agents × 200 runs is executed',
      targets: ['graphql.cost-limit'],
      request(req) {
        if (!isGraphql(req) || !/runs\(limit:\s*200\)/.test(queryOf(req))) return req
        return {
          status: 200,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ data: { agents: { data: [] } } }),
        }
      },
    },
    {
      id: 'graphql-token-not-verified',
      description: 'The GraphQL path only checks that a bearer token is present, not that it was issued',
      targets: ['graphql.requires-auth'],
      request(req, ctx) {
        const known = [
          ctx.tokens.primary,
          ctx.tokens.secondWorkspace,
          ctx.tokens.narrowScope,
          ctx.tokens.expired,
        ]
        const auth = header(req, 'authorization') ?? ''
        if (!isGraphql(req) || !auth.startsWith('Bearer ') || known.includes(auth.slice(7))) return req
        return {
          status: 200,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ data: { agents: { next_cursor: null } } }),
        }
      },
    },
    {
      id: 'graphql-anonymous-allowed',
      description: 'GraphQL requests without a bearer token run as the primary identity',
      targets: ['graphql.spec-401-without-token'],
      run: ['graphql.spec-'],
      request(req, ctx) {
        if (!isGraphql(req) || header(req, 'authorization')) return req
        return { ...req, headers: { ...req.headers, authorization: `Bearer ${ctx.tokens.primary}` } }
      },
    },
    {
      id: 'graphql-foreign-run-shown',
      description:
        "GraphQL's run(id) skips the workspace check: another workspace's caller is answered as the run's owner",
      targets: ['graphql.spec-tenancy'],
      run: ['graphql.spec-'],
      request(req, ctx) {
        const second = ctx.tokens.secondWorkspace
        if (!isGraphql(req) || !second || header(req, 'authorization') !== `Bearer ${second}`) return req
        if (!/\brun\s*\(/.test(queryOf(req))) return req
        return { ...req, headers: { ...req.headers, authorization: `Bearer ${ctx.tokens.primary}` } }
      },
    },
    {
      id: 'graphql-scopes-ignored',
      description:
        'GraphQL resolvers skip the scope gate: a token refused a run or agent read over REST reads it through GraphQL',
      targets: ['graphql.spec-scopes'],
      run: ['graphql.spec-'],
      request(req, ctx) {
        const narrow = [ctx.tokens.narrowScope, ctx.tokens.otherScope].filter((t) => t !== undefined)
        const auth = header(req, 'authorization') ?? ''
        if (!isGraphql(req) || !narrow.some((t) => auth === `Bearer ${t}`)) return req
        return { ...req, headers: { ...req.headers, authorization: `Bearer ${ctx.tokens.primary}` } }
      },
    },
    {
      id: 'graphql-errors-without-ratelimit',
      description: 'GraphQL answers with errors lose the rate-limit headers (a separate error path)',
      targets: ['graphql.spec-ratelimit-headers'],
      run: ['graphql.spec-'],
      response(req, res) {
        if (!isGraphql(req) || !res.body.includes('"errors"')) return res
        const headers = Object.fromEntries(
          Object.entries(res.headers).filter(([k]) => !/rate-?limit/i.test(k)),
        )
        return { ...res, headers }
      },
    },
    {
      id: 'graphql-schema-scopes-undocumented',
      description: "The schema's root fields carry no description: nothing says which scope each needs",
      targets: ['graphql.schema-documents-scopes'],
      response(req, res) {
        if (!isGraphql(req) || !/__schema/.test(queryOf(req))) return res
        return { ...res, body: res.body.replace(/"description":"[^"]*"/g, '"description":null') }
      },
    },
    {
      id: 'graphql-queries-keyed',
      description:
        'Every POST to /v1/graphql under an Idempotency-Key is keyed, queries too: another query under a used key is 409',
      targets: ['graphql.idempotency-keys-mutations-only'],
      async request(req, ctx) {
        if (!isGraphql(req) || req.method !== 'POST' || !header(req, 'idempotency-key')) return req
        const body = parseJson(req.body) ?? {}
        if (!/^\s*(query\b|\{)/.test(String(body.query ?? '')) || body.operationName === 'M') return req
        // Keyed: the query is sent as a keyed mutation-shaped request would be, its body's fingerprint stored.
        const seen = keyedQueries.get(header(req, 'idempotency-key') ?? '')
        if (seen !== undefined && seen !== req.body)
          return {
            status: 409,
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({
              error: { code: 'idempotency_key_reused', message: 'reused', detail: {} },
            }),
          }
        keyedQueries.set(header(req, 'idempotency-key') ?? '', req.body)
        return ctx.upstream(req)
      },
    },
    {
      id: 'graphql-relation-scopes-ignored',
      description:
        "Relation fields skip their own scope: a token that may read an agent or a task reads the agent's runs and the task's run",
      targets: ['graphql.field-scopes'],
      request(req, ctx) {
        const narrow = [ctx.tokens.narrowScope, ctx.tokens.otherScope].filter((t) => t !== undefined)
        const auth = header(req, 'authorization') ?? ''
        if (!isGraphql(req) || !narrow.some((t) => auth === `Bearer ${t}`)) return req
        if (!/withRuns|task\(id: \$t\)/.test(queryOf(req))) return req
        return { ...req, headers: { ...req.headers, authorization: `Bearer ${ctx.tokens.primary}` } }
      },
    },
    {
      id: 'graphql-introspection-flat-cost',
      description:
        'Introspection lists are costed one object each: a flood of aliased __schema fields is refused at another cost',
      targets: ['graphql.introspection-cost'],
      response(req, res) {
        if (!isGraphql(req) || !/p0: __(schema|type)/.test(queryOf(req))) return res
        return editJson(res, (b) => {
          const errors = (Array.isArray(b.errors) ? b.errors : []) as GqlError[]
          const detail = errors[0]?.extensions?.detail as Json | undefined
          if (typeof detail?.observed !== 'number') return undefined
          const first = {
            ...errors[0],
            extensions: { ...errors[0]?.extensions, detail: { ...detail, observed: detail.observed - 1 } },
          }
          return { ...b, errors: [first, ...errors.slice(1)] }
        })
      },
    },
    {
      id: 'graphql-get-variables-ignored',
      description:
        'GraphQL over GET drops its variables parameter unread: malformed variables are never refused',
      targets: ['graphql.http-request-forms'],
      request(req) {
        if (!isGraphql(req) || req.method !== 'GET') return req
        const url = new URL(req.path, 'http://proxy.invalid')
        url.searchParams.delete('variables')
        return { ...req, path: `${url.pathname}${url.search}` }
      },
    },
    {
      id: 'graphql-depth-unlimited',
      description: 'No depth limit: a query nested 17 levels deep is executed',
      targets: ['graphql.document-limits'],
      response(req, res) {
        if (!isGraphql(req)) return res
        return editJson(res, (b) => {
          const errors = (Array.isArray(b.errors) ? b.errors : []) as GqlError[]
          const detail = errors[0]?.extensions?.detail as Json | undefined
          return detail?.limit === 'depth' ? { data: { agent: null } } : undefined
        })
      },
    },
    {
      id: 'graphql-task-agent-unresolved',
      description: "A task's agent relation is never resolved: task.agent comes back null",
      targets: ['graphql.tools-and-tasks'],
      response(req, res) {
        if (!isGraphql(req) || !/\btask\(id/.test(queryOf(req))) return res
        return editJson(res, (b) => {
          const task = (b.data as Json | null | undefined)?.task as Json | null | undefined
          return task ? { ...b, data: { task: { ...task, agent: null } } } : undefined
        })
      },
    },
    {
      id: 'graphql-update-destination-not-saved',
      description: 'updateDestination answers the destination as it was, the update never applied',
      targets: ['graphql.webhooks-and-destinations'],
      request(req, ctx) {
        if (!isGraphql(req) || !/updateDestination/.test(queryOf(req))) return req
        const variables = (parseJson(req.body)?.variables ?? {}) as Json
        return ctx.upstream({
          ...req,
          body: JSON.stringify({
            query: 'query($id: ID!) { updateDestination: destination(id: $id) { name } }',
            variables: { id: variables.id },
          }),
        })
      },
    },
    {
      id: 'graphql-cancel-run-ignored',
      description: 'cancelRun answers the run without cancelling it',
      targets: ['graphql.run-mutations'],
      request(req, ctx) {
        if (!isGraphql(req) || !/cancelRun/.test(queryOf(req))) return req
        const variables = (parseJson(req.body)?.variables ?? {}) as Json
        return ctx.upstream({
          ...req,
          body: JSON.stringify({
            query: 'query($id: ID!) { cancelRun: run(id: $id) { run_id status } }',
            variables: { id: variables.id },
          }),
        })
      },
    },
    {
      id: 'graphql-ws-init-token-ignored',
      description:
        "graphql-ws ignores the connection_init payload's authorization: only the upgrade's token counts",
      targets: ['graphql.ws-authentication'],
      clientMessage(message) {
        return message.type === 'connection_init' ? { ...message, payload: {} } : message
      },
    },
    {
      id: 'graphql-ws-operations-not-rate-limited',
      description:
        "Operations over graphql-ws never count against the workspace's rate limit: past it, each is still answered",
      targets: ['graphql.ws-rate-limited'],
      streamMessage(message) {
        // The deployment answers the operation the rate limit refused, as one that never counted it would.
        const first = (Array.isArray(message.payload) ? message.payload[0] : undefined) as
          | GqlError
          | undefined
        if (message.type !== 'error' || first?.extensions?.code !== 'rate_limited') return message
        return { id: message.id, type: 'next', payload: { data: { __typename: 'Query' } } }
      },
    },
    {
      id: 'graphql-ws-complete-keeps-room',
      description:
        "A completed graphql-ws subscription keeps its room among the key's topics: the key fills up for good",
      targets: ['graphql.ws-key-quotas'],
      clientMessage(message) {
        // The deployment never hears the complete, as one that forgets to give the room back behaves.
        return message.type === 'complete' ? { type: 'ping' } : message
      },
    },
    {
      id: 'graphql-ws-since-past-head-live',
      description:
        "connectorRecords with a since beyond the connector's newest record starts live: it gets the next records, whose seqs are not after it",
      targets: ['graphql.ws-resume-points-apart'],
      clientMessage(message) {
        const payload = message.payload as Json | undefined
        const variables = payload?.variables as Json | undefined
        if (message.type !== 'subscribe' || typeof variables?.since !== 'number') return message
        if (variables.since < PAST_ANY_HEAD) return message
        return { ...message, payload: { ...payload, variables: { ...variables, since: null } } }
      },
    },
    {
      id: 'graphql-ws-replays-without-since',
      description: 'runEvents without since replays the topic from its start instead of starting at its head',
      targets: ['graphql.ws-subscriptions'],
      clientMessage(message) {
        const payload = message.payload as Json | undefined
        if (message.type !== 'subscribe' || typeof payload?.query !== 'string') return message
        return {
          ...message,
          payload: { ...payload, query: payload.query.replace(/runEvents \{/, 'runEvents(since: 0) {') },
        }
      },
    },
    {
      id: 'graphql-runs-invalid-documents',
      description:
        'Documents are run without being validated: a field the schema lacks is left out, as bare execution does, instead of refusing the document',
      targets: ['graphql.spec-request-rules'],
      async response(req, res, ctx) {
        if (!isGraphql(req) || req.method !== 'POST') return res
        const answer = parseJson(res.body)
        const unknownField = /^Cannot query field "(\w+)"/.exec(firstErrorMessage(answer))?.[1]
        if (!unknownField || answer?.data !== undefined) return res
        const body = parseJson(req.body) ?? {}
        const query = queryOf(req).replace(new RegExp(`\\b${unknownField}\\b`, 'g'), '')
        return ctx.upstream({ ...req, body: JSON.stringify({ ...body, query }) })
      },
    },
    {
      id: 'graphql-syntax-errors-answered-empty',
      description:
        'A document that does not parse is answered as an empty success, {"data": {}}, its error lost',
      targets: ['graphql.spec-request-rules'],
      response(req, res) {
        if (!isGraphql(req)) return res
        return editJson(res, (b) => (/^Syntax Error/.test(firstErrorMessage(b)) ? { data: {} } : undefined))
      },
    },
    {
      id: 'graphql-operation-name-ignored',
      description:
        'operationName is not read: a document of several operations is refused however one is named',
      targets: ['graphql.spec-request-rules'],
      request(req) {
        if (!isGraphql(req) || req.method !== 'POST') return req
        const body = parseJson(req.body)
        if (!body || !('operationName' in body)) return req
        const { operationName: _dropped, ...rest } = body
        return { ...req, body: JSON.stringify(rest) }
      },
    },
    {
      id: 'graphql-records-cursor-ignored',
      description: 'records(connector_id) ignores its cursor: every page is the first',
      targets: ['graphql.records-and-schema'],
      request(req) {
        if (!isGraphql(req) || !/records\(/.test(queryOf(req))) return req
        const body = parseJson(req.body) ?? {}
        const { k: _k, ...variables } = (body.variables ?? {}) as Json
        return { ...req, body: JSON.stringify({ ...body, variables }) }
      },
    },
  ]
}
