/**
 * Event bugs: a state change whose event never reaches the subscriber (a failed run that is not announced, spec
 * §6 run.failed; a deployment that only ever sends the spec's five kinds although its contract lists more), and
 * retries on a fixed interval instead of spec §6's exponential backoff.
 */
import type { Json, Mutant, ProxiedRequest, ProxiedResponse } from '../proxy.js'

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
  const retrying = new Set<string>()
  return [
    {
      id: 'retries-at-fixed-interval',
      description: 'A failed delivery is retried every 700 ms, the same wait each time: no backoff',
      targets: ['webhooks.retry-gaps-grow'],
      // The deployment's first attempt is forwarded; on a failure the mutant takes the delivery over (the
      // deployment is told it arrived) and sends it again itself at a fixed interval until the receiver takes it.
      async delivery(req, forward) {
        const res = await forward(req)
        if (res.status < 500) return res
        const key = `${req.path} ${req.body}`
        if (retrying.has(key)) return res
        retrying.add(key)
        void (async () => {
          for (let attempt = 0; attempt < 10; attempt++) {
            await new Promise((resolve) => setTimeout(resolve, INTERVAL_MS))
            const again = await forward(req).catch(() => undefined)
            if (again && again.status < 500) break
          }
        })()
        return swallowed
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
