/**
 * Mutants for spec statements that core checks used to test too loosely (issue: a deployment built from the
 * spec alone passed core while breaking them): cancel that is not terminal, run controls across workspaces,
 * subscriptions that ignore `events`, deliveries that are never retried or signed under another secret, ingest
 * that accepts records without an RFC 3339 ts or an id.
 */
import { isRfc3339 } from '../../src/checks/assertions.js'
import { signBody } from '../../src/signature.js'
import { editJson, header, type Json, type Mutant, type ProxiedRequest, pathOnly } from '../proxy.js'
import { secretKeeper } from './lifecycle.js'

const RUN = /^\/v1\/runs\/([^/]+)$/
const TRACE = /^\/v1\/runs\/[^/]+\/trace$/
const AGENT = /^\/v1\/agents\/([^/]+)$/
const AGENT_WRITE = /^\/v1\/agents\/([^/]+)\/(runs|tasks)$/
const RESUME = /^\/v1\/runs\/([^/]+)\/resume$/
const FOREIGN_CONTROL = /^\/v1\/runs\/[^/]+\/(pause|resume|cancel|steps\/[^/]+\/approval)$/
const INGEST = /\/v1\/grid\/connectors\/[^/]+\/ingest$/

function parse(body: string): Json | undefined {
  try {
    const v = JSON.parse(body) as unknown
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : undefined
  } catch {
    return undefined
  }
}

const withBody = (req: ProxiedRequest, body: Json): ProxiedRequest => ({ ...req, body: JSON.stringify(body) })

export function statementMutants(): Mutant[] {
  const wrongSecret = secretKeeper()
  const revived = new Set<string>()
  const delivered = new Set<string>()
  const attempts = new Map<string, number>()
  const deletedAgents = new Set<string>()
  let generated = 0

  return [
    {
      id: 'cancel-reports-paused',
      description: 'Cancel behaves like pause: a cancelled run reads back as paused',
      targets: ['runs.cancel-flushes-approvals'],
      response(req, res) {
        if (req.method !== 'GET' || !RUN.test(pathOnly(req.path))) return res
        return editJson(res, (b) => (b.status === 'cancelled' ? { ...b, status: 'paused' } : undefined))
      },
    },
    {
      id: 'resume-revives-cancelled-run',
      description: 'Resume brings a cancelled run back to running',
      targets: ['runs.cancel-flushes-approvals'],
      response(req, res) {
        const resumed = RESUME.exec(pathOnly(req.path))?.[1]
        if (req.method === 'POST' && resumed) revived.add(resumed)
        const read = RUN.exec(pathOnly(req.path))?.[1]
        if (req.method !== 'GET' || !read || !revived.has(read)) return res
        return editJson(res, (b) => (b.status === 'cancelled' ? { ...b, status: 'running' } : undefined))
      },
    },
    {
      id: 'cross-workspace-run-controls',
      description:
        'Run controls and approvals ignore the workspace: another workspace can pause, cancel, approve',
      targets: ['scoping.cross-workspace-controls-404'],
      request(req, ctx) {
        const second = ctx.tokens.secondWorkspace
        if (req.method !== 'POST' || !second || !FOREIGN_CONTROL.test(pathOnly(req.path))) return req
        if (header(req, 'authorization') !== `Bearer ${second}`) return req
        return { ...req, headers: { ...req.headers, authorization: `Bearer ${ctx.tokens.primary}` } }
      },
    },
    {
      id: 'subscription-ignores-events',
      description: 'A subscription receives every event kind, whatever its events list says',
      targets: ['webhooks.only-subscribed-kinds'],
      request(req) {
        if (req.method !== 'POST' || pathOnly(req.path) !== '/v1/webhooks') return req
        const body = parse(req.body)
        if (!body) return req
        return withBody(req, {
          ...body,
          events: ['run.started', 'run.awaiting_approval', 'run.succeeded', 'run.failed', 'policy.denied'],
        })
      },
    },
    {
      id: 'deliveries-never-retried',
      description: 'A failed delivery is dropped: the deployment never sends it again',
      targets: ['webhooks.failed-delivery-retried'],
      run: ['webhooks.subscribe', 'webhooks.failed-delivery-retried'],
      delivery(req) {
        const body = parse(req.body)
        const key = `${req.path} ${String(body?.event)} ${String(body?.run_id)} ${String(body?.id)}`
        if (!delivered.has(key)) {
          delivered.add(key)
          return req
        }
        // A retry: answered here and never delivered, as if the deployment had not sent it.
        return { status: 200, headers: { 'content-type': 'application/json' }, body: '{}' }
      },
    },
    {
      id: 'deliveries-retried-once',
      description: 'A failed delivery is retried once and then dropped, however that retry went',
      targets: ['webhooks.retried-until-accepted'],
      run: ['webhooks.subscribe', 'webhooks.retried-until-accepted'],
      delivery(req) {
        const body = parse(req.body)
        const key = `${req.path} ${String(body?.event)} ${String(body?.run_id)} ${String(body?.id)}`
        const n = (attempts.get(key) ?? 0) + 1
        attempts.set(key, n)
        if (n <= 2) return req
        return { status: 200, headers: { 'content-type': 'application/json' }, body: '{}' }
      },
    },
    {
      id: 'signature-under-another-secret',
      description:
        'Deliveries are signed (the reference way) under a server-wide key, not the subscription’s secret',
      targets: ['webhooks.signature-hmac'],
      run: ['webhooks.subscribe', 'webhooks.signature-hmac'],
      request: (req) => wrongSecret.request(req),
      delivery(req) {
        const secret = wrongSecret.get()
        const body = parse(req.body)
        if (!secret || !body) return req
        const t = Number(/t=(\d+)/.exec(String(body.signature))?.[1] ?? Math.floor(Date.now() / 1000))
        return withBody(req, { ...body, signature: signBody('server-wide-signing-key', body, t) })
      },
    },
    {
      id: 'ingest-repairs-bad-records',
      description:
        'Ingest counts records with an unparseable ts (stamped now) or without id (one is made up)',
      targets: ['ingest.invalid-records-rejected'],
      request(req) {
        if (req.method !== 'POST' || !INGEST.test(pathOnly(req.path))) return req
        const body = parse(req.body)
        if (!body || !Array.isArray(body.records)) return req
        const records = (body.records as unknown[]).map((r) => {
          if (!r || typeof r !== 'object') return r
          const rec = { ...(r as Json) }
          if (typeof rec.ts === 'string' && !isRfc3339(rec.ts)) rec.ts = new Date().toISOString()
          if (rec.id === undefined) rec.id = `generated-${++generated}`
          return rec
        })
        return withBody(req, { ...body, records })
      },
    },
    {
      id: 'plan-pending-never-falls',
      description:
        'A run’s plan counts every step pending for good, completed ones too (steps_pending stays steps_total)',
      targets: ['sweep.run-readings-consistent'],
      run: ['runs.inspect-200-fields', 'sweep.run-readings-consistent'],
      response(req, res) {
        if (req.method !== 'GET' || !RUN.test(pathOnly(req.path))) return res
        return editJson(res, (b) => {
          const plan = b.plan as Json | undefined
          if (!plan || typeof plan.steps_total !== 'number') return undefined
          return { ...b, plan: { ...plan, steps_pending: plan.steps_total } }
        })
      },
    },
    {
      id: 'deleted-agent-takes-writes',
      description: 'An agent once deleted still takes runs and tasks (201 with a made-up id)',
      targets: ['resources.agent-lifecycle'],
      response(req, res) {
        const path = pathOnly(req.path)
        const agent = AGENT.exec(path)?.[1]
        if (req.method === 'DELETE' && agent && res.status < 300) deletedAgents.add(agent)
        const write = AGENT_WRITE.exec(path)
        if (req.method !== 'POST' || !write || !deletedAgents.has(write[1]!)) return res
        const id =
          write[2] === 'runs'
            ? { run_id: `run_after_${++generated}` }
            : { task_id: `task_after_${++generated}` }
        return {
          status: 201,
          headers: { ...res.headers, 'content-type': 'application/json' },
          body: JSON.stringify({ ...id, agent_id: write[1], status: 'queued' }),
        }
      },
    },
    {
      id: 'accepted-agent-deletion-never-lands',
      description: 'DELETE /v1/agents/{id} answers 202 and never deletes the agent',
      targets: ['resources.agent-lifecycle'],
      run: ['resources.agent-lifecycle'],
      request(req) {
        if (req.method !== 'DELETE' || !AGENT.test(pathOnly(req.path))) return req
        return { status: 202, headers: { 'content-type': 'application/json' }, body: '{"accepted":true}' }
      },
    },
    {
      id: 'large-batch-miscounted',
      description: 'A batch of more than ten records answers one record fewer than it took',
      targets: ['sweep.ingest-answers-count-the-batch'],
      run: ['ingest.', 'sweep.ingest-answers-count-the-batch'],
      response(req, res) {
        if (req.method !== 'POST' || !INGEST.test(pathOnly(req.path)) || res.status !== 202) return res
        const records = parse(req.body)?.records
        if (!Array.isArray(records) || records.length <= 10) return res
        return editJson(res, (b) =>
          typeof b.accepted === 'number' ? { ...b, accepted: b.accepted - 1 } : undefined,
        )
      },
    },
    {
      id: 'failed-run-trace-reversed',
      description: 'The trace of a run whose step failed lists its frames newest first',
      targets: ['sweep.trace-listings-in-order'],
      run: ['runs.trace-levels-and-outcomes', 'sweep.trace-listings-in-order'],
      response(req, res) {
        if (req.method !== 'GET' || !TRACE.test(pathOnly(req.path))) return res
        return editJson(res, (b) => {
          const frames = b.data
          if (!Array.isArray(frames) || !frames.some((f) => (f as Json).kind === 'step.failed'))
            return undefined
          return { ...b, data: [...frames].reverse() }
        })
      },
    },
    {
      id: 'started-before-created',
      description: 'A run’s started_at reads an hour before the created_at its start answered',
      targets: ['sweep.run-readings-consistent'],
      run: ['runs.inspect-200-fields', 'sweep.run-readings-consistent'],
      response(req, res) {
        if (req.method !== 'GET' || !RUN.test(pathOnly(req.path))) return res
        return editJson(res, (b) => {
          const at = Date.parse(String(b.started_at))
          if (Number.isNaN(at)) return undefined
          return { ...b, started_at: new Date(at - 3_600_000).toISOString() }
        })
      },
    },
  ]
}
