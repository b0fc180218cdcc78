/**
 * One or more mutants per check family. Each simulates a plausible server bug; its `targets` are the checks that
 * must catch it. `run` names the check families to execute (the targets, plus checks that generate the traffic a
 * sweep check judges).
 */
import { createHmac } from 'node:crypto'
import { accessMutants } from './families/access.js'
import { coverageMutants } from './families/coverage.js'
import { eventMutants } from './families/events.js'
import { extensionMutants } from './families/extensions.js'
import { graphqlMutants } from './families/graphql.js'
import { ingestionMutants } from './families/ingestion.js'
import { lifecycleMutants } from './families/lifecycle.js'
import { limitMutants } from './families/limits.js'
import { pagingMutants } from './families/paging.js'
import { readbackMutants } from './families/readback.js'
import { runPlanMutants } from './families/runplans.js'
import { statementMutants } from './families/statements.js'
import { surfaceMutants } from './families/surface.js'
import { tenancyMutants } from './families/tenancy.js'
import { webhookOperationMutants } from './families/webhookops.js'
import {
  editJson,
  header,
  type Json,
  type Mutant,
  type ProxiedRequest,
  type ProxiedResponse,
  pathOnly,
  query,
} from './proxy.js'

const isJsonArray = (v: unknown): v is Json[] => Array.isArray(v)

export function createMutants(): Mutant[] {
  const idempotencyCache = new Map<string, ProxiedResponse>()
  const retired = new Set<string>()
  let secret: string | undefined

  return [
    {
      id: 'idempotency-ignores-body',
      description: 'Replays the first answer for a reused Idempotency-Key whatever the body',
      targets: ['idempotency.different-body-409'],
      request(req) {
        const key = header(req, 'idempotency-key')
        if (req.method !== 'POST' || !key) return req
        const cached = idempotencyCache.get(`${header(req, 'authorization')} ${key}`)
        return cached ?? req
      },
      response(req, res) {
        const key = header(req, 'idempotency-key')
        if (req.method === 'POST' && key && res.status < 500)
          idempotencyCache.set(`${header(req, 'authorization')} ${key}`, res)
        return res
      },
    },
    {
      id: 'idempotency-global-keys',
      description: 'Idempotency keys shared across workspaces: another workspace gets the stored answer',
      targets: ['idempotency.keys-scoped-per-workspace'],
      request(req) {
        const key = header(req, 'idempotency-key')
        if (req.method !== 'POST' || !key) return req
        return idempotencyCache.get(`global ${key}`) ?? req
      },
      response(req, res) {
        const key = header(req, 'idempotency-key')
        if (req.method === 'POST' && key && res.status < 500) idempotencyCache.set(`global ${key}`, res)
        return res
      },
    },
    {
      id: 'cross-workspace-leak',
      description: 'Reads by id ignore the workspace: another workspace sees the resource',
      targets: [
        'scoping.agent-404',
        'scoping.run-404',
        'scoping.tool-404',
        'scoping.task-404',
        'scoping.trace-404',
      ],
      run: ['scoping'],
      async response(req, res, ctx) {
        const second = ctx.tokens.secondWorkspace
        if (
          req.method !== 'GET' ||
          res.status !== 404 ||
          !second ||
          header(req, 'authorization') !== `Bearer ${second}`
        )
          return res
        const asOwner = await ctx.upstream({
          ...req,
          headers: { ...req.headers, authorization: `Bearer ${ctx.tokens.primary}` },
        })
        return asOwner.status === 200 ? asOwner : res
      },
    },
    {
      id: 'missing-token-accepted',
      description: 'Requests without Authorization act as the primary identity',
      targets: ['auth.missing-token-401'],
      request(req, ctx) {
        return header(req, 'authorization')
          ? req
          : { ...req, headers: { ...req.headers, authorization: `Bearer ${ctx.tokens.primary}` } }
      },
    },
    {
      id: 'expired-token-accepted',
      description: 'Expiry is not checked',
      targets: ['auth.expired-token-401'],
      request(req, ctx) {
        const expired = ctx.tokens.expired
        if (!expired || header(req, 'authorization') !== `Bearer ${expired}`) return req
        return { ...req, headers: { ...req.headers, authorization: `Bearer ${ctx.tokens.primary}` } }
      },
    },
    {
      id: 'policy-denied-without-detail',
      description: '403 policy_denied without the detail fields',
      targets: ['authz.policy-denied-403'],
      response(_req, res) {
        if (res.status !== 403) return res
        return editJson(res, (b) => ({ error: { ...(b.error as Json), detail: {} } }))
      },
    },
    {
      id: 'missing-ratelimit-header',
      description: 'Rate-limit headers missing from answers to GET /v1/tools/{id}',
      targets: ['sweep.ratelimit-headers-everywhere'],
      run: ['tools.register-inspect-list', 'sweep.ratelimit-headers-everywhere'],
      response(req, res) {
        if (!/^\/v1\/tools\/[^/]+$/.test(pathOnly(req.path))) return res
        const headers = Object.fromEntries(
          Object.entries(res.headers).filter(([k]) => !/rate-?limit/i.test(k)),
        )
        return { ...res, headers }
      },
    },
    {
      id: 'rate-limit-429-plain-text',
      description: '429 with a plain-text body instead of the envelope',
      targets: ['ratelimit.429-at-limit'],
      run: ['ratelimit.429-at-limit'],
      response(_req, res) {
        return res.status === 429
          ? { ...res, headers: { ...res.headers, 'content-type': 'text/plain' }, body: 'Too Many Requests' }
          : res
      },
    },
    {
      id: 'rate-limit-never',
      description: 'The limit is never enforced (429 becomes 200)',
      targets: ['ratelimit.429-at-limit'],
      run: ['ratelimit.429-at-limit'],
      async response(req, res, ctx) {
        if (res.status !== 429) return res
        return ctx.upstream({
          ...req,
          headers: { ...req.headers, authorization: `Bearer ${ctx.tokens.primary}` },
        })
      },
    },
    {
      id: 'limit-off-by-one',
      description: 'List pages hold one item more than limit',
      targets: ['pagination.limit-max-200', 'pagination.walk-every-item-once'],
      run: ['pagination.limit-max-200', 'pagination.walk-every-item-once'],
      response(req, res) {
        if (req.method !== 'GET' || pathOnly(req.path) !== '/v1/tools') return res
        const limit = Number(query(req.path).get('limit') ?? 50)
        return editJson(res, (b) => {
          if (!isJsonArray(b.data) || b.data.length < limit || b.data.length === 0) return undefined
          const extra = { ...b.data.at(-1)!, tool_id: `${String(b.data.at(-1)!.tool_id)}x` }
          return { ...b, data: [...b.data, extra] }
        })
      },
    },
    {
      id: 'pages-skip-an-item',
      description: 'Every page after the first drops its first item',
      targets: ['pagination.walk-every-item-once'],
      run: ['pagination.walk-every-item-once'],
      response(req, res) {
        if (req.method !== 'GET' || pathOnly(req.path) !== '/v1/tools' || !query(req.path).get('cursor'))
          return res
        return editJson(res, (b) => (isJsonArray(b.data) ? { ...b, data: b.data.slice(1) } : undefined))
      },
    },
    {
      id: 'pages-repeat-an-item',
      description: 'Every page after the first repeats the last item of the page before',
      targets: ['pagination.walk-every-item-once'],
      run: ['pagination.walk-every-item-once'],
      response: (() => {
        let previousLast: Json | undefined
        return (req: ProxiedRequest, res: ProxiedResponse) => {
          if (req.method !== 'GET' || pathOnly(req.path) !== '/v1/tools') return res
          return editJson(res, (b) => {
            if (!isJsonArray(b.data)) return undefined
            const data =
              query(req.path).get('cursor') && previousLast ? [previousLast, ...b.data.slice(1)] : b.data
            previousLast = b.data.at(-1)
            return { ...b, data }
          })
        }
      })(),
    },
    {
      id: 'bad-input-500',
      description: 'Malformed or invalid bodies crash the handler (400 becomes 500)',
      targets: ['validation.malformed-json-400', 'validation.fuzz-never-5xx'],
      run: ['validation.malformed-json-400', 'validation.fuzz-never-5xx'],
      response(req, res) {
        if (req.method !== 'POST' || res.status !== 400) return res
        return editJson({ ...res, status: 500 }, (b) => ({
          error: { ...(b.error as Json), code: 'internal_error' },
        }))
      },
    },
    {
      id: 'error-envelope-flat',
      description: '404 answers use a flat {message} body instead of the envelope',
      targets: ['sweep.error-envelope-everywhere'],
      run: ['resources.agent-lifecycle', 'sweep.error-envelope-everywhere'],
      response(_req, res) {
        return res.status === 404 ? editJson(res, () => ({ message: 'not found' })) : res
      },
    },
    {
      id: 'timestamps-epoch',
      description: 'Agents render created_at as epoch milliseconds',
      targets: ['sweep.rfc3339-timestamps'],
      run: ['resources.agent-lifecycle', 'sweep.rfc3339-timestamps'],
      response(req, res) {
        if (!pathOnly(req.path).startsWith('/v1/agents')) return res
        return editJson(res, (b) =>
          typeof b.created_at === 'string' ? { ...b, created_at: Date.parse(b.created_at) } : undefined,
        )
      },
    },
    {
      id: 'run-start-not-queued',
      description: 'The start answer reports status running and a trace_url without /v1',
      targets: ['runs.start-201-fields'],
      response(req, res) {
        if (req.method !== 'POST' || !/^\/v1\/agents\/[^/]+\/runs$/.test(pathOnly(req.path))) return res
        return editJson(res, (b) => ({
          ...b,
          status: 'running',
          trace_url: `/runs/${String(b.run_id)}/trace`,
        }))
      },
    },
    {
      id: 'cancel-leaves-approvals',
      description: 'Cancel does not flush pending approvals',
      targets: ['runs.cancel-flushes-approvals'],
      response(req, res) {
        if (req.method !== 'GET' || !/^\/v1\/runs\/[^/]+$/.test(pathOnly(req.path))) return res
        return editJson(res, (b) =>
          b.status === 'cancelled'
            ? { ...b, awaiting: [{ step_id: 'step_1', queue: 'ops-review', reason: 'left behind' }] }
            : undefined,
        )
      },
    },
    {
      id: 'pause-ignored',
      description: 'Pause answers but the run keeps executing steps',
      targets: ['runs.pause-suspends'],
      async request(req, ctx) {
        if (req.method !== 'POST' || !/^\/v1\/runs\/[^/]+\/pause$/.test(pathOnly(req.path))) return req
        const run = await ctx.upstream({
          ...req,
          method: 'GET',
          path: req.path.replace(/\/pause$/, ''),
          body: '',
        })
        return { ...run, status: 200 }
      },
    },
    {
      id: 'trace-out-of-order',
      description: 'Trace pages list frames newest first',
      targets: ['runs.trace-frames'],
      response(req, res) {
        if (req.method !== 'GET' || !/^\/v1\/runs\/[^/]+\/trace$/.test(pathOnly(req.path))) return res
        return editJson(res, (b) => (isJsonArray(b.data) ? { ...b, data: [...b.data].reverse() } : undefined))
      },
    },
    {
      // The frames of a fast run often share a millisecond; this one makes them all share it, so only the
      // deployment's own numbering can show the reversal (it once survived a run of `npm test` that way).
      id: 'trace-out-of-order-same-ms',
      description: 'Trace pages list frames newest first, every frame stamped with the same millisecond',
      targets: ['runs.trace-frames'],
      response(req, res) {
        if (req.method !== 'GET' || !/^\/v1\/runs\/[^/]+\/trace$/.test(pathOnly(req.path))) return res
        return editJson(res, (b) => {
          if (!isJsonArray(b.data)) return undefined
          const first = b.data[0] as Record<string, unknown> | undefined
          const ts = first?.ts
          return { ...b, data: [...b.data].reverse().map((f) => ({ ...(f as object), ts })) }
        })
      },
    },
    {
      id: 'retire-rewrites-history',
      description: 'Retiring a tool erases its id from historical traces',
      targets: ['tools.retire-keeps-traces'],
      response(req, res) {
        const path = pathOnly(req.path)
        const m = /^\/v1\/tools\/([^/]+)$/.exec(path)
        if (req.method === 'DELETE' && m && res.status < 300) retired.add(m[1]!)
        if (req.method !== 'GET' || !/\/trace$/.test(path)) return res
        let body = res.body
        for (const id of retired) body = body.split(id).join('tool_forgotten')
        return { ...res, body }
      },
    },
    {
      id: 'ingest-answers-200',
      description:
        'A batch ingest answers 200 where the spec says 202 (the deployment a user found the CLI hanging on)',
      targets: ['ingest.batch-202-counts'],
      run: ['ingest', 'stream'],
      response(req, res) {
        if (req.method !== 'POST' || !/\/ingest$/.test(pathOnly(req.path)) || res.status !== 202) return res
        return { ...res, status: 200 }
      },
    },
    {
      id: 'ingest-miscounts',
      description: 'The batch answer counts one record too many as accepted',
      targets: ['ingest.batch-202-counts'],
      response(req, res) {
        if (req.method !== 'POST' || !/\/ingest$/.test(pathOnly(req.path))) return res
        return editJson(res, (b) =>
          typeof b.accepted === 'number' ? { ...b, accepted: b.accepted + 1 } : undefined,
        )
      },
    },
    {
      id: 'signature-wrong-string',
      description: 'Deliveries signed over the raw JSON without "<t>." and without canonicalisation',
      targets: ['webhooks.signature-verifies'],
      run: ['webhooks.subscribe', 'webhooks.delivery-arrives', 'webhooks.signature-verifies'],
      request(req) {
        if (req.method === 'POST' && pathOnly(req.path) === '/v1/webhooks') {
          try {
            secret = String((JSON.parse(req.body) as Json).secret)
          } catch {
            // not JSON: nothing to learn
          }
        }
        return req
      },
      delivery(req) {
        if (!secret) return req
        const body = JSON.parse(req.body) as Json
        const t = /t=(\d+)/.exec(String(body.signature))?.[1] ?? '0'
        const { signature: _old, ...rest } = body
        const hex = createHmac('sha256', secret)
          .update(`${t}${JSON.stringify(rest)}`)
          .digest('hex')
        return { ...req, body: JSON.stringify({ ...body, signature: `t=${t},v1=${hex}` }) }
      },
    },
    {
      id: 'signature-malformed',
      description: 'The signature field uses another form (sha256=<hex>)',
      targets: ['webhooks.signature-form'],
      run: ['webhooks.subscribe', 'webhooks.signature-form'],
      delivery(req) {
        const body = JSON.parse(req.body) as Json
        const hex = /v1=([0-9a-f]+)/.exec(String(body.signature))?.[1] ?? ''
        return { ...req, body: JSON.stringify({ ...body, signature: `sha256=${hex}` }) }
      },
    },
    {
      id: 'awaiting-delivery-incomplete',
      description: 'run.awaiting_approval deliveries lack queue and payload_preview',
      targets: ['webhooks.awaiting-approval-body'],
      run: ['webhooks.subscribe', 'webhooks.awaiting-approval-body'],
      delivery(req) {
        const body = JSON.parse(req.body) as Json
        if (body.event !== 'run.awaiting_approval') return req
        const { queue: _q, payload_preview: _p, ...rest } = body
        return { ...req, body: JSON.stringify(rest) }
      },
    },
    {
      id: 'awaiting-delivery-extra-fields',
      description:
        'run.awaiting_approval deliveries carry the event’s whole data (task_id beside spec §6’s fields), not the body the reference keeps to',
      targets: ['webhooks.awaiting-approval-body-exact'],
      run: ['webhooks.subscribe', 'webhooks.awaiting-approval-body'],
      delivery(req) {
        const body = JSON.parse(req.body) as Json
        if (body.event !== 'run.awaiting_approval') return req
        return { ...req, body: JSON.stringify({ ...body, task_id: null }) }
      },
    },
    {
      id: 'stream-open-without-token',
      description: 'The stream upgrade is accepted without a bearer token (it acts as the primary identity)',
      targets: ['stream.requires-token'],
      upgrade(headers, ctx) {
        return headers.authorization ? headers : { ...headers, authorization: `Bearer ${ctx.tokens.primary}` }
      },
    },
    {
      id: 'stream-refuses-valid-tokens',
      description: 'The stream upgrade refuses every token',
      targets: ['stream.accepts-token'],
      upgrade(headers) {
        return { ...headers, authorization: 'Bearer revoked' }
      },
    },
    {
      id: 'stream-topic-scope-ignored',
      description: 'Topic scopes are not checked: a narrow token subscribes to any topic of its workspace',
      targets: ['stream.topic-scope-enforced', 'stream.topic-scope-refused'],
      upgrade(headers, ctx) {
        const narrow = ctx.tokens.narrowScope
        return narrow && headers.authorization === `Bearer ${narrow}`
          ? { ...headers, authorization: `Bearer ${ctx.tokens.primary}` }
          : headers
      },
    },
    {
      id: 'stream-records-without-lineage',
      description: 'Records on the stream arrive without their lineage',
      targets: ['stream.records-with-lineage'],
      streamMessage(m) {
        if (m.type !== 'record' || typeof m.record !== 'object' || m.record === null) return m
        const { lineage: _dropped, ...record } = m.record as Json
        return { ...m, record }
      },
    },
    {
      id: 'agent-delete-noop',
      description: 'Deleting an agent answers 204 but the agent stays',
      targets: ['resources.agent-lifecycle'],
      request(req) {
        return req.method === 'DELETE' && /^\/v1\/agents\/[^/]+$/.test(pathOnly(req.path))
          ? { status: 204, headers: {}, body: '' }
          : req
      },
    },
    {
      id: 'task-priority-dropped',
      description: 'A task reads back with the default priority instead of the one assigned',
      targets: ['resources.task-assign-read'],
      response(req, res) {
        if (req.method !== 'GET' || !/^\/v1\/tasks\/[^/]+$/.test(pathOnly(req.path))) return res
        return editJson(res, (b) => ({ ...b, priority: 3 }))
      },
    },
    {
      id: 'webhook-create-without-id',
      description: 'Creating a subscription answers its url and events but no identifier',
      targets: ['webhooks.subscribe'],
      response(req, res) {
        if (req.method !== 'POST' || pathOnly(req.path) !== '/v1/webhooks') return res
        return editJson(res, (b) => ({ url: b.url, events: b.events }))
      },
    },
    {
      id: 'deliveries-unsigned',
      description: 'Deliveries leave out the signature field of the body',
      targets: ['webhooks.delivery-arrives'],
      run: ['webhooks.subscribe', 'webhooks.delivery-arrives'],
      delivery(req) {
        try {
          const { signature: _dropped, ...body } = JSON.parse(req.body) as Json
          return { ...req, body: JSON.stringify(body) }
        } catch {
          return req
        }
      },
    },
    {
      id: 'deliveries-put',
      description: 'Deliveries are sent with PUT instead of POST (§4: a POST to the subscriber’s url)',
      targets: ['webhooks.delivery-arrives'],
      run: ['webhooks.subscribe', 'webhooks.delivery-arrives'],
      delivery(req) {
        return { ...req, method: 'PUT' }
      },
    },
    {
      id: 'tool-inspect-by-name-only',
      description: 'GET /v1/tools/{tool_id} looks tools up by name, so their ids answer 404',
      targets: ['tools.register-inspect-list'],
      response(req, res) {
        if (req.method !== 'GET' || !/^\/v1\/tools\/[^/]+$/.test(pathOnly(req.path))) return res
        return editJson({ ...res, status: 404 }, (b) => ({
          error: {
            code: 'not_found',
            message: 'tool not found',
            detail: {},
            request_id: b.request_id ?? 'req',
          },
        }))
      },
    },
    ...accessMutants(),
    ...pagingMutants(),
    ...lifecycleMutants(),
    ...runPlanMutants(),
    ...statementMutants(),
    ...graphqlMutants(),
    ...tenancyMutants(),
    ...limitMutants(),
    ...readbackMutants(),
    ...surfaceMutants(),
    ...coverageMutants(),
    ...eventMutants(),
    ...extensionMutants(),
    ...webhookOperationMutants(),
    ...ingestionMutants(),
  ]
}
