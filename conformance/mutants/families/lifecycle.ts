/**
 * Mutants for the run lifecycle (inspection, controls, the trace), the sweep checks over all traffic, and webhook
 * delivery details (retries, signatures, Standard Webhooks headers, timestamps).
 */
import { randomUUID } from 'node:crypto'
import { signBody } from '../../src/signature.js'
import {
  editJson,
  editPageItems,
  type Json,
  type Mutant,
  type ProxiedRequest,
  pathOnly,
  query,
} from '../proxy.js'

const RUN = /^\/v1\/runs\/[^/]+$/
const TRACE = /^\/v1\/runs\/[^/]+\/trace$/
const TRACE_STREAM = /^\/v1\/runs\/[^/]+\/trace\/stream$/
const CONTROL = /^\/v1\/runs\/[^/]+\/(pause|resume|cancel)$/
const START = /^\/v1\/agents\/[^/]+\/runs$/

const isGet = (req: ProxiedRequest, re: RegExp) => req.method === 'GET' && re.test(pathOnly(req.path))

/** Remembers the secret of the webhook subscription the suite creates, for mutants that re-sign deliveries. */
export function secretKeeper() {
  let secret: string | undefined
  return {
    get: () => secret,
    request(req: ProxiedRequest): ProxiedRequest {
      if (req.method === 'POST' && pathOnly(req.path) === '/v1/webhooks') {
        try {
          secret = String((JSON.parse(req.body) as Json).secret)
        } catch {
          // not JSON: nothing to learn
        }
      }
      return req
    },
  }
}

function withBody(req: ProxiedRequest, body: Json): ProxiedRequest {
  return { ...req, body: JSON.stringify(body) }
}

export function lifecycleMutants(): Mutant[] {
  const retrySecret = secretKeeper()
  const envelopeSecret = secretKeeper()
  const msSecret = secretKeeper()
  const startedIds = new Set<string>()
  const cancelledSeen = new Map<string, number>()

  return [
    {
      id: 'inspect-trace-cursor-null-when-done',
      description: 'A finished run reports trace_cursor null instead of the cursor after its last frame',
      targets: ['runs.inspect-200-fields'],
      response(req, res) {
        if (!isGet(req, RUN)) return res
        return editJson(res, (b) =>
          ['succeeded', 'failed', 'cancelled'].includes(String(b.status))
            ? { ...b, trace_cursor: null }
            : undefined,
        )
      },
    },
    {
      id: 'plan-total-counts-gate',
      description: 'plan.steps_total counts the policy gate as a step (one too many)',
      targets: ['runs.plan-counts'],
      response(req, res) {
        if (!isGet(req, RUN)) return res
        return editJson(res, (b) => {
          const plan = b.plan as Json | undefined
          return plan && typeof plan.steps_total === 'number'
            ? { ...b, plan: { ...plan, steps_total: plan.steps_total + 1 } }
            : undefined
        })
      },
    },
    {
      id: 'awaiting-items-without-reason',
      description: 'Awaiting items of an inspected run omit reason (it is only written to the trace)',
      targets: ['runs.awaiting-approval'],
      response(req, res) {
        if (!isGet(req, RUN)) return res
        return editJson(res, (b) =>
          Array.isArray(b.awaiting)
            ? {
                ...b,
                awaiting: (b.awaiting as Json[]).map(({ reason: _r, ...item }) => item),
              }
            : undefined,
        )
      },
    },
    {
      id: 'invalid-state-without-allowed-actions',
      description: '409 invalid_state on run controls omits detail.allowed_actions',
      targets: ['runs.cancel-state'],
      response(req, res) {
        if (req.method !== 'POST' || !CONTROL.test(pathOnly(req.path)) || res.status !== 409) return res
        return editJson(res, (b) => {
          const error = b.error as Json
          const { allowed_actions: _a, ...detail } = (error?.detail ?? {}) as Json
          return { ...b, error: { ...error, detail } }
        })
      },
    },
    {
      id: 'pause-twice-answers-200',
      description: 'Pausing an already paused run answers 200 with the run instead of 409 invalid_state',
      targets: ['runs.pause-resume-states'],
      async response(req, res, ctx) {
        const m = /^(\/v1\/runs\/[^/]+)\/pause$/.exec(pathOnly(req.path))
        if (req.method !== 'POST' || !m || res.status !== 409) return res
        return ctx.upstream({ ...req, method: 'GET', path: m[1]!, body: '' })
      },
    },
    {
      id: 'start-ignores-unknown-enums',
      description: 'Unknown mode / trace_level values on run start fall back to the defaults instead of 400',
      targets: ['runs.start-body-validation'],
      request(req) {
        if (req.method !== 'POST' || !START.test(pathOnly(req.path))) return req
        let body: Json
        try {
          body = JSON.parse(req.body) as Json
        } catch {
          return req
        }
        const { mode, trace_level, ...rest } = body
        return withBody(req, {
          ...rest,
          ...(mode === 'live' || mode === 'dry_run' ? { mode } : {}),
          ...(trace_level === 'summary' || trace_level === 'detailed' ? { trace_level } : {}),
        })
      },
    },
    {
      id: 'trace-echoes-cursor-at-end',
      description: 'A trace page past the last frame echoes the cursor as next_cursor instead of null',
      targets: ['runs.trace-cursor-resumes'],
      response(req, res) {
        const cursor = query(req.path).get('cursor')
        if (!isGet(req, TRACE) || !cursor) return res
        return editJson(res, (b) =>
          Array.isArray(b.data) && b.data.length === 0 ? { ...b, next_cursor: cursor } : undefined,
        )
      },
    },
    {
      id: 'trace-ignores-limit',
      description: 'The trace ignores ?limit and always answers its default page size',
      targets: ['runs.trace-paging'],
      request(req) {
        if (!isGet(req, TRACE)) return req
        const q = query(req.path)
        q.delete('limit')
        const rest = q.toString()
        return { ...req, path: `${pathOnly(req.path)}${rest ? `?${rest}` : ''}` }
      },
    },
    {
      id: 'trace-omits-held-decisions',
      description:
        "The trace lists only the gate's allow decisions: a step held for approval has no frame of its decision",
      targets: ['runs.trace-lists-escalation'],
      response(req, res) {
        if (!isGet(req, TRACE)) return res
        return editPageItems(res, (frames) =>
          frames.filter((f) => typeof f.policy !== 'string' || f.policy === 'allow'),
        )
      },
    },
    {
      id: 'trace-omits-denials',
      description:
        "The trace leaves out the gate's refusals: a call refused for a missing scope has no frame",
      targets: ['authz.tool-required-scopes'],
      response(req, res) {
        if (!isGet(req, TRACE)) return res
        return editPageItems(res, (frames) => frames.filter((f) => f.policy !== 'deny'))
      },
    },
    {
      id: 'trace-seq-from-zero',
      description: 'Trace frames are numbered from 0 instead of 1',
      targets: ['runs.trace-sequence'],
      response(req, res) {
        if (!isGet(req, TRACE)) return res
        return editPageItems(res, (frames) =>
          frames.map((f) => (typeof f.seq === 'number' ? { ...f, seq: f.seq - 1 } : f)),
        )
      },
    },
    {
      id: 'sse-trace-without-end-event',
      description: 'The SSE trace closes after the last frame without event: end',
      targets: ['runs.trace-streaming'],
      response(req, res) {
        if (!isGet(req, TRACE_STREAM) || !(res.headers['content-type'] ?? '').startsWith('text/event-stream'))
          return res
        const blocks = res.body.split(/\n\n/)
        return { ...res, body: blocks.filter((b) => !/^event: ?end$/m.test(b)).join('\n\n') }
      },
    },
    {
      id: 'run-omits-null-task-id',
      description:
        'The run inspection serialiser drops null fields, so task_id is missing on runs without a task',
      targets: ['sweep.bodies-match-openapi'],
      run: ['runs.inspect-200-fields', 'sweep.bodies-match-openapi'],
      response(req, res) {
        if (!isGet(req, RUN)) return res
        return editJson(res, (b) => {
          if (b.task_id !== null) return undefined
          const { task_id: _t, ...rest } = b
          return rest
        })
      },
    },
    {
      id: 'errors-served-as-text-plain',
      description: 'Error answers carry a JSON envelope but say Content-Type: text/plain',
      targets: ['sweep.json-content-type'],
      run: ['resources.agent-lifecycle', 'sweep.json-content-type'],
      response(_req, res) {
        return res.status >= 400 && res.body !== ''
          ? { ...res, headers: { ...res.headers, 'content-type': 'text/plain; charset=utf-8' } }
          : res
      },
    },
    {
      id: 'deleted-agent-read-500',
      description: 'Reading a deleted agent dereferences its missing row: 404 becomes 500',
      targets: ['sweep.no-5xx'],
      run: ['resources.agent-lifecycle', 'sweep.no-5xx'],
      response(req, res) {
        if (!isGet(req, /^\/v1\/agents\/[^/]+$/) || res.status !== 404) return res
        return editJson({ ...res, status: 500 }, (b) => ({
          error: { ...(b.error as Json), code: 'internal_error', message: 'internal error' },
        }))
      },
    },
    {
      id: 'ratelimit-headers-x-prefixed',
      description:
        'Rate-limit headers use the legacy X-RateLimit-* names instead of RateLimit-Policy / RateLimit',
      targets: ['sweep.ratelimit-header-names'],
      run: ['tools.register-inspect-list', 'sweep.ratelimit-header-names'],
      response(_req, res) {
        const headers: Record<string, string> = {}
        for (const [k, v] of Object.entries(res.headers))
          headers[k === 'ratelimit' || k === 'ratelimit-policy' ? `x-${k}` : k] = v
        return { ...res, headers }
      },
    },
    {
      id: 'error-request-id-regenerated',
      description:
        'The error handler mints its own request id, so X-Request-Id differs from error.request_id',
      targets: ['sweep.request-id-header'],
      run: ['resources.agent-lifecycle', 'sweep.request-id-header'],
      response(_req, res) {
        return res.status >= 400
          ? { ...res, headers: { ...res.headers, 'x-request-id': `req_${randomUUID()}` } }
          : res
      },
    },
    {
      id: 'retry-mints-new-event-id',
      description: 'A retried delivery is rebuilt with a new event id (and signed afresh)',
      targets: ['webhooks.retried-after-failure', 'sweep.one-event-per-change'],
      run: ['webhooks.subscribe', 'webhooks.retried-after-failure', 'sweep.one-event-per-change'],
      request: (req) => retrySecret.request(req),
      delivery(req) {
        const secret = retrySecret.get()
        const body = JSON.parse(req.body) as Json
        if (!secret || body.event !== 'run.started' || typeof body.id !== 'string') return req
        // Per receiver path: other subscriptions (left by earlier runs) get the same event under the same id.
        const key = `${req.path} ${body.id}`
        if (!startedIds.has(key)) {
          startedIds.add(key)
          return req
        }
        const next = { ...body, id: `${body.id}_retry` }
        return withBody(req, { ...next, signature: signBody(secret, next, Math.floor(Date.now() / 1000)) })
      },
    },
    {
      id: 'signature-covers-envelope-only',
      description: 'The signature covers only event, id, run_id and ts, not the whole delivery body',
      targets: ['webhooks.signature-binds-body-and-secret'],
      run: ['webhooks.subscribe', 'webhooks.signature-binds-body-and-secret'],
      request: (req) => envelopeSecret.request(req),
      delivery(req) {
        const secret = envelopeSecret.get()
        if (!secret) return req
        const body = JSON.parse(req.body) as Json
        const t = /t=(\d+)/.exec(String(body.signature))?.[1] ?? String(Math.floor(Date.now() / 1000))
        const { event, id, run_id, ts } = body
        return withBody(req, { ...body, signature: signBody(secret, { event, id, run_id, ts }, Number(t)) })
      },
    },
    {
      id: 'standard-signature-hex',
      description: 'webhook-signature carries the HMAC in hex instead of base64',
      targets: ['webhooks.standard-webhooks-headers'],
      run: ['webhooks.subscribe', 'webhooks.standard-webhooks-headers'],
      delivery(req) {
        const sig = req.headers['webhook-signature']
        if (!sig) return req
        const hex = sig
          .split(' ')
          .map((s) => (s.startsWith('v1,') ? `v1,${Buffer.from(s.slice(3), 'base64').toString('hex')}` : s))
          .join(' ')
        return { ...req, headers: { ...req.headers, 'webhook-signature': hex } }
      },
    },
    {
      id: 'signature-timestamp-ms',
      description: 'The signature timestamp is Unix milliseconds (Date.now()) instead of seconds',
      targets: ['webhooks.timestamp-fresh'],
      run: ['webhooks.subscribe', 'webhooks.timestamp-fresh'],
      request: (req) => msSecret.request(req),
      delivery(req) {
        const secret = msSecret.get()
        if (!secret) return req
        const body = JSON.parse(req.body) as Json
        const t = Number(/t=(\d+)/.exec(String(body.signature))?.[1] ?? Math.floor(Date.now() / 1000))
        return withBody(req, { ...body, signature: signBody(secret, body, t * 1000) })
      },
    },
    {
      id: 'late-answer-recorded-after-cancel',
      description:
        'A call that answers after its run was cancelled is still recorded: a moment after the cancel, the cancelled run counts one more step completed',
      targets: ['runs.cancel-state'],
      response(req, res) {
        if (!isGet(req, RUN)) return res
        return editJson(res, (b) => {
          const plan = b.plan as Json | undefined
          if (b.status !== 'cancelled' || !plan || Number(plan.steps_pending) <= 0) return undefined
          const id = String(b.run_id)
          const first = cancelledSeen.get(id)
          if (first === undefined) cancelledSeen.set(id, Date.now())
          if (first === undefined || Date.now() - first < 300) return undefined
          return {
            ...b,
            plan: {
              ...plan,
              steps_completed: Number(plan.steps_completed) + 1,
              steps_pending: Number(plan.steps_pending) - 1,
            },
          }
        })
      },
    },
  ]
}
