/**
 * Read-back bugs: a surface that shows a written field with another value (a stale list projection, a dropped
 * capability, a create answer echoing defaults, an agent's envelope), a task read that loses a field it was given, an
 * assign answer from before the task's run, or an event that carries a resource's fields with other values than its
 * reads.
 */
import { editJson, editPageItems, type Mutant, type ProxiedRequest, parseJson, pathOnly } from '../proxy.js'

const is = (req: ProxiedRequest, method: string, re: RegExp) =>
  req.method === method && re.test(pathOnly(req.path))

export function readbackMutants(): Mutant[] {
  return [
    {
      id: 'tool-list-projection-stale',
      description: 'List items of GET /v1/tools show idempotent as true whatever was registered',
      targets: ['readback.tool-fields-everywhere'],
      response(req, res) {
        if (!is(req, 'GET', /^\/v1\/tools$/)) return res
        return editPageItems(res, (tools) => tools.map((t) => ({ ...t, idempotent: true })))
      },
    },
    {
      id: 'tool-create-echoes-defaults',
      description: 'The registration answer shows the default policy binding, not the one registered',
      targets: ['readback.tool-fields-everywhere'],
      response(req, res) {
        if (!is(req, 'POST', /^\/v1\/tools$/)) return res
        return editJson(res, (b) => ({ ...b, policy_binding: { envelope: 'default', required_scopes: [] } }))
      },
    },
    {
      id: 'agent-read-drops-capability',
      description: 'GET /v1/agents/{id} loses the last capability',
      targets: ['readback.agent-fields-everywhere'],
      response(req, res) {
        if (!is(req, 'GET', /^\/v1\/agents\/[^/]+$/)) return res
        return editJson(res, (b) =>
          Array.isArray(b.capabilities) && b.capabilities.length > 1
            ? { ...b, capabilities: b.capabilities.slice(0, -1) }
            : undefined,
        )
      },
    },
    {
      id: 'agent-envelope-default',
      description: 'The agent’s create answer and read show the default policy envelope, not the one written',
      targets: ['readback.agent-envelope'],
      response(req, res) {
        if (!is(req, 'POST', /^\/v1\/agents$/) && !is(req, 'GET', /^\/v1\/agents\/[^/]+$/)) return res
        return editJson(res, (b) =>
          typeof b.policy_envelope === 'string' ? { ...b, policy_envelope: 'default' } : undefined,
        )
      },
    },
    {
      id: 'task-assign-answer-before-run',
      description: 'The task’s assign answer is the task before its run started: no run_id',
      targets: ['readback.task-run-in-assign-answer'],
      response(req, res) {
        if (!is(req, 'POST', /^\/v1\/agents\/[^/]+\/tasks$/)) return res
        return editJson(res, (b) => ({ ...b, run_id: null }))
      },
    },
    {
      id: 'task-read-drops-data-source',
      description: 'GET /v1/tasks/{id} leaves data_source out',
      targets: ['readback.task-fields-everywhere'],
      response(req, res) {
        if (!is(req, 'GET', /^\/v1\/tasks\/[^/]+$/)) return res
        return editJson(res, ({ data_source: _dropped, ...rest }) => rest)
      },
    },
    {
      id: 'awaiting-event-default-queue',
      description:
        'run.awaiting_approval deliveries name a default queue, not the one the run’s pending approval waits in',
      targets: ['readback.awaiting-approval-event'],
      delivery(req) {
        const body = parseJson(req.body)
        if (body?.event !== 'run.awaiting_approval' || typeof body.queue !== 'string') return req
        return { ...req, body: JSON.stringify({ ...body, queue: `${body.queue}-default` }) }
      },
    },
    {
      id: 'terminal-event-stale-snapshot',
      description:
        'run.succeeded deliveries carry the run as it was before its last step: status running, no outcome',
      targets: ['readback.run-events-match-the-run'],
      delivery(req) {
        const body = parseJson(req.body)
        if (body?.event !== 'run.succeeded') return req
        return { ...req, body: JSON.stringify({ ...body, status: 'running', outcome: null }) }
      },
    },
  ]
}
