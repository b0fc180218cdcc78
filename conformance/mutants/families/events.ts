/**
 * Event bugs: a state change whose event never reaches the subscriber (a failed run that is not announced, spec
 * §6 run.failed; a deployment that only ever sends the spec's five kinds although its contract lists more), and
 * retries on a fixed interval instead of spec §6's exponential backoff, and one state change emitted as two events.
 */
import {
  editPageItems,
  HOOK_PREFIX,
  header,
  type Json,
  type Mutant,
  type ProxiedRequest,
  type ProxiedResponse,
  parseJson,
  pathOnly,
} from '../proxy.js'
import { COPY, deliverCopy, subscriptions } from './tenancy.js'

const SPEC_KINDS = new Set([
  'run.started',
  'run.awaiting_approval',
  'run.succeeded',
  'run.failed',
  'policy.denied',
])

function kindOf(req: ProxiedRequest): string | undefined {
  try {
    const body = JSON.parse(req.body) as Json
    const kind = body.event ?? body.type
    return typeof kind === 'string' ? kind : undefined
  } catch {
    return undefined
  }
}

/** Answers the deployment as a receiver would, without delivering: the event is lost. */
const swallowed: ProxiedResponse = {
  status: 200,
  headers: { 'content-type': 'application/json' },
  body: '{}',
}

/** The fixed interval of the constant-retry mutant, ms. */
const INTERVAL_MS = 700

export function eventMutants(): Mutant[] {
  /** Each delivery's attempts as they passed the proxy, by webhook-id (the log's delivery_id). */
  const attemptsAt = new Map<string, number[]>()
  const subs = subscriptions()
  return [
    {
      id: 'each-event-sent-twice',
      description:
        'Every event is emitted twice: the same change delivered again as another event, under a new id (signed afresh)',
      targets: ['sweep.one-event-per-change'],
      run: ['webhooks.subscribe', 'webhooks.run-failed-delivered', 'sweep.one-event-per-change'],
      request: (req) => subs.learn(req),
      // The second event arrives before the first goes on, each to the subscription's own url through the proxy.
      async delivery(req) {
        if (header(req, COPY)) return req
        const body = parseJson(req.body)
        const path = pathOnly(req.path).slice(HOOK_PREFIX.length)
        const owner = subs.all.find((s) => s.url.endsWith(path))
        if (!body || !owner || typeof body.id !== 'string' || typeof body.event !== 'string') return req
        await deliverCopy(owner, { ...body, id: `${body.id}_again` })
        return req
      },
    },
    {
      id: 'retries-at-fixed-interval',
      description:
        'Failed deliveries are rescheduled 700 ms after each attempt, the same wait every time: no backoff',
      targets: ['webhooks.retry-gaps-grow'],
      // The delivery log is where the schedule shows: its next_attempt_at becomes "700 ms after the attempt" the log
      // counts. Not after the latest attempt: under full jitter the next one may have passed the proxy before the log
      // is read, and a wait counted from it would grow with the deployment's real backoff.
      delivery(req) {
        const id = req.headers['webhook-id']
        if (id) attemptsAt.set(id, [...(attemptsAt.get(id) ?? []), Date.now()])
        return req
      },
      response(req, res) {
        if (req.method !== 'GET' || !/^\/v1\/webhooks\/[^/]+\/deliveries$/.test(pathOnly(req.path)))
          return res
        return editPageItems(res, (deliveries) =>
          deliveries.map((d) => {
            const at =
              typeof d.attempts === 'number'
                ? attemptsAt.get(String(d.delivery_id))?.[d.attempts - 1]
                : undefined
            return d.next_attempt_at && at !== undefined
              ? { ...d, next_attempt_at: new Date(at + INTERVAL_MS).toISOString() }
              : d
          }),
        )
      },
    },
    {
      id: 'run-failed-never-emitted',
      description: 'A run that fails emits no run.failed event: subscribers never hear of it',
      targets: ['webhooks.run-failed-delivered', 'webhooks.every-event-kind'],
      run: ['webhooks.subscribe', 'webhooks.run-failed-delivered', 'webhooks.every-event-kind'],
      delivery: (req) => (kindOf(req) === 'run.failed' ? swallowed : req),
    },
    {
      id: 'only-spec-event-kinds',
      description:
        'Only the five kinds of spec §6 are ever sent; agent, task, tool and ingest events are lost',
      targets: ['webhooks.every-event-kind'],
      run: ['webhooks.every-event-kind'],
      delivery(req) {
        const kind = kindOf(req)
        return kind !== undefined && !SPEC_KINDS.has(kind) ? swallowed : req
      },
    },
  ]
}
