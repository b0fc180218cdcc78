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

const isGraphql = (req: ProxiedRequest) => pathOnly(req.path) === '/v1/graphql'
const queryOf = (req: ProxiedRequest): string => String(parseJson(req.body)?.query ?? '')
type GqlError = { extensions?: Json }

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
  ]
}
