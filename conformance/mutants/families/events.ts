/**
 * Event bugs: a state change whose event never reaches the subscriber. A failed run that is not announced (spec
 * §6 run.failed), and a deployment that only ever sends the spec's five kinds although its contract lists more.
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

export function eventMutants(): Mutant[] {
  return [
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
